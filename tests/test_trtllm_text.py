"""trtllm-bench's text report, printed at the end of its log (a real 0.16.0 log of
Llama-3.1-70B FP8 on 8x H100, shaamil101-etched/trtllm-benchmarks@aeec9f2 results/, is read the
same way; it is not committed). The two layouts below are written as reporting.py prints them."""

from __future__ import annotations

import math

import pytest

from benchmarks.inputs.tool_reports import trtllm_text_log
from fleetplan.core.errors import UnknownFormatError
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.preview import FileStatus

BAR = "=" * 59
OLD = f"""[TensorRT-LLM] TensorRT-LLM version: 0.16.0
[07/11/2025-08:12:25] [TRT-LLM] [I] Initializing Throughput Benchmark. [rate=-1 req/s]
[TensorRT-LLM][INFO] TRTGptModel maxNumSequences: 2048
{BAR}
= ENGINE DETAILS
{BAR}
Model:\t\t\tacme/Llama-70B
Engine Directory:\t/tmp/acme/tp_8_pp_1
TensorRT-LLM Version:\t0.16.0
Dtype:\t\t\tbfloat16
KV Cache Dtype:\t\tFP8
Quantization:\t\tFP8
Max Sequence Length:\t25000

{BAR}
= WORLD + RUNTIME INFORMATION \n{BAR}
TP Size:\t\t8
PP Size:\t\t1
Max Runtime Batch Size:\t2048
Max Runtime Tokens:\t8192
Scheduling Policy:\tGuaranteed No Evict
KV Memory Percentage:\t90.00%
Issue Rate (req/sec):\t1.6324E+14

{BAR}
= PERFORMANCE OVERVIEW \n{BAR}
Number of requests:\t\t3000
Average Input Length (tokens):\t1024.0000
Average Output Length (tokens):\t1024.0000
Token Throughput (tokens/sec):\t10893.8728
Request Throughput (req/sec):\t10.6385
Total Latency (ms):\t\t281993.3779

{BAR}

[07/11/2025-08:17:39] [TRT-LLM] [I] Benchmark Shutdown called!
"""
NEW = trtllm_text_log()


def _parse(text: str, **options):
    return parse(FileInput.from_bytes("trtllm.log", text.encode()), ImportOptions(**options))


def test_a_0_16_log_is_a_burst_of_its_requests_with_its_throughputs():
    parsed = _parse(OLD, gpu="h100-sxm")
    assert parsed.importer == "trtllm-bench"
    (run,) = parsed.runs
    assert (run.model, run.engine_version, run.gpu_count, run.tensor_parallel_size) == (
        "acme/Llama-70B",
        "0.16.0",
        8,
        8,
    )
    assert "--kv-cache-percentage=0.9" in run.variant and "--quantization=FP8" in run.variant
    (point,) = run.points
    assert math.isinf(point.offered_rate_rps) or point.offered_rate_rps > 1e12
    assert (point.completed, point.duration_s) == (3000, pytest.approx(281.9933779))
    assert point.output_throughput_tps == pytest.approx(10893.8728)
    assert point.input_tokens_mean == 1024 and point.ttft_p99_ms is None
    assert any("no request latencies" in w for w in parsed.warnings)


def test_a_later_log_names_its_gpu_and_keeps_its_percentiles():
    parsed = _parse(NEW)
    (run,) = parsed.runs
    assert (run.gpu_model, run.gpu_label, run.gpu_count) == (
        "h100-sxm",
        "NVIDIA H100 80GB HBM3",
        1,
    )
    assert "--backend=pytorch" in run.variant
    (point,) = run.points
    assert point.max_concurrency == 32 and point.offered_rate_rps is None  # queued as served
    assert (point.ttft_p99_ms, point.tpot_p50_ms, point.e2el_p99_ms) == (600.0, 36.5, 9800.0)
    assert point.ttft_mean_ms == 95.4 and point.total_throughput_tps == 4944.0


def test_a_folder_reads_a_log_that_holds_a_report_and_passes_over_the_others(warehouse, tmp_path):
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "result_1024_1024.txt").write_text(OLD)
    (folder / "notes.txt").write_text("ran on the big box\n")
    (folder / "server.log").write_text("[INFO] started\n" * 100)
    outcomes = {
        o.file.rsplit("/", 1)[-1]: o.status
        for o in ingest_paths(warehouse, [folder], ImportOptions(gpu="h100-sxm"))
    }
    assert outcomes == {
        "result_1024_1024.txt": FileStatus.IMPORTED,
        "notes.txt": FileStatus.SKIPPED,
        "server.log": FileStatus.SKIPPED,
    }


def test_text_that_is_no_report_is_not_read_as_one():
    with pytest.raises(UnknownFormatError, match="text that is not JSON, YAML or CSV"):
        _parse("just some notes\nabout a run\n")


def test_an_upload_reads_a_log_that_holds_a_report_and_passes_over_notes(warehouse):
    from fleetplan.warehouse.preview import preview_uploads

    uploads = [("result.log", OLD.encode()), ("notes.txt", b"ran on the big box\n")]
    statuses = {
        p.file: p.status for p in preview_uploads(warehouse, uploads, ImportOptions(gpu="h100-sxm"))
    }
    assert statuses == {"result.log": FileStatus.READY, "notes.txt": FileStatus.SKIPPED}
