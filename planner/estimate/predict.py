"""From the serving model to what the planner needs: a server's saturation rate, its P99 TTFT
and TPOT against an open-loop (Poisson) rate up to saturation, and the highest rate meeting
P99 targets on that curve.

A server of n GPUs runs n / tp replicas; a router spreads its arrivals evenly, so each replica
sees rate / replicas (Poisson thinned is Poisson) and the server carries replicas x a replica's
rate. Saturation is the throughput of a replica kept full: every request arriving at once, its
completions counted over the middle half of the run (the ramp up and the drain left out).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fleetplan.planner.estimate.serving import Efficiencies, Server
from fleetplan.planner.estimate.simulate import Outcome, Traffic, simulate

# The curve's rates as shares of saturation: from near 0 to saturation, denser near the knee.
SHARES = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0)
# Requests a curve point simulates: two minutes of arrivals, at least 400 (a P99 on the 4
# slowest) and at most 4,000, so that a queue near saturation has time to build.
CURVE_SECONDS = 120.0
CURVE_REQUESTS = (400, 4000)
SATURATION_REQUESTS = 1200


@dataclass(frozen=True, slots=True)
class CurvePoint:
    rate_rps: float  # the server's offered rate
    ttft_p99_ms: float
    tpot_p99_ms: float
    ttft_p50_ms: float
    tpot_p50_ms: float
    throughput_rps: float


@dataclass(frozen=True, slots=True)
class Prediction:
    """A server's estimated saturation and curve, with what they rest on."""

    saturation_rps: float
    curve: tuple[CurvePoint, ...]
    kv_tokens: float  # the server's KV cache, all replicas
    replicas: int

    def capacity(self, ttft_p99_ms: float | None, tpot_p99_ms: float | None) -> CurvePoint | None:
        """The highest rate on the curve whose P99s meet the targets (linear between curve
        points where a target is crossed); None where even the lowest point misses."""

        def meets(point: CurvePoint) -> bool:
            return (ttft_p99_ms is None or point.ttft_p99_ms <= ttft_p99_ms) and (
                tpot_p99_ms is None or point.tpot_p99_ms <= tpot_p99_ms
            )

        best = None
        for before, after in zip((None, *self.curve), self.curve, strict=False):
            if not meets(after):
                if before is not None and best is before:
                    best = _crossing(before, after, ttft_p99_ms, tpot_p99_ms)
                break
            best = after
        return best


def _crossing(low: CurvePoint, high: CurvePoint, ttft, tpot) -> CurvePoint:
    """The point between two curve points where the first target is reached (linear)."""
    share = 1.0
    for target, a, b in (
        (ttft, low.ttft_p99_ms, high.ttft_p99_ms),
        (tpot, low.tpot_p99_ms, high.tpot_p99_ms),
    ):
        if target is not None and b > target >= a and b > a:
            share = min(share, (target - a) / (b - a))
    mix = lambda x, y: x + share * (y - x)  # noqa: E731
    return CurvePoint(
        rate_rps=mix(low.rate_rps, high.rate_rps),
        ttft_p99_ms=mix(low.ttft_p99_ms, high.ttft_p99_ms),
        tpot_p99_ms=mix(low.tpot_p99_ms, high.tpot_p99_ms),
        ttft_p50_ms=mix(low.ttft_p50_ms, high.ttft_p50_ms),
        tpot_p50_ms=mix(low.tpot_p50_ms, high.tpot_p50_ms),
        throughput_rps=mix(low.throughput_rps, high.throughput_rps),
    )


def saturation_of(
    server: Server, eff: Efficiencies, traffic: Traffic, kv: float, seed: int
) -> float:
    """One replica's throughput kept full (module docstring)."""
    full = simulate(
        server,
        eff,
        traffic,
        rate_rps=math.inf,
        requests=SATURATION_REQUESTS,
        kv_tokens=kv,
        seed=seed,
    )
    finish = np.sort(full.e2el_ms) / 1000  # arrivals at 0: E2EL is the completion time
    n = len(finish)
    low, high = n // 4, (3 * n) // 4
    span = finish[high] - finish[low]
    return (high - low) / span if span > 0 else full.throughput_rps


def predict(
    server: Server,
    eff: Efficiencies,
    traffic: Traffic,
    *,
    gpu_count: int,
    kv_tokens_per_replica: float,
    seed: int = 0,
) -> Prediction:
    """The server's saturation and its curve at `SHARES` of it."""
    replicas = max(gpu_count // server.tp, 1)
    per_replica = saturation_of(server, eff, traffic, kv_tokens_per_replica, seed)
    points = []
    for share in SHARES:
        rate = per_replica * share
        requests = int(min(max(rate * CURVE_SECONDS, CURVE_REQUESTS[0]), CURVE_REQUESTS[1]))
        run: Outcome = simulate(
            server,
            eff,
            traffic,
            rate_rps=rate,
            requests=requests,
            kv_tokens=kv_tokens_per_replica,
            seed=seed,
        )
        points.append(
            CurvePoint(
                rate_rps=rate * replicas,
                ttft_p99_ms=run.p("ttft", 99),
                tpot_p99_ms=run.p("tpot", 99),
                ttft_p50_ms=run.p("ttft", 50),
                tpot_p50_ms=run.p("tpot", 50),
                throughput_rps=run.throughput_rps * replicas,
            )
        )
    return Prediction(
        saturation_rps=per_replica * replicas,
        curve=tuple(points),
        kv_tokens=kv_tokens_per_replica * replicas,
        replicas=replicas,
    )
