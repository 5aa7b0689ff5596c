"""trtllm-bench's `--report_json`, written here as TensorRT-LLM's
`tensorrt_llm/bench/dataclasses/reporting.py` (ReportUtility.get_statistics_dict, at commit
2787769c) builds it: no real report is committed in a public repository we could find."""

from __future__ import annotations

import json

import pytest

from benchmarks.inputs.tool_reports import trtllm_report
from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse


def parsed(document: dict, **options):
    data = json.dumps(document, indent=4).encode()
    return parse(FileInput.from_bytes("report.json", data), ImportOptions(**options))


def test_a_throughput_report_is_a_level_of_every_request_at_once():
    result = parsed(trtllm_report(), gpu="h100-sxm")
    assert result.importer == "trtllm-bench"
    (run,) = result.runs
    assert (run.tool, run.engine, run.engine_version, run.dtype) == (
        "trtllm-bench",
        "tensorrt-llm",
        "1.0.0",
        "bfloat16",
    )
    assert (run.model, run.gpu_model, run.gpu_count, run.tensor_parallel_size) == (
        "meta-llama/Llama-3.1-8B-Instruct",
        "h100-sxm",
        1,
        1,
    )
    assert run.variant == (
        "--backend=Pytorch --quantization=FP8 --max-batch-size=512 --max-num-tokens=2048 "
        "--scheduling-policy=GUARANTEED_NO_EVICT --kv-cache-percentage=0.9"
    )
    assert (run.dataset, run.input_len, run.output_len) == ("synthetic", 128, 128)
    (point,) = run.points
    assert point.offered_rate_rps == 1e9 and point.max_concurrency is None
    assert (point.completed, point.duration_s, point.request_throughput_rps) == (1000, 10.0, 100.0)
    assert point.e2el_p99_ms == pytest.approx(3800 * 1.8) and point.e2el_mean_ms == 3800.0
    assert point.ttft_p50_ms == pytest.approx(380.0) and point.tpot_p99_ms == pytest.approx(48.24)
    assert point.itl_p50_ms is None  # trtllm-bench reports no gaps between chunks


def test_a_concurrency_limited_run_is_a_closed_loop_at_its_measured_mean_in_flight():
    # 100 req/s of 3.8 s each: 380 in flight by Little's law, as the report measured
    result = parsed(trtllm_report(issue_rate=104.0, in_flight=379.6), gpu="h100-sxm")
    (point,) = result.runs[0].points
    assert point.offered_rate_rps is None and point.max_concurrency == 380
    assert any("does not write its --concurrency" in w for w in result.warnings)


def test_without_streaming_only_the_request_latency_is_known():
    result = parsed(trtllm_report(streaming=False), gpu="h100-sxm")
    (point,) = result.runs[0].points
    assert point.ttft_p99_ms is None and point.e2el_p99_ms is not None
    assert any("no streaming_metrics" in w for w in result.warnings)


def test_the_gpu_is_asked_for_unless_the_report_names_its_machine():
    with pytest.raises(InputError, match="--gpu"):
        parsed(trtllm_report())
    named = trtllm_report() | {"machine": {"name": "NVIDIA H100 80GB HBM3", "memory.total": 79.6}}
    assert parsed(named).runs[0].gpu_model == "h100-sxm"


def test_a_report_without_its_duration_is_refused_naming_it():
    broken = trtllm_report()
    del broken["performance"]["total_latency_ms"]
    with pytest.raises(InputError) as caught:
        parsed(broken, gpu="h100-sxm")
    assert "total_latency_ms" in str(caught.value)
