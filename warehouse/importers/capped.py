"""A rate level with a cap on the requests in flight: an open loop where the cap never bound, a
closed loop where it did.

`vllm bench serve --request-rate 40 --max-concurrency 2` (and SGLang's, AIPerf's or GuideLLM's
like options) schedules Poisson arrivals at 40 req/s but sends a request only when fewer than 2
are in flight; the others wait for a slot in the client. Their TTFTs and E2ELs are timed from
when they were sent, so that wait is in none of the level's figures: run here against the vLLM
CPU server (2026-12-07), such a level was sent at 33.1 req/s with a P99 TTFT of 19 ms, the
figures of 2 requests in flight, where an open loop at 33 req/s queues in the server. Read as an
open loop at its rate, it would overstate the server by what the cap hid.

By PASTA (Poisson arrivals see time averages), the share of arrivals that found the cap full is
the share of the level's arrival window during which it was full:

- from the per-request times where the file has them: the requests' [send, send + E2EL]
  intervals, the time at `max_concurrency` or more in flight over the span of the sends;
- else from its figures: the mean in flight by Little's law (throughput x mean E2EL) as the
  offered load a of an M/M/N queue, and Erlang's C formula, the probability an arrival waits.

Where that share is over `CAP_SHARE` (1 %: a P99 is the slowest 1 %, so more waits than that can
hide in it), the level is read as a closed loop at concurrency N (`offered_rate_rps` None, the
configured rate kept) and says so in a note; the planner converts closed loops to open-loop rates
with its validated model (`planner.curve.levels`). Below it, it stays an open loop at its rate.
Where neither the per-request times nor a mean E2EL are in the file, the level stays as it is and
a note says the cap's effect cannot be told.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fleetplan.core.contract import Point, RequestLog, Run
from fleetplan.warehouse.importers.offered import each_level

CAP_SHARE = 0.01


def time_at_cap(log: RequestLog, cap: int) -> float | None:
    """The share of the span of the sends during which `cap` or more requests were in flight
    (successful requests, each from its send to its end); None for fewer than 2 sends or a
    span of 0."""
    starts = [s for s in log.start_s if math.isfinite(s)]
    if len(starts) < 2:
        return None
    first, last = min(starts), max(starts)
    if last <= first:
        return None
    events: list[tuple[float, int]] = []
    for start, e2el, error in zip(log.start_s, log.e2el_s, log.error, strict=True):
        if error or e2el is None or not math.isfinite(start):
            continue
        events += [(start, 1), (start + e2el, -1)]
    events.sort(key=lambda event: (event[0], event[1]))  # an end before a send at one instant
    full, in_flight, since = 0.0, 0, first
    for when, step in events:
        at = min(max(when, first), last)
        if in_flight >= cap:
            full += at - since
        since = at
        in_flight += step
    return full / (last - first)


def erlang_c(servers: int, load: float) -> float:
    """The probability that an arrival waits in an M/M/N queue of `servers` and offered load
    `load` (Erlang's C formula); 1 where the load reaches the servers."""
    if load <= 0:
        return 0.0
    if load >= servers:
        return 1.0
    blocked = 1.0  # Erlang's B by its recursion, stable where a^N / N! overflows
    for k in range(1, servers + 1):
        blocked = load * blocked / (k + load * blocked)
    return servers * blocked / (servers - load * (1 - blocked))


def _mean_e2el_s(point: Point) -> float | None:
    if point.e2el_mean_ms is not None:
        return point.e2el_mean_ms / 1000
    parts = (point.ttft_mean_ms, point.tpot_mean_ms, point.output_tokens_mean)
    if any(p is None for p in parts):
        return None
    ttft, tpot, tokens = parts
    return (ttft + tpot * max(tokens - 1, 0)) / 1000


def cap_share(point: Point) -> tuple[float | None, str]:
    """The share of the level's arrivals that found its cap full, and what it rests on."""
    cap = point.max_concurrency
    if point.requests is not None:
        share = time_at_cap(point.requests, cap)
        if share is not None:
            return share, "measured from its per-request times"
    e2el = _mean_e2el_s(point)
    if e2el is None or point.request_throughput_rps is None:
        return None, ""
    in_flight = point.request_throughput_rps * e2el
    return erlang_c(cap, in_flight), f"Erlang's C formula at {in_flight:.3g} in flight on average"


def read_cap(point: Point) -> tuple[Point, str | None]:
    """The level read as the module docstring says, and its note (None where the cap never
    bound or there is none)."""
    rate, cap = point.offered_rate_rps, point.max_concurrency
    sent = point.requests_sent or point.completed + (point.failed or 0)
    if cap is not None and (rate is None or math.isinf(rate)) and 1 < sent <= cap:
        # `--max-concurrency 100 --request-rate inf` with 100 prompts: nothing ever waited for
        # a slot; all were sent at once (a real SGLang file)
        note = (
            f"{sent} requests with at most {cap} in flight: the cap never closed the loop, so "
            "it is read as what it was, all requests sent at once (a burst), not as a closed "
            f"loop at concurrency {cap}"
        )
        return point.model_copy(update={"offered_rate_rps": math.inf}), note
    if cap is None or rate is None or math.isinf(rate) or point.completed == 0:
        return point, None
    share, basis = cap_share(point)
    if share is None:
        note = (
            f"sent at {rate:.4g} req/s with at most {cap} requests in flight: the file has "
            "neither per-request times nor a mean E2EL, so whether requests waited for a slot "
            "(a wait its TTFTs do not count) cannot be told"
        )
        return point, note
    if share <= CAP_SHARE:
        return point, None
    note = (
        f"at most {cap} requests in flight, a cap full for {share:.0%} of its arrivals ({basis}): "
        "they waited for a slot before they were sent, a wait its TTFTs do not count, so it is "
        f"read as a closed loop at concurrency {cap}, not as an open loop at {rate:.4g} req/s"
    )
    return point.model_copy(update={"offered_rate_rps": None}), note


def bound(log: RequestLog | None, cap: int | None) -> bool:
    """Whether `cap` was full for more than `CAP_SHARE` of the sends of `log` (False where
    that cannot be measured)."""
    share = time_at_cap(log, cap) if log is not None and cap is not None else None
    return share is not None and share > CAP_SHARE


def cap_readings(runs: Sequence[Run]) -> tuple[list[Run], list[str]]:
    """Every rate level with a concurrency cap read as `read_cap` says, and its notes as
    warnings naming the level."""

    def read(point: Point) -> tuple[Point, list[str]]:
        point, note = read_cap(point)
        return point, [] if note is None else [note]

    return each_level(runs, read)
