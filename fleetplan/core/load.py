"""What a load level says about the server: the rate it sustained, and whether it kept up.

A level's "achieved" throughput (completed / wall time) counts the drain after the last arrival,
when the server finishes the requests still in flight and nothing new comes: a server that kept
up with 4 req/s for 50 s and then drained for 9 s shows 3.4 req/s. And a level of 200 requests
at 32 req/s is a 6 s burst: it says how the server copes with a burst, not what it sustains.
This module judges each level on what its file proves:

- **stable**: True (kept up: completions kept pace with arrivals over a window long enough to
  show it, and requests did not wait in line longer and longer), False (fell behind), or None
  (cannot tell: too short for a steady state, too short to prove the pace, or a closed-loop
  level, which offers no rate).
- **sustained rate** (requests/s, drain excluded): the offered rate for a level that kept up;
  else the rate the level proves the server completes at least (below).

The thresholds, from queueing (W: a typical request's time in the system, its median E2EL; S:
the span of the arrivals, (n - 1) / rate or the span the tool recorded; D: the level's wall
time; w0: the configuration's quickest typical request time, the reference):

- `STEADY_SPANS` = 3. By Little's law the number in flight reaches rate x W only after one W
  of arrivals (the pipeline fills). With S >= 3 W at least two thirds of the requests arrive to
  a full pipeline, so the level's percentiles are mostly steady-state ones; a shorter level is a
  burst: "cannot tell" whatever its drain. W is the level's own: a level whose requests take 7 s
  needs 21 s of arrivals (200 requests at 16 req/s, 12 s, cannot show it).
- The proven rate. A server completing at most mu requests/s cannot finish n requests, the first
  no sooner than w0 after the level starts, in less than w0 + n / mu: so mu >= n / (D - w0),
  whatever happened inside the level. It is the lower bound of the server's capacity that the
  level proves, and the sustained rate of a level that did not keep up. Where the configuration
  has no reference level, the level's own W stands for w0 only if its requests did not queue:
  not a burst, and a median TTFT within `WAIT_SHARE` of W; else w0 = 0 (n / D, what it
  achieved). A burst's median request waited for most of the level: 10,000 requests sent at once
  to 8x H200 (SGLang, 2025: datacrunch-research/h200-benchmarks) finished in 412 s with a median
  E2EL of 375 s, which as w0 "proved" 264 req/s where the server did 24.
- `KEPT_UP_SHARE` = 0.9. A level kept up only if the proven rate reaches 90 % of the offered
  rate: finer is noise (the count of 200 Poisson arrivals alone varies by 1 / sqrt(200) = 7 %).
  A level that ended within the drain allowance but proves less is "cannot tell": its drain may
  be long requests, or a backlog; 200 requests over 25 s cannot say which. The 600 s stages of
  inference-perf (thousands of requests) prove their rate to within a percent.
- `DRAIN_SPANS` = 4. A server that kept up finishes its last arrivals about one of their own
  request times after they arrive; with the long tail of chat outputs (a P99 output three to
  four times the median) that is up to 4 W. A wall time beyond S, two standard deviations of a
  Poisson span (2 sqrt(n - 1) / rate) and 4 W is a backlog: fell behind.
- `WAIT_GROWTH` = 4 and `WAIT_EXTRA_MS` = 500 ms. A backlog in a continuous-batching server shows
  as requests waiting for admission: their TTFT grows by whole request times (seconds). A bigger
  batch alone slows prefill by a factor but by a few hundred ms at most (the levels here that
  kept up: up to 4.0x, 95 to 382 ms, on 4x RTX 4090 at 4 req/s). So a median TTFT over four
  times the configuration's lowest and at least 500 ms more is waiting in line: fell behind.
- `WAIT_SHARE` = 0.5. Unloaded, TTFT is one prompt's prefill, a few per cent of a request's
  time (at most 13 % at every level here that kept up); a median TTFT over half the median request
  time means requests waited in line about as long as they were served: fell behind, whether or
  not the configuration has a quicker level to compare with.
- Slower decode under a bigger batch is load, not a backlog: a level whose requests take twice
  as long as at the quickest level but which kept pace, without waiting, kept up (the 600 s H100
  stages at 20 req/s: requests twice as long, P99 TTFT 73 ms, 99.6 % of the rate completed).

With per-request send times (fleetplan's own runs, and formats that record them), the window is
known exactly: a level kept up when the completions inside the arrival window, once the pipeline
is full, kept pace with the arrivals (at least `KEPT_UP_SHARE` of them) and the requests
arriving last did not take longer and longer. A queue that grows through the level makes each
request's time a rising function of when it arrived: a trend, not only a difference between the
level's ends. So a level fell behind by growth only when both show: the last third's median E2EL
over `QUEUE_GROWTH` = 1.5 times the first third's, and a rising trend through the level
(Mann-Kendall, `core.stats.trend_z`, over `TREND_Z` = 2.33: a steady state's random order gives
that once in a hundred levels). Each alone is what a noisy steady state shows: on a shared CPU
server a 120-request level at 3.6 req/s had thirds of 412, 482 and 665 ms with no trend (z 1.3),
and 400 requests at 3.8 req/s then kept up (benchmarks/RESULTS.md). Requests that got quicker
through a level (a stall early on, cleared) do not make it fall behind: the server caught up.
Each judgement says which basis it rests on.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from fleetplan.core.contract import Point, RequestLog
from fleetplan.core.stats import finite_number, trend_z

STEADY_SPANS = 3.0  # arrivals over at least 3 of the level's request times: 2/3 see a full pipeline
DRAIN_SPANS = 4.0  # a server that kept up drains within 4 typical request times
KEPT_UP_SHARE = 0.9  # the proven (or steady-window) rate reaches 90 % of the arrivals' rate
QUEUE_GROWTH = 1.5  # last third's median E2EL over the first third's: a growing queue,
TREND_Z = 2.33  # with a rising trend through the level (Mann-Kendall z, one-sided 1 %)
WAIT_GROWTH = 4.0  # median TTFT over the configuration's lowest, and at least WAIT_EXTRA_MS more:
WAIT_EXTRA_MS = 500.0  # requests waited in line for admission
WAIT_SHARE = 0.5  # median TTFT over half the median request time: waited as long as served


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
    arrival_span_s: float | None = None,
) -> LevelLoad:
    """Judge one load level (see the module's docstring for the rules). `arrival_span_s`: the
    span of the arrivals where the tool recorded it (inference-perf's `send_duration`); else
    (completed - 1) / offered rate."""
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
    span = finite_number(arrival_span_s)
    if span is None or span <= 0:
        span = (completed - 1) / rate if math.isfinite(rate) else 0.0
    return _estimated(
        rate,
        completed,
        duration,
        span,
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


def proven_rps(completed: int, duration_s: float, quickest_s: float | None) -> float:
    """The rate a level proves the server completes at least: n / (D - w0) (module docstring)."""
    return completed / max(duration_s - (quickest_s or 0.0), 1e-9)


def _estimated(
    rate: float,
    completed: int,
    duration: float,
    span: float,
    typical: float | None,
    ttft_p50: float | None,
    reference: Reference,
) -> LevelLoad:
    if typical is None:
        achieved = completed / duration
        return LevelLoad(
            achieved, None, LoadBasis.ESTIMATED, "no latency statistics to tell the drain apart"
        )
    burst = _burst(rate, span, typical)
    # The level's own typical time stands for "unloaded" only where its requests did not queue:
    # a burst's or a waiting level's median includes its wait, and would prove too much
    waited = ttft_p50 is not None and ttft_p50 / 1000 > WAIT_SHARE * typical
    own = None if burst or waited else typical
    quickest = min((t for t in (reference.e2el_s, own) if t), default=0.0)
    proven = min(proven_rps(completed, duration, quickest), rate)
    if burst:
        return LevelLoad(proven, None, LoadBasis.ESTIMATED, burst)
    behind = _fell_behind(rate, completed, duration, span, typical, ttft_p50, reference.ttft_p50_ms)
    if behind:
        return LevelLoad(proven, False, LoadBasis.ESTIMATED, behind)
    if proven >= KEPT_UP_SHARE * rate:
        return LevelLoad(
            rate,
            True,
            LoadBasis.ESTIMATED,
            f"kept up: {completed} requests in {duration:.1f} s for arrivals over about "
            f"{span:.1f} s prove at least {proven:.2f} req/s of {rate:.4g}",
        )
    return LevelLoad(
        proven,
        None,
        LoadBasis.ESTIMATED,
        f"cannot tell: it ended within a drain of {DRAIN_SPANS:g} requests of {typical:.1f} s, "
        f"but {completed} requests in {duration:.1f} s prove only {proven:.2f} req/s of "
        f"{rate:.4g} (a long drain or a backlog: too short to say which)",
    )


def _fell_behind(
    rate: float,
    completed: int,
    duration: float,
    span: float,
    typical: float,
    ttft_p50: float | None,
    lowest: float | None,
) -> str | None:
    """Why a level (not a burst) fell behind, from its summary statistics: requests waited in
    line (median TTFT against `lowest`, the quickest level's, or against its time in the
    system), or it ran longer than its arrivals and a drain explain; None where none shows."""
    if (
        ttft_p50 is not None
        and lowest
        and ttft_p50 > max(WAIT_GROWTH * lowest, lowest + WAIT_EXTRA_MS)
    ):
        return (
            f"fell behind: requests waited in line (median TTFT {ttft_p50:.0f} ms against "
            f"{lowest:.0f} ms at the quickest level)"
        )
    if ttft_p50 is not None and ttft_p50 / 1000 > WAIT_SHARE * typical:
        return (
            f"fell behind: requests waited in line (median TTFT {ttft_p50 / 1000:.1f} s of "
            f"{typical:.1f} s in the system)"
        )
    allowed = span + 2 * math.sqrt(completed - 1) / rate + DRAIN_SPANS * typical
    if duration > allowed:
        return (
            f"fell behind: {duration:.1f} s for arrivals over about {span:.1f} s, more than a "
            f"drain of {DRAIN_SPANS:g} requests of {typical:.1f} s explains"
        )
    return None


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
    in_order = e2el[np.argsort(starts[ok], kind="stable")]
    third = max(len(in_order) // 3, 1)
    growth = float(np.median(in_order[-third:]) / max(np.median(in_order[:third]), 1e-9))
    z = trend_z(in_order)
    said = (
        f"{steady:.2f} req/s completed in the steady window for {arrival_rate:.2f} req/s "
        f"arriving; late requests took {growth:.2f}x as long (trend z {z:+.1f})"
    )
    if steady < KEPT_UP_SHARE * arrival_rate or (growth > QUEUE_GROWTH and z > TREND_Z):
        return LevelLoad(steady, False, LoadBasis.SEND_TIMES, f"fell behind: {said}")
    return LevelLoad(min(steady, arrival_rate), True, LoadBasis.SEND_TIMES, f"kept up: {said}")


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
