"""trtllm-bench's `--report_json`, written here as TensorRT-LLM's
`tensorrt_llm/bench/dataclasses/reporting.py` (ReportUtility.get_statistics_dict, at commit
2787769c) builds it: no real report is committed in a public repository we could find."""

from __future__ import annotations

import json

import pytest

from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse


def percentiles(average: float) -> dict:
    return {
        "p50": average * 0.95,
        "p90": average * 1.3,
        "p95": average * 1.45,
        "p99": average * 1.8,
        "minimum": average * 0.4,
        "maximum": average * 2.2,
        "average": average,
    }


def report(*, issue_rate: float = 1e9, in_flight: float = 380.0, streaming: bool = True) -> dict:
    """A throughput run of 1,000 requests of 128/128 tokens over 10 s on one GPU."""
    document = {
        "engine": {
            "model": "meta-llama/Llama-3.1-8B-Instruct",
            "model_path": "None",
            "engine_dir": "None",
            "version": "1.0.0",
            "backend": "Pytorch",
            "dtype": "bfloat16",
            "kv_cache_dtype": None,
            "quantization": "FP8",
        },
        "world_info": {
            "tp_size": 1,
            "pp_size": 1,
            "ep_size": 1,
            "world_size": 1,
            "max_batch_size": 512,
            "max_num_tokens": 2048,
            "scheduling_policy": "GUARANTEED_NO_EVICT",
            "kv_cache_percentage": 0.9,
            "issue_rate": issue_rate,
        },
        "request_info": {
            "num_requests": 1000,
            "avg_num_concurrent_requests": in_flight,
            "avg_input_length": 128.0,
            "avg_output_length": 128.0,
        },
        "performance": {
            "total_latency_ms": 10000.0,
            "avg_request_latency_ms": 3800.0,
            "request_throughput_req_s": 100.0,
            "system_output_throughput_tok_s": 12800.0,
            "system_total_throughput_tok_s": 25600.0,
            "output_throughput_per_user_tok_s": 33.7,
            "output_throughput_per_gpu_tok_s": 12800.0,
            "request_latency_percentiles_ms": percentiles(3800.0),
        },
        "dataset": {
            "isl_stats": {"p50": 128, "minimum": 128, "maximum": 128, "average": 128.0},
            "osl_stats": {"p50": 128, "minimum": 128, "maximum": 128, "average": 128.0},
            "num_requests": 1000,
            "dataset_path": "/tmp/synthetic_128_128.txt",
        },
    }
    if streaming:
        document["streaming_metrics"] = {
            "token_output_speed_tok_s": 35.0,
            "avg_ttft_ms": 400.0,
            "avg_tpot_ms": 26.8,
            "tpot_percentiles": percentiles(26.8),
            "ttft_percentiles": percentiles(400.0),
            "gen_tps_percentiles": percentiles(35.0),
        }
    return document


def parsed(document: dict, **options):
    data = json.dumps(document, indent=4).encode()
    return parse(FileInput.from_bytes("report.json", data), ImportOptions(**options))


def test_a_throughput_report_is_a_level_of_every_request_at_once():
    result = parsed(report(), gpu="h100-sxm")
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
    result = parsed(report(issue_rate=104.0, in_flight=379.6), gpu="h100-sxm")
    (point,) = result.runs[0].points
    assert point.offered_rate_rps is None and point.max_concurrency == 380
    assert any("does not write its --concurrency" in w for w in result.warnings)


def test_without_streaming_only_the_request_latency_is_known():
    result = parsed(report(streaming=False), gpu="h100-sxm")
    (point,) = result.runs[0].points
    assert point.ttft_p99_ms is None and point.e2el_p99_ms is not None
    assert any("no streaming_metrics" in w for w in result.warnings)


def test_the_gpu_is_asked_for_unless_the_report_names_its_machine():
    with pytest.raises(InputError, match="--gpu"):
        parsed(report())
    named = report() | {"machine": {"name": "NVIDIA H100 80GB HBM3", "memory.total": 79.6}}
    assert parsed(named).runs[0].gpu_model == "h100-sxm"


def test_a_report_without_its_duration_is_refused_naming_it():
    broken = report()
    del broken["performance"]["total_latency_ms"]
    with pytest.raises(InputError) as caught:
        parsed(broken, gpu="h100-sxm")
    assert "total_latency_ms" in str(caught.value)
