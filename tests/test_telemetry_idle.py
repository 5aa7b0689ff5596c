"""GPU telemetry sees the host, not the server (real files: AIPerf and GenAI-Perf 25.07 exports
of gpt-oss-20b served on one A100 of an 8-GPU node, the seven others idle throughout): the
idle GPUs are not counted, nor their energy and power, and the user's `--gpu-count` is the
server's."""

from __future__ import annotations

import json

import pytest

from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.genai_perf.telemetry import telemetry
from fleetplan.warehouse.importers.registry import parse
from tests.support.paths import ROOT

FORMATS = ROOT / "tests" / "fixtures" / "formats"


def _gpu(busy: bool, energy_mj: tuple[float, float], watts: float) -> dict:
    return {
        "gpu_name": "NVIDIA A100-SXM4-80GB",
        "metrics": {
            "gpu_power_usage": {"unit": "W", "avg": watts, "min": watts, "max": watts},
            "energy_consumption": {"unit": "MJ", "min": energy_mj[0], "max": energy_mj[1]},
            "gpu_utilization": {"unit": "%", "avg": 35.4 if busy else 0.0},
            "gpu_memory_used": {"unit": "GB", "avg": 73.2 if busy else 0.0},
        },
    }


def _aiperf_export(gpus: dict[str, dict]) -> bytes:
    export = json.loads((FORMATS / "aiperf-0.13.0" / "profile_export_aiperf.json").read_text())
    export["telemetry_data"]["endpoints"] = {"localhost:9400": {"gpus": gpus}}
    return json.dumps(export).encode()


def _eight(busy: int = 1) -> dict[str, dict]:
    return {
        f"gpu_{i}": _gpu(i < busy, (1443.96, 1444.02) if i < busy else (1454.52, 1454.55), 94.6)
        for i in range(8)
    }


def test_idle_gpus_are_not_the_server_nor_its_energy():
    parsed = parse(FileInput.from_bytes("e.json", _aiperf_export(_eight())), ImportOptions())
    run, point = parsed.runs[0], parsed.runs[0].points[0]
    assert run.gpu_model == "a100-80gb" and run.gpu_count == 1
    assert point.gpu_energy_j == pytest.approx(0.06e6, rel=1e-6)  # gpu_0's rise alone
    assert point.avg_power_w == pytest.approx(94.6)
    note = next(w for w in parsed.warnings if "idle throughout" in w)
    assert "saw 8 GPUs; 7 of them" in note and "the 1 that served" in note


def test_two_serving_gpus_of_eight_are_a_two_gpu_server():
    parsed = parse(FileInput.from_bytes("e.json", _aiperf_export(_eight(2))), ImportOptions())
    assert parsed.runs[0].gpu_count == 2
    assert parsed.runs[0].points[0].avg_power_w == pytest.approx(2 * 94.6)


def test_the_users_gpu_count_is_the_servers_and_a_difference_is_said():
    data = _aiperf_export(_eight(2))
    parsed = parse(FileInput.from_bytes("e.json", data), ImportOptions(gpu_count=4))
    assert parsed.runs[0].gpu_count == 4
    assert any("saw 2 GPU(s) serving" in w and "the 4 you gave" in w for w in parsed.warnings)


def test_telemetry_without_utilisation_or_memory_counts_every_gpu():
    gpus = {}
    for i in range(2):
        gpu = _gpu(False, (1.0, 1.1), 300.0)
        del gpu["metrics"]["gpu_utilization"], gpu["metrics"]["gpu_memory_used"]
        gpus[f"gpu_{i}"] = gpu
    found = telemetry(json.loads(_aiperf_export(gpus)), "e.json")
    assert found.gpu_count == 2 and found.idle == 0 and found.note() is None
    assert found.power_w == pytest.approx(600.0)


def test_genai_perf_25_telemetry_per_gpu_averages():
    """GenAI-Perf 25.07 writes `telemetry_stats.<metric>.<index>: average` (the layout of the
    real export): the serving GPU's power counts; an average of the energy counter is no rise,
    so the energy is not the telemetry's."""
    stats = {
        "gpu_power_usage": {"unit": "W", **{str(i): 57.0 for i in range(8)}, "3": 196.18},
        "energy_consumption": {"unit": "MJ", **{str(i): 895.0 + i for i in range(8)}},
        "gpu_memory_used": {"unit": "GB", **{str(i): 0.0 for i in range(8)}, "3": 78.08},
        "gpu_utilization": {"unit": "%", **{str(i): 0.0 for i in range(8)}, "3": 77.37},
    }
    found = telemetry({"telemetry_stats": stats}, "e.json")
    assert found.gpu_count == 1 and found.idle == 7
    assert found.power_w == pytest.approx(196.18)
    assert found.energy_j is None
