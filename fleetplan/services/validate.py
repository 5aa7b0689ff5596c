"""`fleetplan validate`: one real server of a planned pool, run at the pool's planned rate per
server and at 1.2x it with fleetplan's own collector, and each target judged: holds, misses, or
cannot tell.

- The load: the class's token shape (its `input_len` / `output_len`, or those given), Poisson
  arrivals at the pool's planned rate per server (its rate over its servers) and at 1.2x it,
  `MIN_REQUESTS` requests or more per level (a P99 needs them: below 367 requests no sample
  bounds a P99 from above at 95 %, two-sided).
- The verdict on a P99: a distribution-free 95 % confidence interval from the order statistics
  (the number of requests at or under the true P99 is Binomial(n, 0.99)): the interval's upper
  end within the target, it holds; its lower end above the target, it misses; between, the run
  cannot tell (more requests narrow it). A failed request counts as an infinite TTFT and TPOT.
- Whether each level kept up (`core.load.judge_point`, as ingest judges it): P99s within their
  targets over 400 requests while the queue grew hold only for a run that short, and a level
  that fell behind proves no rate in the next plan, so the report says so beside the verdicts.
- The run is a normal run file (`validate-<pool>-<time>.json`, its metadata naming the plan and
  pool): ingested, its levels join that configuration's, so the next plan's capacity interval
  rests on them too, and a pool whose capacity rests on one names the file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import binom

from fleetplan.core.contract import Point, RunFile
from fleetplan.core.errors import InputError
from fleetplan.core.load import judge_point

MIN_REQUESTS = 400
STEP_UP = 1.2
CONFIDENCE = 0.95
QUANTILE = 0.99


@dataclass(frozen=True)
class PoolUnderTest:
    pool: str  # "class/Nx-gpu", as the router export names it
    traffic_class: str
    gpu_model: str
    gpus_per_server: int
    servers: int
    rate_per_server: float
    server: str
    model: str
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    input_len: int | None
    output_len: int | None


def _pool_name(entry: Mapping) -> str:
    return f"{entry['traffic_class']}/{entry['gpus_per_server']}x-{entry['gpu_model']}"


def pool_of(raw: Mapping, name: str) -> PoolUnderTest:
    """The pool `name` of a plan JSON, with its class's targets and shape (InputError names the
    pools there are)."""
    pools = [p for p in (raw.get("recommended") or {}).get("pools") or [] if p.get("servers")]
    found = [p for p in pools if _pool_name(p) == name]
    if not found:
        raise InputError(
            f"no pool {name!r} in the plan: its pools are "
            + (", ".join(_pool_name(p) for p in pools) or "none"),
            field="pool",
        )
    pool = found[0]
    scenario = (raw.get("inputs") or {}).get("scenario") or {}
    classes = {c.get("name"): c for c in scenario.get("classes") or [] if isinstance(c, Mapping)}
    entry = classes.get(pool["traffic_class"])
    if entry is None:
        raise InputError(
            "the plan has no inputs.scenario.classes for its targets: write it with `fleetplan "
            "plan --scenario FILE --json plan.json`",
            field="plan",
        )
    return PoolUnderTest(
        pool=name,
        traffic_class=pool["traffic_class"],
        gpu_model=pool["gpu_model"],
        gpus_per_server=int(pool["gpus_per_server"]),
        servers=int(pool["servers"]),
        rate_per_server=float(pool["rate_rps"]) / int(pool["servers"]),
        server=str(pool.get("server") or ""),
        model=str(entry.get("model") or scenario.get("model") or raw.get("model") or ""),
        ttft_p99_ms=entry.get("ttft_p99_ms"),
        tpot_p99_ms=entry.get("tpot_p99_ms"),
        input_len=entry.get("input_len"),
        output_len=entry.get("output_len"),
    )


def rates(pool: PoolUnderTest) -> tuple[float, float]:
    if not (math.isfinite(pool.rate_per_server) and pool.rate_per_server > 0):
        raise InputError(f"pool {pool.pool} carries no rate to validate", field="pool")
    return pool.rate_per_server, pool.rate_per_server * STEP_UP


def p99_interval(values: np.ndarray) -> tuple[float, float, float]:
    """The sample P99 and its distribution-free 95 % interval (module docstring); the upper end
    inf where the sample is too small to bound it."""
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n == 0:
        return math.nan, math.nan, math.inf
    tail = (1 - CONFIDENCE) / 2
    ranks = np.arange(n + 2)
    below = binom.cdf(ranks - 1, n, QUANTILE)  # P(B < k)
    lower_rank = int(ranks[below <= tail].max()) if (below <= tail).any() else 0
    above = 1 - binom.cdf(ranks - 1, n, QUANTILE)  # P(B >= k)
    fits = ranks[(above <= tail) & (ranks >= 1)]
    upper_rank = int(fits.min()) if len(fits) else n + 1
    low = x[lower_rank - 1] if lower_rank >= 1 else -math.inf
    high = x[upper_rank - 1] if upper_rank <= n else math.inf
    q = float(np.percentile(np.where(np.isfinite(x), x, np.finfo(float).max), 99))
    return (math.inf if q >= np.finfo(float).max / 2 else q), float(low), float(high)


def verdict(low: float, high: float, target: float | None) -> str:
    if target is None:
        return "no target"
    if high <= target:
        return "holds"
    if low > target:
        return "misses"
    return "cannot tell"


def per_request(point: Point) -> tuple[np.ndarray, np.ndarray]:
    """A level's TTFT and TPOT per request (ms; inf for a failed request; TPOT of requests of
    two tokens or more)."""
    log = point.requests
    if log is None:
        raise InputError("the level kept no per-request timings", field="requests")
    ttft, tpot = [], []
    for error, first, last, out in zip(
        log.error, log.ttft_s, log.e2el_s, log.output_tokens, strict=True
    ):
        if error or first is None or last is None:
            ttft.append(math.inf)
            tpot.append(math.inf)
            continue
        ttft.append(first * 1000)
        if out > 1:
            tpot.append((last - first) / (out - 1) * 1000)
    return np.array(ttft), np.array(tpot)


def judge(run_file: RunFile, pool: PoolUnderTest) -> list[dict]:
    """Per level of the run: its rate, requests, and per target the P99, interval, verdict."""
    levels = []
    for run in run_file.runs:
        for point in run.points:
            ttft, tpot = per_request(point)
            load = judge_point(point)
            entry = {
                "rate_rps": point.offered_rate_rps,
                "requests": point.requests_sent,
                "failed": point.failed,
                "throughput_rps": point.request_throughput_rps,
                # what the next plan reads of the level: only one that kept up can prove a rate
                "load": {"kept_up": load.stable, "reason": load.reason},
            }
            for metric, values, target in (
                ("ttft", ttft, pool.ttft_p99_ms),
                ("tpot", tpot, pool.tpot_p99_ms),
            ):
                p99, low, high = p99_interval(values)
                entry[metric] = {
                    "p99_ms": _finite(p99),
                    "interval_ms": [_finite(low), _finite(high)],
                    "target_ms": target,
                    "verdict": verdict(low, high, target),
                }
            levels.append(entry)
    return sorted(levels, key=lambda e: e["rate_rps"] or 0.0)


def _finite(value: float) -> float | None:
    return round(value, 3) if math.isfinite(value) else None


def file_name(pool: PoolUnderTest, stamp: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9.-]+", "-", pool.pool).strip("-")
    return f"validate-{slug}-{stamp}.json"


def mark(path: Path, pool: PoolUnderTest, plan: str) -> Path:
    """Rename the collector's run file to the validation's name, its runs' metadata naming the
    plan and pool; the new path."""
    run_file = RunFile.model_validate_json(path.read_bytes())
    note = {
        "validate_plan": plan,
        "validate_pool": pool.pool,
        "validate_rate_per_server_rps": f"{pool.rate_per_server:g}",
    }
    runs = tuple(
        r.model_copy(update={"metadata": {**(r.metadata or {}), **note}}) for r in run_file.runs
    )
    marked = run_file.model_copy(update={"runs": runs})
    target = path.with_name(file_name(pool, path.name.split("-", 1)[0]))
    target.write_bytes(marked.model_dump_json(exclude_none=True).encode())
    path.unlink()
    return target
