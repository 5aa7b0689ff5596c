"""What a load level says about the server: the rate it sustained, and whether it kept up.

A level's "achieved" throughput (completed / wall time) counts the drain after the last arrival,
when the server finishes the requests still in flight and nothing new comes: a server that kept
up with 4 req/s for 50 s and then drained for 9 s shows 3.4 req/s. And a level of 200 requests
at 32 req/s is a 6 s burst: it says how the server copes with a burst, not what it sustains.
This module judges each level:

- **sustained rate** (requests/s, drain excluded): with per-request send times (fleetplan's own
  runs), the completions inside the arrival window once the pipeline is full, over that window's
  length; without them, the offered rate for a level that kept up (Poisson arrivals at the
  offered rate are what it served), else completed / duration (a server that fell behind worked
  at its limit the whole level: a lower bound of its saturation rate).
- **stable** (did latency stay bounded at this offered load): True, False, or None where the
  level cannot tell: a burst whose arrivals span fewer than `STEADY_SPANS` typical request times
  never reached a steady state, a closed-loop level (a concurrency, no rate) offers no rate.

With send times, a level kept up when the completions in the steady window kept pace with the
arrivals (at least `KEPT_UP_SHARE` of them) and the requests arriving last did not wait much
longer than those arriving first (median E2EL of the last third at most `QUEUE_GROWTH` times the
first third's). Without them, when the wall time is what a server that kept up would take: the
arrival span ((n - 1) / rate, plus two standard deviations of a Poisson span) and a drain of at
most `DRAIN_SPANS` typical request times (the last arrivals include some long requests), and
typical requests took at most `LATENCY_GROWTH` times as long as at the configuration's quickest
level, and the median TTFT stayed within `WAIT_GROWTH` times (or `WAIT_EXTRA_MS` more than) the
configuration's lowest (a `Reference` from the configuration's other levels, where the caller
knows them: a backlog shows as requests that take longer, since the server admits them and slows
down, or as requests that wait in line). The estimate is weaker than send times: each judgement
says which basis it rests on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from fleetplan.core.contract import Point, RequestLog
from fleetplan.core.stats import finite_number

STEADY_SPANS = 3.0  # arrivals over at least 3 typical request times: 2/3 see a full pipeline
DRAIN_SPANS = 4.0  # a server that kept up drains within 4 typical request times
KEPT_UP_SHARE = 0.9  # completions in the steady window keep pace with 90 % of arrivals
QUEUE_GROWTH = 1.5  # last third's median E2EL over the first third's: a growing queue
LATENCY_GROWTH = 2.0  # typical request time over the configuration's quickest: fell behind
WAIT_GROWTH = 4.0  # median TTFT over the configuration's lowest, and at least WAIT_EXTRA_MS more:
WAIT_EXTRA_MS = 500.0  # requests waited in line for admission


# The statistics `judge_row` reads from a row, and every column it reads.
_STATISTICS = (
    "ttft_p50_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "e2el_p50_ms",
    "e2el_p99_ms",
    "output_tokens_mean",
)
JUDGED_FROM = ("offered_rate_rps", "max_concurrency", "completed", "duration_s", *_STATISTICS)


class LoadBasis(StrEnum):
    SEND_TIMES = "send times"  # per-request send offsets: the steady window is known
    ESTIMATED = "estimated"  # from duration, counts and latency statistics only
    CONCURRENCY = "concurrency"  # a closed-loop level (max_concurrency, no rate)


@dataclass(frozen=True, slots=True)
class Reference:
    """The same configuration's and traffic's quickest level: what "unloaded" looks like."""

    e2el_s: float | None  # the smallest typical request time among its levels
    ttft_p50_ms: float | None  # the smallest median TTFT among its levels


@dataclass(frozen=True, slots=True)
class LevelLoad:
    sustained_rps: float | None  # requests/s the server sustained, drain excluded
    stable: bool | None  # did latency stay bounded at this offered load (None: cannot tell)
    basis: LoadBasis
    reason: str  # one sentence for users


def _rate(value: Any) -> float | None:
    """An offered rate: a finite number, or inf for all requests at once."""
    try:
        rate = float(value)
    except (TypeError, ValueError):
        return None
    return rate if rate > 0 and not math.isnan(rate) else None


def typical_e2el_s(
    *,
    e2el_p50_ms: float | None,
    ttft_p50_ms: float | None,
    tpot_p50_ms: float | None,
    output_tokens_mean: float | None,
) -> float | None:
    """A typical request's time in the system: its median E2EL, else TTFT + TPOT x (tokens - 1)."""
    if finite_number(e2el_p50_ms) is not None and e2el_p50_ms > 0:
        return e2el_p50_ms / 1000
    parts = (
        finite_number(ttft_p50_ms),
        finite_number(tpot_p50_ms),
        finite_number(output_tokens_mean),
    )
    if any(part is None for part in parts):
        return None
    ttft, tpot, tokens = parts
    return (ttft + tpot * max(tokens - 1, 0)) / 1000


def judge_level(
    *,
    offered_rate_rps: float | None,
    completed: int,
    duration_s: float,
    requests: RequestLog | None = None,
    ttft_p50_ms: float | None = None,
    ttft_p99_ms: float | None = None,
    tpot_p50_ms: float | None = None,
    tpot_p99_ms: float | None = None,
    e2el_p50_ms: float | None = None,
    e2el_p99_ms: float | None = None,
    output_tokens_mean: float | None = None,
    max_concurrency: int | None = None,
    reference: Reference | None = None,
) -> LevelLoad:
    """Judge one load level (see the module's docstring for the rules)."""
    rate = _rate(offered_rate_rps)
    duration = finite_number(duration_s)
    if rate is None:
        return LevelLoad(
            None,
            None,
            LoadBasis.CONCURRENCY,
            f"a closed-loop level (concurrency {max_concurrency}): it offers no rate",
        )
    if not duration or duration <= 0 or completed < 2:
        return LevelLoad(None, None, LoadBasis.ESTIMATED, "too few requests to judge")
    typical = typical_e2el_s(
        e2el_p50_ms=e2el_p50_ms,
        ttft_p50_ms=ttft_p50_ms,
        tpot_p50_ms=tpot_p50_ms,
        output_tokens_mean=output_tokens_mean,
    )
    if requests is not None and len(requests.succeeded) >= 6:
        return _from_send_times(rate, requests)
    return _estimated(
        rate,
        completed,
        duration,
        typical,
        finite_number(ttft_p50_ms),
        reference or Reference(None, None),
    )


def _burst(rate: float, span_s: float, typical_s: float | None) -> str | None:
    if math.isinf(rate):
        return "all requests at once: a burst, not a steady load"
    if typical_s is not None and span_s < STEADY_SPANS * typical_s:
        return (
            f"a burst: arrivals over {span_s:.1f} s, shorter than {STEADY_SPANS:g} typical "
            f"requests ({typical_s:.1f} s each), so it never reached a steady state"
        )
    return None


def _estimated(
    rate: float,
    completed: int,
    duration: float,
    typical: float | None,
    ttft_p50: float | None,
    reference: Reference,
) -> LevelLoad:
    achieved = completed / duration
    span = (completed - 1) / rate if math.isfinite(rate) else 0.0
    known = [t for t in (reference.e2el_s, typical) if t]
    quickest = min(known) if known else None
    burst = _burst(rate, span, quickest)
    if burst:
        return LevelLoad(achieved, None, LoadBasis.ESTIMATED, burst)
    if typical is None:
        return LevelLoad(
            None, None, LoadBasis.ESTIMATED, "no latency statistics to tell the drain apart"
        )
    growth = typical / quickest
    if growth > LATENCY_GROWTH:
        return LevelLoad(
            achieved,
            False,
            LoadBasis.ESTIMATED,
            f"fell behind: requests took {growth:.1f}x as long as at the quickest level "
            f"({typical:.3g} s against {quickest:.3g} s)",
        )
    lowest = reference.ttft_p50_ms
    if (
        ttft_p50 is not None
        and lowest
        and ttft_p50 > max(WAIT_GROWTH * lowest, lowest + WAIT_EXTRA_MS)
    ):
        return LevelLoad(
            achieved,
            False,
            LoadBasis.ESTIMATED,
            f"fell behind: requests waited in line (median TTFT {ttft_p50:.0f} ms against "
            f"{lowest:.0f} ms at the quickest level)",
        )
    allowed = span + 2 * math.sqrt(completed - 1) / rate + DRAIN_SPANS * typical
    if duration <= allowed:
        return LevelLoad(
            rate,
            True,
            LoadBasis.ESTIMATED,
            f"kept up: {duration:.1f} s for arrivals over about {span:.1f} s and a drain of "
            f"at most {DRAIN_SPANS:g} requests of {typical:.1f} s",
        )
    return LevelLoad(
        achieved,
        False,
        LoadBasis.ESTIMATED,
        f"fell behind: {duration:.1f} s for arrivals over about {span:.1f} s, more than a "
        f"drain of {DRAIN_SPANS:g} requests of {typical:.1f} s explains",
    )


def _from_send_times(rate: float, requests: RequestLog) -> LevelLoad:
    ok = requests.succeeded
    starts = np.asarray(requests.start_s, dtype=float)
    e2el = np.asarray([requests.e2el_s[i] for i in ok], dtype=float)
    finishes = starts[ok] + e2el
    first, last = float(starts.min()), float(starts.max())
    span = last - first
    typical = float(np.median(e2el))
    arrival_rate = (len(starts) - 1) / span if span > 0 else math.inf
    burst = _burst(rate if span > 0 else math.inf, span, typical)
    if burst:
        achieved = len(ok) / max(float(finishes.max()) - first, 1e-9)
        return LevelLoad(achieved, None, LoadBasis.SEND_TIMES, burst)
    window_start = first + typical
    done = int(np.count_nonzero((finishes >= window_start) & (finishes <= last)))
    steady = done / (last - window_start)
    order = np.argsort(starts[ok])
    third = max(len(order) // 3, 1)
    growth = float(np.median(e2el[order[-third:]]) / max(np.median(e2el[order[:third]]), 1e-9))
    if steady >= KEPT_UP_SHARE * arrival_rate and growth <= QUEUE_GROWTH:
        return LevelLoad(
            min(steady, arrival_rate),
            True,
            LoadBasis.SEND_TIMES,
            f"kept up: {steady:.2f} req/s completed in the steady window for "
            f"{arrival_rate:.2f} req/s arriving; late requests took {growth:.2f}x as long",
        )
    return LevelLoad(
        steady,
        False,
        LoadBasis.SEND_TIMES,
        f"fell behind: {steady:.2f} req/s completed in the steady window for "
        f"{arrival_rate:.2f} req/s arriving; late requests took {growth:.2f}x as long",
    )


def judge_point(point: Point) -> LevelLoad:
    """Judge a contract Point, with its request log when it has one."""
    return judge_level(
        offered_rate_rps=point.offered_rate_rps,
        completed=point.completed,
        duration_s=point.duration_s,
        requests=point.requests,
        ttft_p50_ms=point.ttft_p50_ms,
        ttft_p99_ms=point.ttft_p99_ms,
        tpot_p50_ms=point.tpot_p50_ms,
        tpot_p99_ms=point.tpot_p99_ms,
        e2el_p50_ms=point.e2el_p50_ms,
        e2el_p99_ms=point.e2el_p99_ms,
        output_tokens_mean=point.output_tokens_mean,
        max_concurrency=point.max_concurrency,
    )


def judge_row(row: Mapping[str, Any], *, reference: Reference | None = None) -> LevelLoad:
    """Judge a row of `benchmark_points` (statistics only: no request log)."""
    completed = finite_number(row.get("completed"))
    return judge_level(
        offered_rate_rps=_rate(row.get("offered_rate_rps")),
        completed=int(completed or 0),
        duration_s=finite_number(row.get("duration_s")) or 0.0,
        **{name: finite_number(row.get(name)) for name in _STATISTICS},
        max_concurrency=row.get("max_concurrency"),
        reference=reference,
    )


def reference_of(rows: Iterable[Mapping[str, Any]]) -> Reference:
    """The quickest of a configuration's levels (rows of `benchmark_points` of one configuration
    and traffic shape): the reference `judge_row` compares each level with. Only levels at a
    finite rate, run to the end and without failures may stand for "unloaded"."""
    typical, ttft = [], []
    for row in rows:
        if finite_number(row.get("offered_rate_rps")) is None:
            continue
        if not bool(row.get("complete", True)) or finite_number(row.get("failed")):
            continue
        e2el = typical_e2el_s(
            e2el_p50_ms=finite_number(row.get("e2el_p50_ms")),
            ttft_p50_ms=finite_number(row.get("ttft_p50_ms")),
            tpot_p50_ms=finite_number(row.get("tpot_p50_ms")),
            output_tokens_mean=finite_number(row.get("output_tokens_mean")),
        )
        if e2el:
            typical.append(e2el)
        if finite_number(row.get("ttft_p50_ms")):
            ttft.append(finite_number(row.get("ttft_p50_ms")))
    return Reference(min(typical) if typical else None, min(ttft) if ttft else None)
