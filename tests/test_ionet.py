"""The public io.net AIBC 2025 results: all of them import, figures match the files, and the
bundled sample data is exactly what the importer derives from them."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.preview import FileStatus
from fleetplan.warehouse.queries import benchmark_points
from fleetplan.warehouse.sample_data import IONET_FILE, rebuild_ionet, sample_dir

NAME = re.compile(r"^vllm_200prompts(\d+)qps_(.+)_sharegpt_(\d+)x(.+)\.json$")


def _levels_from_names(folder: Path) -> set[tuple[str, str, int, float]]:
    gpu_ids = {"NVIDIA-H100-PCIe": "h100-pcie", "NVIDIA-GeForce-RTX-4090": "rtx-4090"}
    levels = set()
    for path in folder.glob("*.json"):
        rate, model, count, gpu = NAME.match(path.name).groups()
        levels.add((model, gpu_ids[gpu], int(count), float(rate)))
    return levels


def _spot(frame, model, gpu, count, rate):
    rows = frame[
        (frame["model"].str.endswith("/" + model))
        & (frame["gpu_model"] == gpu)
        & (frame["gpu_count"] == count)
        & (frame["offered_rate_rps"] == rate)
    ]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def _check_spot_figures(frame):
    llama = _spot(frame, "Meta-Llama-3-8B-Instruct", "h100-pcie", 1, 16.0)
    assert llama["ttft_p99_ms"] == pytest.approx(31.06, abs=0.005)
    assert llama["total_throughput_tps"] == pytest.approx(4145.9, abs=0.05)
    qwen = _spot(frame, "DeepSeek-R1-Distill-Qwen-14B", "rtx-4090", 4, 8.0)
    assert qwen["total_throughput_tps"] == pytest.approx(1858.6, abs=0.05)


@pytest.mark.slow  # imports all 120 raw io.net files: several seconds
def test_all_120_files_import_with_every_level(ionet_dir, warehouse):
    outcomes = list(ingest_paths(warehouse, [ionet_dir]))
    assert len(outcomes) == 120
    assert {o.status for o in outcomes} == {FileStatus.IMPORTED}, [
        o for o in outcomes if o.status is not FileStatus.IMPORTED
    ]
    frame = benchmark_points(warehouse)
    assert len(frame) == 130  # ten files hold a repeated run
    stored = {
        (m.split("/")[-1], g, int(c), float(r))
        for m, g, c, r in frame[["model", "gpu_model", "gpu_count", "offered_rate_rps"]].itertuples(
            index=False
        )
    }
    assert stored == _levels_from_names(ionet_dir)
    assert frame["energy_method"].eq("none").all() and frame["gpu_energy_j"].isna().all()
    assert frame["e2el_p99_ms"].isna().all()  # the files have no end-to-end latency
    assert frame["failed"].eq(0).all() and frame["requests_sent"].eq(200).all()
    _check_spot_figures(frame)


@pytest.mark.slow  # imports all 120 raw io.net files twice
def test_importing_the_raw_files_again_adds_nothing(ionet_dir, warehouse):
    list(ingest_paths(warehouse, [ionet_dir]))
    again = list(ingest_paths(warehouse, [ionet_dir]))
    assert {o.status for o in again} == {FileStatus.DUPLICATE}
    assert len(benchmark_points(warehouse)) == 130


def test_sample_data_is_what_the_importer_derives(ionet_dir, tmp_path):
    out = tmp_path / IONET_FILE
    assert rebuild_ionet(ionet_dir, out) == 130
    shipped = sample_dir() / "benchmarks" / IONET_FILE
    assert out.read_bytes() == shipped.read_bytes(), (
        "sample_data is stale: run `fleetplan sample-data --source <io.net results>`"
    )


def test_sample_warehouse_carries_figures_and_provenance(sample_warehouse_path):
    from fleetplan.warehouse.db import Warehouse

    with Warehouse.open(sample_warehouse_path) as wh:
        frame = benchmark_points(wh)
    assert len(frame) == 130
    _check_spot_figures(frame)
    assert frame["source_repository"].eq("github.com/IOG-Foundation/llm-inference-benchmarks").all()
    assert frame["source_licence"].eq("Apache-2.0").all()
    assert frame["source_file"].str.match(NAME).all()
    assert frame["source_sha256"].str.fullmatch(r"[0-9a-f]{64}").all()
    assert frame["engine_version"].eq("0.8.5").all()
    assert (frame["tensor_parallel_size"] == frame["gpu_count"]).all()
    assert not any(math.isinf(r) for r in frame["offered_rate_rps"])


def test_raw_files_after_sample_data_are_recognised_as_present(ionet_dir, sample_warehouse_path):
    from fleetplan.warehouse.db import Warehouse

    with Warehouse.open(sample_warehouse_path) as wh:
        outcomes = list(ingest_paths(wh, sorted(ionet_dir.glob("*.json"))[:5]))
        assert {o.status for o in outcomes} == {FileStatus.DUPLICATE}
        assert "ionet-aibc2025.json" in outcomes[0].message
        assert len(benchmark_points(wh)) == 130
