"""One request's outcome, and a load level's requests turned into a contract Point."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from fleetplan.core.contract import EnergyMethod, Point, RequestLog, StatsSource
from fleetplan.core.stats import RequestTimings


@dataclass(slots=True)
class RequestResult:
    """A request as the client saw it; a failure is data (`error`), never an exception."""

    start_s: float = 0.0  # when it was sent, from the level's start
    ttft_s: float | None = None
    itl_s: list[float] = field(default_factory=list)  # gaps between streamed chunks
    e2el_s: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


@dataclass(frozen=True, slots=True)
class Energy:
    """GPU energy over a level's window, as telemetry measured it (or not)."""

    method: EnergyMethod = EnergyMethod.NONE
    energy_j: float | None = None
    avg_power_w: float | None = None
    memory_used_gb: float | None = None
    utilization_pct: float | None = None


TIME_DECIMALS = 6  # seconds to the microsecond: finer than a client's clock is precise


def compact(result: RequestResult) -> RequestResult:
    """A result with its times rounded to `TIME_DECIMALS`: a gap of 0.012345 s is written in
    9 characters, not 20 (the standard suite's per-request data then fits the import limit)."""

    def rounded(value: float | None) -> float | None:
        return None if value is None else round(value, TIME_DECIMALS)

    return RequestResult(
        start_s=round(result.start_s, TIME_DECIMALS),
        ttft_s=rounded(result.ttft_s),
        itl_s=[round(gap, TIME_DECIMALS) for gap in result.itl_s],
        e2el_s=rounded(result.e2el_s),
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        error=result.error,
    )


def level_point(
    results: list[RequestResult],
    *,
    duration_s: float,
    offered_rate_rps: float | None,
    max_concurrency: int | None = None,
    burstiness: float | None = None,
    complete: bool = True,
    energy: Energy | None = None,
) -> Point:
    """Throughputs over wall time, latency statistics by fleetplan's definitions (`compact`)."""
    energy = energy or Energy()
    results = [compact(r) for r in results]
    ok = [r for r in results if r.ok]
    input_tokens = sum(r.input_tokens for r in ok)
    output_tokens = sum(r.output_tokens for r in ok)
    duration = max(duration_s, 1e-9)
    stats: dict[str, float | None] = {}
    if ok:
        timings = RequestTimings(
            ttft_s=np.array([r.ttft_s for r in ok], dtype=float),
            e2el_s=np.array([r.e2el_s for r in ok], dtype=float),
            output_tokens=np.array([r.output_tokens for r in ok], dtype=float),
            itl_s=np.array([gap for r in ok for gap in r.itl_s], dtype=float),
        )
        stats = timings.latency_stats()
    log = RequestLog(
        start_s=tuple(r.start_s for r in results),
        ttft_s=tuple(r.ttft_s if r.ok else None for r in results),
        e2el_s=tuple(r.e2el_s if r.ok else None for r in results),
        itl_s=tuple(tuple(r.itl_s) if r.ok else () for r in results),
        input_tokens=tuple(r.input_tokens for r in results),
        output_tokens=tuple(r.output_tokens if r.ok else 0 for r in results),
        error=tuple(r.error[:2000] for r in results),
    )
    return Point(
        offered_rate_rps=offered_rate_rps,
        max_concurrency=max_concurrency,
        burstiness=burstiness
        if offered_rate_rps is not None and not math.isinf(offered_rate_rps)
        else None,
        requests_sent=len(results),
        completed=len(ok),
        failed=len(results) - len(ok),
        complete=complete,
        duration_s=duration,
        request_throughput_rps=len(ok) / duration,
        output_throughput_tps=output_tokens / duration,
        total_throughput_tps=(input_tokens + output_tokens) / duration,
        input_tokens_mean=input_tokens / len(ok) if ok else None,
        output_tokens_mean=output_tokens / len(ok) if ok else None,
        stats_source=StatsSource.RECOMPUTED,
        gpu_energy_j=energy.energy_j,
        avg_power_w=energy.avg_power_w,
        energy_method=energy.method,
        gpu_memory_used_gb=energy.memory_used_gb,
        gpu_utilization_pct=energy.utilization_pct,
        requests=log,
        **stats,
    )


# No GPU decodes one stream faster than this: a level whose streams came faster was buffered or
# forged, and its token timings measure nothing.
MAX_STREAM_TPS = 20_000.0


def impossible_figures(results: list[RequestResult]) -> list[str]:
    """Why a level's figures cannot be physical, if they cannot."""
    rates = [
        (r.output_tokens - 1) / max(r.e2el_s - r.ttft_s, 1e-12)
        for r in results
        if r.ok and r.output_tokens > 1 and r.e2el_s is not None and r.ttft_s is not None
    ]
    if rates and float(np.median(rates)) > MAX_STREAM_TPS:
        return [
            f"the median stream decoded {min(float(np.median(rates)), 1e12):.3g} tokens/s, over "
            f"the {MAX_STREAM_TPS:,.0f} tokens/s no GPU exceeds: the server's timings are not "
            "physical (buffered or forged)"
        ]
    return []
