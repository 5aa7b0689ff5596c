"""Real output files of other benchmark tools (tests/fixtures/formats, see its README) import
by definition, with the figures the tools reported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fleetplan.errors import InputError
from tests.conftest import ROOT
from warehouse.importers import FileInput, ImportOptions, parse
from warehouse.ingest import Status, ingest_paths
from warehouse.queries import benchmark_points

FORMATS = ROOT / "tests" / "fixtures" / "formats"
LLMPERF = FORMATS / "llmperf-2023-08-31"
LLMPERF_SUMMARY = LLMPERF / "01-ai-Yi-1-5-34B-Chat_550_150_summary.json"
LLMPERF_REQUESTS = LLMPERF / "01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json"


def read(path: Path, **options):
    return parse(FileInput.from_bytes(path.name, path.read_bytes()), ImportOptions(**options))


# -- LLMPerf ------------------------------------------------------------------------------------


def test_llmperf_folder_imports_the_summary_with_its_requests(warehouse, tmp_path):
    folder = tmp_path / "llmperf"
    shutil.copytree(LLMPERF, folder, ignore=shutil.ignore_patterns("*.md"))
    outcomes = {
        Path(o.file).name: o
        for o in ingest_paths(warehouse, [folder], ImportOptions(gpu="NVIDIA A10G", gpu_count=4))
    }
    assert outcomes[LLMPERF_SUMMARY.name].status is Status.IMPORTED
    assert outcomes[LLMPERF_REQUESTS.name].status is Status.INCLUDED
    row = benchmark_points(warehouse).iloc[0]
    # figures as LLMPerf reported them in the summary
    assert row["request_throughput_rps"] == pytest.approx(24.32544640710275 / 60)
    assert row["output_throughput_tps"] == pytest.approx(64.53540931804359)
    assert row["completed"] == 100 and row["failed"] == 0 and row["max_concurrency"] == 4
    assert row["ttft_p99_ms"] == pytest.approx(2246.308106680317, rel=1e-6)
    assert row["e2el_mean_ms"] == pytest.approx(9475.706080719974, rel=1e-6)
    # recomputed from the requests: TPOT, which the summary cannot give
    assert row["stats_source"] == "recomputed" and 40 < row["tpot_p50_ms"] < 60
    assert row["itl_p50_ms"] != row["itl_p50_ms"]  # NaN: LLMPerf's ITL includes TTFT: not stored
    assert (row["gpu_model"], row["gpu_count"], row["model"]) == (
        "a10g",
        4,
        "01-ai/Yi-1.5-34B-Chat",
    )
    assert (row["input_len"], row["output_len"]) == (550, 150)


def test_llmperf_summary_alone_and_requests_alone(tmp_path):
    parsed = read(LLMPERF_SUMMARY, gpu="a10g", gpu_count=4)
    point = parsed.runs[0].points[0]
    assert point.tpot_p50_ms is None and point.ttft_p99_ms == pytest.approx(2246.308106680317)
    assert any("TPOT unknown" in w for w in parsed.warnings)
    with pytest.raises(InputError, match="together with its"):
        read(LLMPERF_REQUESTS, gpu="a10g", gpu_count=4)
    with pytest.raises(InputError, match="does not record the hardware"):
        read(LLMPERF_SUMMARY)
