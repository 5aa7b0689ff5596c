"""Result files of SGLang's `bench_serving`, trtllm-bench and llm-d-benchmark, written the way each
tool's writer builds them (fleetplan has no real run of these tools): SGLang 0.5.23's
`sglang/benchmark/serving.py` (`json.dumps` of its `result` dict, one line per run), TensorRT-LLM's
`tensorrt_llm/bench/dataclasses/reporting.py` (ReportUtility.get_statistics_dict at commit
2787769c), and llm-d-benchmark's schema_v0_2.py `scenario` block. Tests and the fuzz seeds
(`benchmarks.inputs.fuzzing`) read them."""

from __future__ import annotations

import json
import math

import yaml

REAL_CLIENTS_PARTIAL = "inference-perf.partial.stage_1.yaml"


def sglang_line(rate: float, *, concurrency: int | None = None, seed: int = 0, **changes) -> dict:
    """A line of sglang 0.5's key set: 200 requests of fixed random lengths 512/128."""
    load = min(rate, concurrency or 40)
    completed, duration = 200, 200 / load * 1.04 + seed * 0.01
    ttft, tpot = 40.0 + load, 2.0 + 0.05 * load
    e2e = ttft + tpot * 127
    line = {
        "tag": None,
        "backend": "sglang-oai",
        "dataset_name": "random",
        "request_rate": rate,
        "max_concurrency": concurrency,
        "sharegpt_output_len": None,
        "random_input_len": 512,
        "random_output_len": 128,
        "random_range_ratio": 1.0,
        "server_info": {
            "model_path": "Qwen/Qwen3-8B",
            "tp_size": 2,
            "dp_size": 1,
            "version": "0.5.23",
            "enable_dp_attention": False,
        },
        "duration": duration,
        "completed": completed,
        "total_input_tokens": 512 * completed,
        "total_input_text_tokens": 512 * completed,
        "total_input_vision_tokens": 0,
        "total_output_tokens": 128 * completed,
        "total_output_tokens_retokenized": 128 * completed - 3,
        "request_throughput": completed / duration,
        "input_throughput": 512 * completed / duration,
        "output_throughput": 128 * completed / duration,
        "total_throughput": 640 * completed / duration,
        "concurrency": e2e / 1000 * completed / duration,
        "accept_length": None,
        "max_output_tokens_per_s": 2000.0,
        "max_concurrent_requests": 40,
    }
    for metric, mean in (("e2e_latency", e2e), ("ttft", ttft), ("tpot", tpot), ("itl", tpot)):
        for stat, factor in (("mean", 1), ("median", 0.95), ("std", 0.2), ("p90", 1.4)):
            line[f"{stat}_{metric}_ms"] = mean * factor
        line[f"p95_{metric}_ms"], line[f"p99_{metric}_ms"] = mean * 1.6, mean * 2.1
    return line | changes


def sglang_jsonl(*lines: dict) -> bytes:
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


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


def trtllm_report(
    *, issue_rate: float = 1e9, in_flight: float = 380.0, streaming: bool = True
) -> dict:
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


LLMD_SCENARIO = {
    "load": {
        "metadata": {"schema_version": "0.0.1"},
        "standardized": {
            "tool": "inference-perf",
            "tool_version": "0.7.0",
            "stage": 1,
            "rate_qps": 4.0,
            "input_seq_len": {"distribution": "fixed", "value": 128},
            "output_seq_len": {"distribution": "fixed", "value": 16},
            "source": "random",
        },
    },
    "stack": [
        {
            "metadata": {"schema_version": "0.0.1", "label": "decode"},
            "standardized": {
                "kind": "inference_engine",
                "tool": "vllm",
                "tool_version": "0.11.0",
                "role": "replica",
                "replicas": 2,
                "model": {"name": "meta-llama/Llama-3.1-8B-Instruct"},
                "accelerator": {
                    "model": "nvidia-h100-80gb",
                    "count": 1,
                    "parallelism": {"tp": 1, "dp": 1, "pp": 1, "ep": 1},
                },
            },
            "native": {
                "args": {"--max-num-seqs": 128, "--enable-prefix-caching": None, "--port": 8000},
                "envars": {},
            },
        }
    ],
}


def llmd_report(partial: bytes, *, accelerator: bool = True) -> bytes:
    """inference-perf 0.7.0's own report of a stage (`partial`: its
    inference-perf.partial.stage_N.yaml) with the scenario block llm-d's harness adds; its
    stack without the accelerator (the GPU for the user to say) where `accelerator` is False."""
    document = yaml.safe_load(partial)
    scenario = json.loads(json.dumps(LLMD_SCENARIO))
    if not accelerator:
        for component in scenario["stack"]:
            component["standardized"].pop("accelerator")
    document["scenario"] = scenario
    return yaml.safe_dump(document, sort_keys=False).encode()


def genai_bench_level(
    *, concurrency: int = 4, requests: int = 40, errors: int = 0, unit: str = "s", seed: int = 7
) -> dict:
    """A level's file of genai-bench 0.0.2 (`aggregated_metrics`, `individual_request_metrics`),
    100 prompt and 100 output tokens a request, figures of our own."""
    import numpy as np

    rng = np.random.default_rng(seed)
    scale = 1000.0 if unit == "ms" else 1.0
    rows = []
    for _ in range(requests):
        ttft = float(rng.uniform(0.05, 0.2))
        output = ttft + 99 * float(rng.uniform(0.008, 0.012))
        rows.append(
            {
                "ttft": ttft * scale,
                "tpot": (output - ttft) / 99 * scale,
                "e2e_latency": output * scale,
                "num_input_tokens": 106,
                "num_output_tokens": 100,
                "error_code": None,
            }
        )
    rows += [{"ttft": None, "e2e_latency": None, "error_code": 500}] * errors
    ttfts = [r["ttft"] for r in rows[:requests]]
    ttft_stats = {"mean": float(np.mean(ttfts)), "p99": float(np.percentile(ttfts, 99))}
    duration = requests * 1.1 / concurrency
    return {
        "_time_unit": unit,
        "aggregated_metrics": {
            "scenario": "D(100,100)",
            "num_concurrency": concurrency,
            "iteration_type": "num_concurrency",
            "run_duration": duration,
            "requests_per_second": requests / duration,
            "mean_output_throughput_tokens_per_s": 100 * requests / duration,
            "mean_total_tokens_throughput_tokens_per_s": 206 * requests / duration,
            "num_completed_requests": requests,
            "num_error_requests": errors,
            "stats": {
                "ttft": ttft_stats,
                "num_input_tokens": {"mean": 106.0},
                "num_output_tokens": {"mean": 100.0},
            },
        },
        "individual_request_metrics": rows,
    }


LLM_LOAD_TEST_CONFIG = {
    "output": {"format": "json", "dir": "./output/", "file": "output.json"},
    "plugin": "openai_plugin",
    "plugin_options": {"host": "http://vllm:8000", "model_name": "acme/Model-8B"},
    "load_options": {"type": "constant", "concurrency": 4, "duration": 30},
    "dataset": {"file": "datasets/openorca_subset.jsonl", "max_queries": 1000},
}


def llm_load_test_requests(
    layout: str = "current", *, n: int = 30, failed: int = 0, seed: int = 3
) -> tuple[list[dict], list[float]]:
    """llm-load-test's per-request results in its 2023 layout (`start`, `end`, `TTFT` in ms) or
    its current one (src/llm_load_test/result.py: `start_time`, `first_token_time`, ...), every
    request 20 ms a token after its first; and the successful requests' TTFTs (s)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows, ttfts = [], []
    t = 1_700_000_000.0
    for i in range(n + failed):
        ttft, tokens = float(rng.uniform(0.05, 0.3)), int(rng.integers(50, 200))
        end = t + ttft + (tokens - 1) * 0.02
        if layout == "2023":
            row = {
                "start": t,
                "end": end,
                "TTFT": ttft * 1000,
                "TPOT": 21.0,
                "response_time": end - t,
                "output_tokens": tokens,
                "input_tokens": 300,
            }
        else:
            row = {
                "start_time": t,
                "first_token_time": t + ttft,
                "end_time": end,
                "response_time": 1000 * (end - t),
                "ttft": 1000 * ttft,
                "tpot": 21.0,
                "output_tokens": tokens,
                "input_tokens": 300,
                "error_code": None,
                "error_text": None,
            }
        if i >= n:
            row |= {"error_code": 500, "error_text": "Internal Server Error"}
        else:
            ttfts.append(ttft)
        rows.append(row)
        t += 0.25
    return rows, ttfts


def mlperf_server_summary(*, target_qps: float = 50.0, ttft_p99_ns: int = 450_000_000) -> str:
    """MLPerf LoadGen's `mlperf_log_summary.txt` of an LLM Server run, in LoadGen's layout
    (mlcommons/inference loadgen's `PerformanceSummary::LogSummary`), figures of our own."""
    bar = "=" * 48
    return f"""{bar}
MLPerf Results Summary
{bar}
SUT name : llama2-70b-Server-SUT
Scenario : Server
Mode     : PerformanceOnly
Completed samples per second    : {target_qps * 0.99:.2f}
Completed tokens per second: {target_qps * 280:.2f}
Result is : VALID
  Performance constraints satisfied : Yes
  Min duration satisfied : Yes
  Min queries satisfied : Yes
  Early stopping satisfied: Yes

{bar}
Additional Stats
{bar}
Scheduled samples per second : {target_qps * 1.005:.2f}
Mean latency (ns)               : 30000000000
50.00 percentile latency (ns)   : 28000000000
90.00 percentile latency (ns)   : 60000000000
99.00 percentile latency (ns)   : 110000000000

Mean First Token latency (ns)               : 200000000
50.00 percentile first token latency (ns)   : 180000000
99.00 percentile first token latency (ns)   : {ttft_p99_ns}

Mean Time to Output Token (ns)                : 120000000
50.00 percentile time to output token (ns)   : 121000000
99.00 percentile time to output token (ns)   : 146000000

{bar}
Test Parameters Used
{bar}
samples_per_query : 1
target_qps : {target_qps:g}
min_duration (ms): 600000
min_query_count : 100
"""


def trtllm_text_log() -> str:
    """The end of a trtllm-bench log: its text report in the later layout (reporting.py's
    `report_statistics`: MACHINE DETAILS, REQUEST DETAILS, [TTFT]/[TPOT]/[Latency] lines),
    figures of our own."""
    bar = "=" * 59
    return f"""{bar}
= PYTORCH BACKEND
{bar}
Model:\t\t\tacme/Llama-8B
Model Path:\t\tNone
TensorRT LLM Version:\t1.1.0
Dtype:\t\t\tbfloat16
KV Cache Dtype:\t\tNone
Quantization:\t\tNone

{bar}
= MACHINE DETAILS \n{bar}
NVIDIA H100 80GB HBM3, memory 79.65 GB, 2.62 GHz

{bar}
= WORLD + RUNTIME INFORMATION \n{bar}
TP Size:                1
PP Size:                1
EP Size:                None
Max Runtime Batch Size: 512
Max Runtime Tokens:     8192
Scheduling Policy:      GUARANTEED_NO_EVICT
KV Memory Percentage:   90.00%
Issue Rate (req/sec):   4.1520E+00

{bar}
= REQUEST DETAILS \n{bar}
Number of requests:             500
Number of concurrent requests:  31.7000
Average Input Length (tokens):  1000.0000
Average Output Length (tokens): 200.0000
{bar}
= PERFORMANCE OVERVIEW \n{bar}
Request Throughput (req/sec):                     4.1200
Total Output Throughput (tokens/sec):             824.0000
Total Token Throughput (tokens/sec):              4944.0000
Total Latency (ms):                               121359.2233
Average request latency (ms):                     7650.1000
Average time-to-first-token [TTFT] (ms):          95.4000
Average time-per-output-token [TPOT] (ms):        37.9600

-- Per-Request Time-per-Output-Token [TPOT] Breakdown (ms)

[TPOT] MINIMUM: 30.1000
[TPOT] MAXIMUM: 60.2000
[TPOT] AVERAGE: 37.9600
[TPOT] P50    : 36.5000
[TPOT] P90    : 44.0000
[TPOT] P95    : 48.0000
[TPOT] P99    : 55.0000

-- Per-Request Time-to-First-Token [TTFT] Breakdown (ms) \n
[TTFT] MINIMUM: 40.0000
[TTFT] MAXIMUM: 900.0000
[TTFT] AVERAGE: 95.4000
[TTFT] P50    : 80.0000
[TTFT] P90    : 150.0000
[TTFT] P95    : 200.0000
[TTFT] P99    : 600.0000

-- Request Latency Breakdown (ms) -----------------------

[Latency] P50    : 7600.0000
[Latency] P90    : 8400.0000
[Latency] P95    : 8700.0000
[Latency] P99    : 9800.0000
[Latency] MINIMUM: 6000.0000
[Latency] MAXIMUM: 11000.0000
[Latency] AVERAGE: 7650.1000
"""


def inferencex_session_result() -> dict:
    """An InferenceX session result (scenario_type agentic-coding) in its layout, figures of our
    own."""

    def stats(mean: float) -> dict:
        return {
            "mean": mean,
            "p50": 0.7 * mean,
            "p75": 1.2 * mean,
            "p90": 2 * mean,
            "p95": 3 * mean,
            "std": mean,
        }

    return {
        "hw": "h200",
        "conc": 16,
        "image": "lmsysorg/sglang:v0.5.20-cu129",
        "model": "acme/Model-30B",
        "framework": "sglang",
        "precision": "fp8",
        "spec_decoding": "mtp",
        "disagg": False,
        "scenario_type": "agentic-coding",
        "num_gpus": 2,
        "tp": 2,
        "ep": 1,
        "num_requests_total": 1200,
        "num_requests_successful": 1100,
        "request_accounting": {
            "records_total": 1200,
            "records_profiled": 1100,
            "records_warmup_dropped": 80,
            "records_error_dropped": 20,
        },
        "dataset": {"loader": "acme_agent_traces"},
        "request_metrics": {
            "latency": {
                "ttft": stats(0.8),
                "e2el": stats(4.5),
                "itl": stats(0.005),
                "tpot": stats(0.005),
            },
            "tokens": {"input": {"mean": 150000.0}, "output_actual": {"mean": 900.0}},
            "throughput": {
                "output": {"tokens_per_second": 495.0},
                "total": {"tokens_per_second": 82995.0},
                "duration_seconds": 2000.0,
            },
            "cache": {"theoretical_cache_hit_rate": 0.97},
        },
    }


def _banner_line(key: str, value: object) -> str:
    return f"{key:<40} {value:<10}"  # as both tools print it


def _banner_stats(title: str, metric: str, stats: dict[str, float]) -> list[str]:
    lines = ["{s:{c}^{n}}".format(s=title, n=50, c="-")]
    return lines + [_banner_line(f"{stat} {metric} (ms):", f"{v:.2f}") for stat, v in stats.items()]


def vllm_console_log(
    *, rate: float = math.inf, concurrency: int | None = 16, model: str = "acme/Llama-8B"
) -> str:
    """The console log of `vllm bench serve` (vllm/benchmarks/serve.py): its arguments, the load
    it prints before the run, and its result banner, figures of our own."""
    cap = "None" if concurrency is None else concurrency
    lines = [
        "INFO 09-04 20:33:17 [__init__.py:241] Automatically detected platform cuda.",
        f"Namespace(subparser='bench', bench_type='serve', seed=0, num_prompts=200, "
        f"dataset_name='random', dataset_path=None, random_input_len=1000, "
        f"random_output_len=200, random_range_ratio=0.0, endpoint_type='openai', label=None, "
        f"backend='vllm', base_url=None, host='127.0.0.1', port=8000, model='{model}', "
        f"request_rate={rate}, burstiness=1.0, max_concurrency={concurrency}, save_result=False)",
        "Starting initial single prompt test run...",
        f"Traffic request rate: {rate}",
        "Burstiness factor: 1.0 (Poisson process)",
        f"Maximum request concurrency: {cap}",
        "100%|██████████| 200/200 [00:48<00:00,  4.12it/s]",
        "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
        _banner_line("Successful requests:", 198),
        _banner_line("Failed requests:", 2),
    ]
    if concurrency is not None:
        lines.append(_banner_line("Maximum request concurrency:", concurrency))
    if math.isfinite(rate):
        lines.append(_banner_line("Request rate configured (RPS):", f"{rate:.2f}"))
    lines += [
        _banner_line("Benchmark duration (s):", "48.06"),
        _banner_line("Total input tokens:", 198000),
        _banner_line("Total generated tokens:", 39600),
        _banner_line("Request throughput (req/s):", "4.12"),
        _banner_line("Output token throughput (tok/s):", "823.97"),
        _banner_line("Peak output token throughput (tok/s):", "1104.00"),
        _banner_line("Peak concurrent requests:", "16.00"),
        _banner_line("Total Token throughput (tok/s):", "4943.82"),
        *_banner_stats("Time to First Token", "TTFT", {"Mean": 95.4, "Median": 80.0, "P99": 600}),
        *_banner_stats(
            "Time per Output Token (excl. 1st token)",
            "TPOT",
            {"Mean": 37.96, "Median": 36.5, "P99": 55.0},
        ),
        *_banner_stats("Inter-token Latency", "ITL", {"Mean": 37.5, "Median": 35.1, "P99": 70.2}),
        "=" * 50,
        "",
    ]
    return "\n".join(lines)


def sglang_console_log(*, rate: str = "inf", concurrency: int | str = 32) -> str:
    """The console log of SGLang's `bench_serving` (python/sglang/bench_serving.py): its
    arguments and its result banner (which states the load), figures of our own."""
    lines = [
        "Namespace(backend='sglang', base_url=None, host='127.0.0.1', port=30000, "
        "dataset_name='random', dataset_path='', model='acme/Qwen-8B', served_model_name=None, "
        f"num_prompts=400, random_input_len=1024, random_output_len=256, random_range_ratio=1.0, "
        f"request_rate={rate}, max_concurrency={concurrency}, output_file=None)",
        "#Input tokens: 409600",
        "#Output tokens: 102400",
        "",
        "{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
        _banner_line("Backend:", "sglang"),
        _banner_line("Traffic request rate:", rate),
        _banner_line("Max request concurrency:", concurrency),
        _banner_line("Successful requests:", 400),
        _banner_line("Benchmark duration (s):", "80.00"),
        _banner_line("Total input tokens:", 409600),
        _banner_line("Total generated tokens:", 102400),
        _banner_line("Total generated tokens (retokenized):", 102380),
        _banner_line("Request throughput (req/s):", "5.00"),
        _banner_line("Input token throughput (tok/s):", "5120.00"),
        _banner_line("Output token throughput (tok/s):", "1280.00"),
        _banner_line("Total token throughput (tok/s):", "6400.00"),
        _banner_line("Concurrency:", "31.20"),
        *_banner_stats(
            "End-to-End Latency", "E2E Latency", {"Mean": 6240, "Median": 6100, "P99": 9100}
        ),
        *_banner_stats("Time to First Token", "TTFT", {"Mean": 120, "Median": 110, "P99": 480}),
        *_banner_stats(
            "Time per Output Token (excl. 1st token)",
            "TPOT",
            {"Mean": 24.0, "Median": 23.5, "P99": 33.0},
        ),
        *_banner_stats(
            "Inter-token Latency",
            "ITL",
            {"Mean": 24.0, "Median": 22.0, "P95": 30.0, "P99": 61.0, "Max": 900.0},
        ),
        "=" * 50,
        "",
    ]
    return "\n".join(lines)
