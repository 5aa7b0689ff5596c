"""MLPerf Inference LoadGen's `mlperf_log_summary.txt` (two real ones of NVIDIA's v4.1 submission,
mlcommons/inference_results_v4.1@a2f5d66: closed/NVIDIA/results/H200-SXM-141GBx8_TRT/
llama2-70b-99/{Server,Offline}/performance/run_1/, read the same way; not committed). The
summaries here are written in LoadGen's layout with figures of our own."""

from __future__ import annotations

import math

import pytest

from benchmarks.inputs.tool_reports import mlperf_server_summary
from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.preview import FileStatus

BAR = "=" * 48
SERVER = mlperf_server_summary(target_qps=50.0)
OFFLINE = f"""{BAR}
MLPerf Results Summary
{BAR}
SUT name : llama2-70b-Offline-SUT
Scenario : Offline
Mode     : PerformanceOnly
Samples per second: 60.5
Tokens per second: 17600.2
Result is : INVALID
  Min duration satisfied : NO

{BAR}
Additional Stats
{BAR}
Mean latency (ns)               : 500000000000
99.00 percentile latency (ns)   : 990000000000

{BAR}
Test Parameters Used
{BAR}
samples_per_query : 24576
target_qps : 62
"""
RUN = "results/H100-SXM-80GBx4_TRT/llama2-70b-99/{}/performance/run_1/mlperf_log_summary.txt"


def _parse(text: str, name: str = "mlperf_log_summary.txt", **options):
    return parse(FileInput.from_bytes(name, text.encode()), ImportOptions(**options))


def test_a_server_run_is_an_open_loop_level_at_its_scheduled_rate():
    parsed = _parse(SERVER, RUN.format("Server"))
    assert parsed.importer == "mlperf-loadgen"
    (run,) = parsed.runs
    assert (run.model, run.gpu_model, run.gpu_count, run.dataset) == (
        "meta-llama/Llama-2-70b-chat-hf",
        "h100-sxm",
        4,
        "mlperf-llama2-70b",
    )
    (point,) = run.points
    assert (point.offered_rate_rps, point.configured_rate_rps) == (50.25, 50.0)
    assert point.request_throughput_rps == 49.5 and point.output_throughput_tps == 14000.0
    assert (point.ttft_p99_ms, point.tpot_p99_ms, point.e2el_p50_ms) == (450.0, 146.0, 28000.0)
    assert point.ttft_mean_ms == 200.0 and point.tpot_p50_ms == 121.0
    assert (point.duration_s, point.completed) == (600.0, 29700)  # min_duration, rate x it
    assert any("states no duration or sample count" in w for w in parsed.warnings)


def test_an_offline_run_is_a_burst_and_an_invalid_one_says_so():
    parsed = _parse(OFFLINE, RUN.format("Offline"))
    (point,) = parsed.runs[0].points
    assert math.isinf(point.offered_rate_rps) and point.completed == 24576
    assert point.duration_s == pytest.approx(24576 / 60.5)
    assert point.ttft_p99_ms is None and point.e2el_p99_ms == 990000.0
    assert any("INVALID" in n for n in point.notes)


def test_the_hardware_outside_a_submissions_path_is_asked_for():
    with pytest.raises(InputError, match="does not record the hardware"):
        _parse(SERVER)
    (run,) = _parse(SERVER, gpu="h200", gpu_count=8).runs
    assert (run.gpu_model, run.gpu_count) == ("h200", 8)
    assert run.model == "meta-llama/Llama-2-70b-chat-hf"  # from its SUT name


def test_other_scenarios_and_accuracy_runs_are_refused_naming_them():
    with pytest.raises(InputError, match="SingleStream scenario"):
        _parse(SERVER.replace("Scenario : Server", "Scenario : SingleStream"), gpu="h200")
    with pytest.raises(InputError, match="AccuracyOnly"):
        _parse(SERVER.replace("PerformanceOnly", "AccuracyOnly"), gpu="h200")


def test_a_run_folder_imports_its_summary_and_passes_over_the_rest(warehouse, tmp_path):
    folder = tmp_path / "submission" / RUN.format("Server").rsplit("/", 1)[0]
    folder.mkdir(parents=True)
    (folder / "mlperf_log_summary.txt").write_text(SERVER)
    (folder / "mlperf_log_detail.txt").write_text(':::MLLOG {"key": "loadgen_version"}\n')
    (folder / "mlperf_log_accuracy.json").write_text('[{"seq_id": 0, "qsl_idx": 3}]')
    (folder / "mlperf_log_trace.json").write_text("")
    outcomes = ingest_paths(warehouse, [tmp_path / "submission"])
    statuses = {o.file.rsplit("/", 1)[-1]: o.status for o in outcomes}
    assert statuses == {
        "mlperf_log_summary.txt": FileStatus.IMPORTED,
        "mlperf_log_detail.txt": FileStatus.SKIPPED,
        "mlperf_log_accuracy.json": FileStatus.SKIPPED,
        "mlperf_log_trace.json": FileStatus.SKIPPED,
    }
