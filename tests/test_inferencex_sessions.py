"""InferenceX's session results (its "agentic-coding" scenario, 2026): a real one of
GLM-5.3-Flash on 4x MI355X with SGLang 0.5.20 was "not a format fleetplan can import" although
InferenceX's other layouts are read (Jacob0226/SGLang-benchmarks@cadb08f, not committed). This
one is written in its layout, with figures of our own."""

from __future__ import annotations

import json

import pytest

from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse


def _stats(mean: float, scale: float = 1.0) -> dict:
    return {k: v * scale for k, v in {"mean": mean, "p50": 0.7 * mean, "p75": 1.2 * mean,
            "p90": 2 * mean, "p95": 3 * mean, "std": mean}.items()}  # fmt: skip


RESULT = {
    "hw": "h200", "conc": 16, "image": "lmsysorg/sglang:v0.5.20-cu129",
    "model": "acme/Model-30B", "framework": "sglang", "precision": "fp8",
    "spec_decoding": "mtp", "disagg": False, "scenario_type": "agentic-coding",
    "num_gpus": 2, "tp": 2, "ep": 1, "dp_attention": "false", "kv_offloading": "none",
    "num_requests_total": 1200, "num_requests_successful": 1100,
    "request_accounting": {"records_total": 1200, "records_profiled": 1100,
                           "records_warmup_dropped": 80, "records_error_dropped": 20},
    "dataset": {"loader": "acme_agent_traces", "hf_dataset_name": "acme/agent-traces"},
    "request_metrics": {
        "qps": {"window_seconds": 1, "samples": 2000, "mean": 0.55},
        "latency": {"ttft": _stats(0.8), "e2el": _stats(4.5), "itl": _stats(0.005),
                    "tpot": _stats(0.005)},
        "tokens": {"input": {"mean": 150000.0}, "output_actual": {"mean": 900.0}},
        "throughput": {"input": {"tokens_per_second": 82500.0},
                       "output": {"tokens_per_second": 495.0},
                       "total": {"tokens_per_second": 82995.0}, "duration_seconds": 2000.0},
        "cache": {"theoretical_cache_hit_rate": 0.97},
    },
}  # fmt: skip


def test_a_session_result_is_a_closed_loop_with_its_p95s_and_no_p99():
    data = json.dumps(RESULT).encode()
    parsed = parse(FileInput.from_bytes("agentic.json", data), ImportOptions())
    assert parsed.importer == "inferencex"
    (run,) = parsed.runs
    assert (run.model, run.gpu_model, run.gpu_count, run.tensor_parallel_size) == (
        "acme/Model-30B",
        "h200",
        2,
        2,
    )
    assert (run.engine, run.engine_version, run.variant) == (
        "sglang",
        "0.5.20",
        "--spec-decoding=mtp",
    )
    assert run.dataset == "acme_agent_traces"
    (point,) = run.points
    assert (point.max_concurrency, point.offered_rate_rps) == (16, None)
    assert (point.completed, point.failed, point.duration_s) == (1100, 20, 2000.0)
    assert point.request_throughput_rps == pytest.approx(0.55)
    assert point.ttft_p95_ms == pytest.approx(2400.0) and point.ttft_p99_ms is None
    assert point.tpot_p50_ms == pytest.approx(3.5) and point.output_throughput_tps == 495.0
    assert any("97% of prompt tokens in the prefix cache" in w for w in parsed.warnings)
    assert "no P99" in point.notes[0]


def test_settings_that_change_the_server_are_its_variant():
    changed = RESULT | {"disagg": True, "ep": 4, "spec_decoding": "none"}
    data = json.dumps(changed).encode()
    (run,) = parse(FileInput.from_bytes("agentic.json", data), ImportOptions()).runs
    assert run.variant == "--ep=4 --disagg"
