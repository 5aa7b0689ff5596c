"""benchmarks/replay.py --cached-prompts: which io.net levels found their prompts in vLLM's
prefix cache (the same 200 prompts sent again, minutes later, to a server whose cache held the
whole previous run) and a request's time outside the engine's steps."""

from __future__ import annotations

import pandas as pd
import pytest

from benchmarks.cached_prompts import api_time, as_cached, cached_level, holds_the_run

LLAMA_8B = "meta-llama/Meta-Llama-3-8B-Instruct"


def level(rate: float, *, model=LLAMA_8B, gpu="h100-pcie", ttft=20.4, tpot=10.6) -> dict:
    return {
        "model": model,
        "gpu_model": gpu,
        "gpu_count": 1,
        "offered_rate_rps": rate,
        "requests_sent": 200,
        "input_tokens_mean": 205.8,
        "output_tokens_mean": 211.6,
        "ttft_p50_ms": ttft,
        "tpot_p50_ms": tpot,
    }


def test_a_run_the_cache_holds_is_cached_on_every_level_but_the_first():
    # Llama-3-8B on one H100 PCIe: ~450,000 tokens of cache against 200 x 417 = 83,000
    assert holds_the_run(level(1.0))
    assert cached_level(level(1.0), first=32.0) and not cached_level(level(32.0), first=32.0)
    # on one RTX 4090 the cache (~40,000 tokens) cannot hold the run: nothing found again
    assert not holds_the_run(level(1.0, gpu="rtx-4090"))
    assert not cached_level(level(1.0, gpu="rtx-4090"), first=32.0)
    # a model of unknown shape: no cache to reason about
    assert not holds_the_run(level(1.0, model="acme/unknown"))


def test_the_time_outside_the_engine_is_what_a_step_does_not_explain_and_at_most_a_step():
    rows = pd.DataFrame([level(32.0, ttft=40.0, tpot=16.0), level(1.0, ttft=20.4, tpot=10.6)])
    assert api_time(rows) == pytest.approx(20.4 - 1.5 * 10.6)
    stalled = pd.DataFrame([level(32.0), level(1.0, ttft=1173.0, tpot=20.0)])
    assert api_time(stalled) == 0.0  # seconds of a host stalling are not a request's fixed cost
    uncached = pd.DataFrame([level(32.0, gpu="rtx-4090"), level(1.0, gpu="rtx-4090")])
    assert api_time(uncached) == 0.0  # its calibration's prefill holds it, as before


def test_the_fit_sees_cached_levels_as_they_ran():
    points = pd.DataFrame([level(32.0, ttft=40.0, tpot=16.0), level(1.0), level(4.0, ttft=21.0)])
    seen = as_cached(points)
    assert list(seen["input_tokens_mean"]) == [205.8, 1.0, 1.0]
    api = 20.4 - 1.5 * 10.6
    assert list(seen["ttft_p50_ms"]) == pytest.approx([40.0 - api, 20.4 - api, 21.0 - api])
    assert list(points["input_tokens_mean"]) == [205.8, 205.8, 205.8]  # not changed in place
