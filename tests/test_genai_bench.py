"""genai-bench (sgl-project/genai-bench) experiment folders: one file a level beside
experiment_metadata.json, laid out as genai-bench 0.0.2 writes them (two real folders of
sgl-project/genai-bench@d3cb7ce were "not a format"; not committed: these are our own
figures). The recomputed statistics of the real ones equal their aggregates (P99 TTFT 346.89 ms,
median TPOT 8.17 ms, mean E2EL 1,057.23 ms)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchmarks.inputs.tool_reports import genai_bench_level
from fleetplan.core.errors import InputError
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.preview import FileStatus, preview_uploads
from fleetplan.warehouse.queries import benchmark_points
from tests.support.paths import ROOT

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


# -- genai-bench 0.0.5: our own runs (tests/fixtures/formats/README.md) ---------------------------

FORMATS = ROOT / "tests" / "fixtures" / "formats"
RUN = FORMATS / "genai-bench-0.0.5"
WARMUP = FORMATS / "genai-bench-0.0.5-ms-warmup"
# the level where genai-bench left one request out of its TPOT (its tokens came within 1 ms)
LEFT_OUT = "N100_20_16_4_text-to-text_num_concurrency_1_time_2s.json"
_THEIRS = {"ttft": "ttft", "e2e_latency": "e2el", "tpot": "tpot"}
_STATS = ("mean", "p50", "p90", "p95", "p99")


def _stored(cli, warehouse_path: Path, folder: Path) -> tuple[str, dict[str, dict]]:
    done = cli("ingest", "--warehouse", warehouse_path, folder, "--gpu", "cpu", "--gpu-count", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    with Warehouse.open(warehouse_path, read_only=True) as wh:
        rows = benchmark_points(wh)
    return done.stdout, {row["source_file"]: row for _, row in rows.iterrows()}


def _tpots(rows: list[dict], *, theirs: bool) -> list[float]:
    """Each request's TPOT: genai-bench's own (`tpot`, null where it left the request out), or
    ours, (E2EL - TTFT) / (output tokens - 1) over every request of more than one token."""
    if theirs:
        return [r["tpot"] for r in rows if r["tpot"] is not None]
    return [
        (r["e2e_latency"] - r["ttft"]) / (r["num_output_tokens"] - 1)
        for r in rows
        if r["num_output_tokens"] > 1
    ]


def test_genai_bench_0_0_5s_experiment_imports_with_the_figures_it_wrote(cli, warehouse_path):
    out, stored = _stored(cli, warehouse_path, RUN)
    assert "4 imported, 0 already present, 0 rejected, 3 skipped" in out
    # its Excel summary beside the levels: passed over, saying what it is (refused before)
    assert "skipped   " in out and "gb-0.0.5_summary.xlsx: a spreadsheet" in out
    levels = sorted(RUN.glob("*_time_*s.json"))
    assert len(levels) == 4 and sorted(stored) == [p.name for p in levels]
    for path in levels:
        level = json.loads(path.read_text())
        theirs, row = level["aggregated_metrics"], stored[path.name]
        assert level["_time_unit"] == "s"
        assert (row["source_tool"], row["source_tool_version"]) == ("genai-bench", "0.0.5")
        assert (row["model"], row["engine"], row["engine_version"]) == (
            "tiny-llama",  # its --model: the server was asked for a folder, /tmp/gb-tiny
            "vllm",
            "0.32.0",
        )
        assert (row["gpu_model"], row["gpu_count"], row["stats_source"]) == ("cpu", 1, "recomputed")
        assert row["max_concurrency"] == theirs["num_concurrency"]
        assert (row["completed"], row["failed"]) == (
            theirs["num_completed_requests"],
            theirs["num_error_requests"],
        )
        assert row["duration_s"] == theirs["run_duration"]
        assert row["request_throughput_rps"] == theirs["requests_per_second"]
        assert row["output_throughput_tps"] == theirs["mean_output_throughput_tokens_per_s"]
        assert row["total_throughput_tps"] == theirs["mean_total_tokens_throughput_tokens_per_s"]
        assert row["output_tokens_mean"] == theirs["stats"]["num_output_tokens"]["mean"]
        for metric, ours in _THEIRS.items():
            for stat in _STATS:
                expected = 1000 * theirs["stats"][metric][stat]
                if metric == "tpot" and path.name == LEFT_OUT:
                    continue  # below
                assert row[f"{ours}_{stat}_ms"] == pytest.approx(expected, rel=1e-9), (metric, stat)
        assert pd.isna(row["itl_p50_ms"])  # genai-bench keeps no ITL: unknown
    # the traffic: D(100,16) synthetic of those lengths, N(...) kept by its name
    d4 = stored["D100_16_text-to-text_num_concurrency_4_time_1s.json"]
    assert (d4["dataset"], d4["input_len"], d4["output_len"]) == ("synthetic", 100, 16)
    assert stored[LEFT_OUT]["dataset"] == "N(100,20)/(16,4)"
    # figures as genai-bench wrote them (README): 47.66 req/s, P99 TTFT 43.37 ms at concurrency 4
    assert round(d4["request_throughput_rps"], 2) == 47.66 and round(d4["ttft_p99_ms"], 2) == 43.37
    # the level where genai-bench's TPOT leaves one request out: ours keeps it, and says so
    rows = json.loads((RUN / LEFT_OUT).read_text())["individual_request_metrics"]
    theirs = json.loads((RUN / LEFT_OUT).read_text())["aggregated_metrics"]["stats"]["tpot"]
    assert len(_tpots(rows, theirs=True)) == len(_tpots(rows, theirs=False)) - 1
    assert theirs["mean"] == pytest.approx(np.mean(_tpots(rows, theirs=True)))
    row = stored[LEFT_OUT]
    assert row["tpot_mean_ms"] == pytest.approx(1000 * np.mean(_tpots(rows, theirs=False)))
    assert row["tpot_p99_ms"] == pytest.approx(1000 * np.percentile(_tpots(rows, theirs=False), 99))
    assert "1 request(s) whose output tokens after the first came within 1 ms" in out
    # the command is kept with its API key masked
    cmd = json.loads(d4["run_metadata"])["cmd"]
    assert "--api-key ***" in cmd and "dummy" not in cmd and "--model-tokenizer /tmp/gb-tiny" in cmd


def test_genai_bench_0_0_5s_warmup_and_cooldown_are_left_out_as_it_did(cli, warehouse_path):
    """--metrics-time-unit ms, --warmup-ratio 0.2, --cooldown-ratio 0.1: its statistics are over
    requests 6 to 30 of 34, its counts and duration over them all."""
    out, stored = _stored(cli, warehouse_path, WARMUP)
    ((name, row),) = stored.items()
    level = json.loads((WARMUP / name).read_text())
    theirs = level["aggregated_metrics"]
    assert level["_time_unit"] == "ms" and theirs["num_completed_requests"] == 34
    for metric, ours in _THEIRS.items():
        for stat in _STATS:
            expected = theirs["stats"][metric][stat]  # in ms already
            assert row[f"{ours}_{stat}_ms"] == pytest.approx(expected, rel=1e-9), (metric, stat)
    assert row["completed"] == 34 and row["duration_s"] == theirs["run_duration"]  # seconds
    assert "statistics over 25 of the 34 completed requests" in out
    assert "leave out the first 6 and the last 3 of its 34 requests" in out
    # its token throughputs count the 25 requests' tokens over the whole run: ours all 34's
    assert round(theirs["mean_output_throughput_tokens_per_s"], 1) == 185.3
    assert row["output_throughput_tps"] == pytest.approx(34 * 16 / theirs["run_duration"])


def test_a_level_alone_whose_statistics_are_not_its_requests_says_so():
    """Without the metadata (its command) a level cannot say what genai-bench left out: all
    its requests are stored, and each statistic that differs from the file's is named."""
    path = next(WARMUP.glob("*_time_*s.json"))
    options = ImportOptions(gpu="cpu", gpu_count=1, model="tiny-llama")
    parsed = parse(FileInput.from_bytes(path.name, path.read_bytes()), options)
    level = json.loads(path.read_text())
    ttfts = [r["ttft"] for r in level["individual_request_metrics"]]
    assert parsed.runs[0].points[0].ttft_p99_ms == pytest.approx(np.percentile(ttfts, 99))
    assert any(w.startswith("stats.ttft.p99 is 60.8927 ms in the file") for w in parsed.warnings)


def test_its_excel_summary_is_passed_over_in_a_folder_and_refused_alone(warehouse):
    workbook = RUN / "gb-0.0.5_summary.xlsx"
    with pytest.raises(InputError, match="a spreadsheet \\(an Excel workbook\\)"):
        parse(FileInput.from_bytes(workbook.name, workbook.read_bytes()), ImportOptions())
    # uploaded, it is not unpacked as a zip archive of result files
    (preview,) = preview_uploads(
        warehouse, [(workbook.name, workbook.read_bytes())], ImportOptions()
    )
    assert preview.status is FileStatus.SKIPPED and "a spreadsheet" in preview.message


def test_the_metadatas_keys_and_tokens_are_masked_and_a_served_folder_named_by_its_model(
    warehouse, tmp_path
):
    metadata = METADATA | {
        "cmd": "genai-bench benchmark --api-key sk-live-123 --model-tokenizer org/tok "
        "--aws-secret-access-key abc/def --github-token ghp_x --num-concurrency 4",
        "api_model_name": "/models/llama-70b",
        "model": "Llama-70B",
    }
    folder = _folder(tmp_path, _level())
    (folder / "experiment_metadata.json").write_text(json.dumps(metadata))
    assert all(o.status is not FileStatus.REJECTED for o in ingest_paths(warehouse, [folder]))
    row = benchmark_points(warehouse).iloc[0]
    assert row["model"] == "Llama-70B"
    assert json.loads(row["run_metadata"])["cmd"] == (
        "genai-bench benchmark --api-key *** --model-tokenizer org/tok "
        "--aws-secret-access-key *** --github-token *** --num-concurrency 4"
    )
