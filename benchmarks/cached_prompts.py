"""Which io.net levels found their prompts in vLLM's prefix cache, and a request's time outside
the engine's steps: `benchmarks/replay.py --cached-prompts` (its docstring, 4.) replays the
levels as they were taken. A module of its own, importable without the benchmarks' path."""

from __future__ import annotations

import math

import pandas as pd

from fleetplan.planner.estimate.calibrate import level_tokens
from fleetplan.planner.estimate.serving import Shape, kv_cache_tokens
from fleetplan.services.envelope import bundled_architectures
from fleetplan.services.estimate import bundled_specs


def api_time(rows: pd.DataFrame) -> float:
    """A request's time outside the engine's steps (tokenising, the HTTP round, streaming the
    first token) in a configuration whose lowest level found its prompts cached: that level's
    median TTFT less the median wait for the step under way and its own step (1.5 median TPOT),
    where that is at most a step. Elsewhere 0: an uncached prefill's calibration already holds
    it, as before."""
    first = float(rows["offered_rate_rps"].max())
    low = rows.loc[rows["offered_rate_rps"].idxmin()]
    if not cached_level(low.to_dict(), first):
        return 0.0
    step = float(low["tpot_p50_ms"])
    rest = float(low["ttft_p50_ms"]) - 1.5 * step
    # More than a step left over is the host stalling (the tensor-parallel RTX 4090 servers'
    # seconds at 1 and 4 req/s), not a request's fixed cost: not explained away.
    return rest if 0 < rest <= step else 0.0


def holds_the_run(row: dict) -> bool:
    """Whether the configuration's KV cache (vLLM's allocation at 0.9, `kv_cache_tokens`)
    holds every token of a whole 200-request run: only then are the prompts still cached when
    the next level sends them again (a prefix cache evicts the least recently used blocks, and a
    run that cycles through more blocks than the cache holds finds none of them)."""
    arch = bundled_architectures().get(str(row["model"]).lower())
    spec = bundled_specs().get(str(row["gpu_model"]))
    if arch is None or spec is None:
        return False
    tp = int(row.get("tensor_parallel_size") or row["gpu_count"])
    kv = kv_cache_tokens(Shape.of(arch), spec, tp)
    tokens = float(row["requests_sent"] or 200) * sum(level_tokens(row) or (math.inf, 0))
    return kv >= tokens


def cached_level(row: dict, first: float) -> bool:
    """A level that found its prompts in the prefix cache (benchmarks/replay.py's docstring, 4.)."""
    return float(row["offered_rate_rps"]) < first and holds_the_run(row)


def as_cached(points: pd.DataFrame) -> pd.DataFrame:
    """`points` with the levels that found their prompts cached (`cached_level`) holding a
    one-token prompt, as they ran."""
    first = points.groupby(["model", "gpu_model", "gpu_count"])["offered_rate_rps"].transform("max")
    out = points.copy()
    hit = [cached_level(r, f) for r, f in zip(out.to_dict("records"), first, strict=True)]
    out.loc[hit, "input_tokens_mean"] = 1.0
    # the engine's part of their TTFT: less the request's time outside it (`api_time`)
    for _, rows in out.groupby(["model", "gpu_model", "gpu_count"]):
        api = api_time(rows)
        if api > 0:
            out.loc[rows.index, "ttft_p50_ms"] = rows["ttft_p50_ms"] - api
    return out
