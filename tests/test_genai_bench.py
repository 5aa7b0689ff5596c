"""genai-bench (sgl-project/genai-bench) experiment folders: one file a level beside
experiment_metadata.json, laid out as genai-bench 0.0.2 writes them (two real folders of
sgl-project/genai-bench@d3cb7ce were "not a format"; not committed: these are our own
figures). The recomputed statistics of the real ones equal their aggregates (P99 TTFT 346.89 ms,
median TPOT 8.17 ms, mean E2EL 1,057.23 ms)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.inputs.tool_reports import genai_bench_level
from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.preview import FileStatus
from fleetplan.warehouse.queries import benchmark_points

LEVEL = "D100_100_text-to-text_num_concurrency_4_time_120s.json"
METADATA = {
    "cmd": "genai-bench benchmark --num-concurrency 4 ...",
    "benchmark_version": "0.0.2",
    "api_backend": "sglang",
    "api_model_name": "acme/Model-8B",
    "model": "Model-8B",
    "task": "text-to-text",
    "num_concurrency": [4],
    "iteration_type": "num_concurrency",
    "traffic_scenario": ["D(100,100)"],
    "server_engine": "SGLang",
    "server_version": "0.5.6",
    "server_gpu_type": "H100",
    "server_gpu_count": 1,
    "metrics_time_unit": "s",
}


def _level(scenario: str = "D(100,100)", unit: str = "s", errors: int = 0) -> dict:
    level = genai_bench_level(unit=unit, errors=errors)
    level["aggregated_metrics"]["scenario"] = scenario
    return level


def _folder(tmp_path: Path, level: dict) -> Path:
    folder = tmp_path / "experiment"
    folder.mkdir()
    (folder / LEVEL).write_text(json.dumps(level))
    (folder / "experiment_metadata.json").write_text(json.dumps(METADATA))
    return folder


def test_an_experiment_folder_imports_its_levels_with_the_metadatas_server(warehouse, tmp_path):
    folder = _folder(tmp_path, _level(errors=2))
    outcomes = {Path(o.file).name: o.status for o in ingest_paths(warehouse, [folder])}
    assert outcomes == {LEVEL: FileStatus.IMPORTED, "experiment_metadata.json": FileStatus.SKIPPED}
    row = benchmark_points(warehouse).iloc[0]
    assert (row["model"], row["gpu_model"], row["gpu_count"], row["engine"]) == (
        "acme/Model-8B",
        "H100",  # as the user wrote it: a family, kept and flagged
        1,
        "sglang",
    )
    assert (row["dataset"], row["input_len"], row["output_len"]) == ("synthetic", 100, 100)
    assert (row["max_concurrency"], row["completed"], row["failed"]) == (4, 40, 2)
    level = _level()
    ttfts = [r["ttft"] for r in level["individual_request_metrics"]]
    assert row["ttft_p99_ms"] == pytest.approx(1000 * np.percentile(ttfts, 99))
    assert row["stats_source"] == "recomputed" and 8 < row["tpot_p50_ms"] < 12


def test_a_level_alone_asks_for_what_the_metadata_would_say():
    data = json.dumps(_level()).encode()
    with pytest.raises(InputError, match="does not name the model"):
        parse(FileInput.from_bytes(LEVEL, data), ImportOptions(gpu="h100-sxm", gpu_count=1))
    options = ImportOptions(gpu="h100-sxm", gpu_count=1, model="acme/m")
    parsed = parse(FileInput.from_bytes(LEVEL, data), options)
    assert parsed.importer == "genai-bench" and parsed.runs[0].model == "acme/m"


def test_milliseconds_and_a_scenario_of_varied_lengths():
    data = json.dumps(_level("N(480,240)/(300,150)", unit="ms")).encode()
    options = ImportOptions(gpu="h100-sxm", gpu_count=1, model="acme/m")
    (run,) = parse(FileInput.from_bytes(LEVEL, data), options).runs
    assert run.dataset == "N(480,240)/(300,150)" and run.input_len is None
    assert 50 <= run.points[0].ttft_p50_ms <= 200
