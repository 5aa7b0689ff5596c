"""ML.ENERGY leaderboard per-model files: detected by content, figures as the raw file states
them (checked by hand below), what the file lacks left unknown, malformed files refused naming
the field, `fleetplan ingest`, and the planner using the measured power.

The two real files are in ../shared/data/tool-outputs/ml-energy-leaderboard (no licence is
declared: read from there, never copied into the project)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.inputs.fuzzing import seed_files
from fleetplan.core.errors import InputError
from fleetplan.planner import GpuFacts, Scenario, plan
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.importers import ml_energy
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.document import read_document
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.queries import benchmark_points
from tests.support.planner_points import gpu, scenario

FOLDER = "ml-energy-leaderboard"
CHAT_14B = "Qwen__Qwen3-14B__lm-arena-chat.json"
GPQA_8B = "Qwen__Qwen3-8B__gpqa.json"


def _raw(tool_outputs: Path, name: str) -> dict:
    return json.loads((tool_outputs / FOLDER / name).read_text())


def _parse(data: bytes, options: ImportOptions | None = None, name: str = "f.json"):
    return parse(FileInput.from_bytes(name, data), options)


def _config(raw: dict, gpu_model: str, seqs: int) -> dict:
    return next(
        c
        for c in raw["configurations"]
        if c["gpu_model"] == gpu_model and c["max_num_seqs"] == seqs
    )


def _point(parsed, gpu_label: str, seqs: int):
    run = next(r for r in parsed.runs if r.gpu_label == gpu_label)
    return run, next(p for p in run.points if p.max_concurrency == seqs)


def test_both_real_files_are_detected_and_import_whole(tool_outputs):
    for name, runs, points in ((CHAT_14B, 2, 17), (GPQA_8B, 2, 10)):
        parsed = _parse((tool_outputs / FOLDER / name).read_bytes(), name=name)
        assert parsed.importer == "ml-energy"
        assert (len(parsed.runs), parsed.points) == (runs, points)
        # consistency checks ran in parse (registry.check_runs); every run is one GPU x count
        assert sorted((r.gpu_model, r.gpu_count) for r in parsed.runs) == [("H100", 1), ("b200", 1)]


def test_no_other_tools_file_is_taken_for_ml_energy():
    others = [(label, data) for label, (_, data) in seed_files().items() if label != "ml-energy"]
    assert len(others) >= 6
    for label, data in others:
        try:
            document = read_document(data, name=label, max_values=5_000_000)
        except InputError:
            continue
        assert not ml_energy.detect(document), label


def test_figures_match_the_raw_file_checked_by_hand(tool_outputs):
    parsed = _parse((tool_outputs / FOLDER / CHAT_14B).read_bytes(), name=CHAT_14B)
    run, point = _point(parsed, "H100", 8)
    # Read off the raw file by hand: H100 x 1, max_num_seqs 8: 627.41 tok/s, 443.01 W,
    # 0.70609 J/token (= 443.01 / 627.41), 619.54 tokens per request, a histogram of 1,024
    # requests: 627.41 / 619.54 = 1.0127 req/s, and 1,024 requests / 1.0127 = 1,011.1 s.
    assert point.output_throughput_tps == pytest.approx(627.41, abs=0.01)
    assert point.avg_power_w == pytest.approx(443.01, abs=0.01)
    assert point.completed == 1024
    assert point.output_tokens_mean == pytest.approx(619.54, abs=0.01)
    assert point.request_throughput_rps == pytest.approx(1.0127, abs=1e-4)
    assert point.duration_s == pytest.approx(1011.1, abs=0.1)
    raw = _config(_raw(tool_outputs, CHAT_14B), "H100", 8)
    assert point.output_tokens_mean == raw["avg_output_len"]
    assert point.request_throughput_rps == pytest.approx(
        raw["output_throughput_tokens_per_sec"] / raw["avg_output_len"]
    )
    # The energy over the derived window is the file's energy per token times the tokens.
    tokens = point.completed * point.output_tokens_mean
    assert point.gpu_energy_j / tokens == pytest.approx(raw["energy_per_token_joules"], rel=1e-9)
    assert point.energy_method.value == "nvml_counter"
    assert (point.itl_p50_ms, point.itl_p99_ms) == (raw["median_itl_ms"], raw["p99_itl_ms"])
    assert (point.itl_p50_ms, point.itl_p99_ms) == pytest.approx((12.54, 14.36), abs=0.01)
    assert run.tensor_parallel_size == 1 and run.dataset == "lm-arena-chat"
    assert run.model == "Qwen/Qwen3-14B" and run.dtype == "bfloat16"
    batch = run.metadata["mean running batch by max_num_seqs (steady state)"]
    assert batch.startswith("8: 7.987; 16: 15.97")
    # B200 at 2,048 sequences: a histogram of 3,072 requests, 15,875 tok/s, 869 W.
    _, big = _point(parsed, "B200", 2048)
    assert big.completed == 3072
    assert big.output_throughput_tps == pytest.approx(15875, abs=1)
    assert big.avg_power_w == pytest.approx(869, abs=1)


def test_what_the_file_lacks_stays_unknown(tool_outputs):
    parsed = _parse((tool_outputs / FOLDER / GPQA_8B).read_bytes(), name=GPQA_8B)
    assert len(parsed.runs) > 0  # a loop over nothing asserts nothing
    for run in parsed.runs:
        assert run.engine is None and run.engine_version is None and run.created_at is None
        assert run.input_len is None and run.output_len is None
        for point in run.points:
            assert point.offered_rate_rps is None and point.failed is None
            assert point.requests_sent is None and point.input_tokens_mean is None
            assert point.total_throughput_tps is None and point.itl_mean_ms is None
            for metric in ("ttft", "tpot", "e2el"):
                for stat in ("mean", "p50", "p90", "p95", "p99"):
                    assert getattr(point, f"{metric}_{stat}_ms") is None
    assert "duration = completed / request throughput" in parsed.runs[0].provenance.notes


def test_h100_alone_is_kept_as_written_with_a_warning_until_the_user_says_which(tool_outputs):
    data = (tool_outputs / FOLDER / GPQA_8B).read_bytes()
    parsed = _parse(data)
    (warning,) = parsed.warnings
    assert "'H100'" in warning and "494-689 W per GPU" in warning and "--gpu" in warning
    said = _parse(data, ImportOptions(gpu="H100 SXM"))
    assert sorted(r.gpu_model for r in said.runs) == ["b200", "h100-sxm"]
    assert {r.gpu_label for r in said.runs} == {"B200", "H100"} and not said.warnings
    with pytest.raises(InputError, match="B200 and H100 but --gpu says 'rtx-4090'") as error:
        _parse(data, ImportOptions(gpu="rtx-4090"))
    assert error.value.field == "gpu_model"
    with pytest.raises(InputError, match="run on 1 GPUs but --gpu-count says 2"):
        _parse(data, ImportOptions(gpu_count=2))


def _one_config(**changes) -> bytes:
    config = {
        "avg_batch_size": 7.9,
        "avg_output_len": 100.0,
        "avg_power_watts": 400.0,
        "energy_per_request_joules": 40.0,
        "energy_per_token_joules": 0.4,
        "gpu_model": "B200",
        "max_num_seqs": 8,
        "median_itl_ms": 10.0,
        "num_gpus": 1,
        "output_length_distribution": {"bins": [0, 100, 200], "counts": [3, 7]},
        "output_throughput_tokens_per_sec": 1000.0,
        "p90_itl_ms": 12.0,
        "p95_itl_ms": 13.0,
        "p99_itl_ms": 20.0,
    }
    for key, value in changes.items():
        if value is None:
            config.pop(key)
        else:
            config[key] = value
    document = {"model_id": "acme/m", "task": "gpqa", "configurations": [config]}
    return json.dumps(document).encode()


def test_a_hand_made_file_reads_as_written():
    (run,) = _parse(_one_config()).runs
    (point,) = run.points
    assert point.completed == 10 and point.request_throughput_rps == pytest.approx(10.0)
    assert point.duration_s == pytest.approx(1.0) and point.gpu_energy_j == pytest.approx(400.0)


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"avg_power_watts": None}, "avg_power_watts", "missing"),
        ({"avg_power_watts": "lots"}, "avg_power_watts", "expected a number"),
        ({"output_throughput_tokens_per_sec": 0}, "output_throughput_tokens_per_sec", "> 0"),
        ({"output_length_distribution": None}, "output_length_distribution.counts", "missing"),
        ({"num_gpus": 0}, "num_gpus", "whole number >= 1"),
        ({"max_num_seqs": None}, "max_num_seqs", "missing"),
        ({"p99_itl_ms": 5.0}, "p99_itl_ms", "below p95_itl_ms 13"),
        # past a float's range: raised OverflowError where the degree was shown (fuzz, 12-08)
        ({"parallelization": {"tensor_parallel": 10**400}}, "tensor_parallel", "over 65,536"),
    ],
)
def test_a_malformed_file_is_refused_naming_the_field(changes, field, words):
    with pytest.raises(InputError, match=words) as error:
        _parse(_one_config(**changes), name="bad.json")
    assert error.value.field == field
    assert "bad.json" in str(error.value)


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"energy_per_token_joules": 0.8}, "energy_per_token_joules 0.8 as the file states"),
        ({"energy_per_request_joules": 90.0}, "energy_per_request_joules 90 as the file states"),
    ],
)
def test_a_stated_energy_apart_from_power_and_throughput_is_a_note(changes, named):
    (run,) = _parse(_one_config(**changes)).runs
    (point,) = run.points
    (note, *_) = [note for note in point.notes if named in note]
    assert "both kept" in note
    # the energy planned with is the measured power over the level, not the stated figure
    assert point.gpu_energy_j == pytest.approx(400.0)


def test_ingest_then_plan_on_the_measured_energy(cli, tool_outputs, tmp_path):
    path = tmp_path / "wh.duckdb"
    done = cli("ingest", "--warehouse", path, "--gpu", "h100-sxm", tool_outputs / FOLDER)
    assert done.returncode == 0, done.stderr
    assert "2 imported" in done.stdout
    warehouse = Warehouse.open(path, read_only=True)
    try:
        points = benchmark_points(warehouse, model="Qwen/Qwen3-8B")
    finally:
        warehouse.connection.close()
    assert len(points) == 10
    classes = [{"name": "reasoning", "rate_rps": 0.2, "dataset": "gpqa"}]
    setup = scenario(classes, [gpu("h100-sxm", 3.0)], model="Qwen/Qwen3-8B")
    facts = {"h100-sxm": GpuFacts("h100-sxm", rated_w=700, idle_w=100)}
    result = plan(Scenario.model_validate(setup), points, facts)
    (pool,) = result.recommended.pools
    assert pool.energy_basis.value == "measured"
    # The highest measured level (no latency target): H100, 96 sequences, 3,117 tok/s at 689 W
    raw = _config(_raw(tool_outputs, GPQA_8B), "H100", 96)
    rps = raw["output_throughput_tokens_per_sec"] / raw["avg_output_len"]
    assert pool.level_throughput_rps == pytest.approx(rps)
    per_rps_kw = (raw["avg_power_watts"] - 100) / 1000 / rps
    assert pool.power_kw == pytest.approx(pool.servers * 0.1 + 0.2 * per_rps_kw)
