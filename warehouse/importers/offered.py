"""The load a level really carried: the rate its requests were sent at, from the file's evidence.

A tool asked for 2 req/s may send 2.96 (GuideLLM 0.8.1's constant rate), one asked for 16 may
send 14.1 (AIPerf 0.13.0 on two busy cores): a level's `offered_rate_rps` is the rate it was
really sent at, from per-request send times where the file has them (`send_rate`) or the rate
the tool says it achieved, else the configured rate; the configured rate is kept beside it
(`configured_rate_rps`). Where the two differ by more than `RATE_TOLERANCE` (5 %: a Poisson
level of 60 requests has a send rate within about 13 % of its configured rate, so less than that
is no evidence of a tool that sent otherwise, but 5 % is what a capacity read off the level
would be wrong by), each point says so in a note, and the ingest prints it (`rate_notes`).

The send rate of n requests sent over a span of s seconds is (n - 1) / s: n - 1 gaps, as
`fleetplan.core.load` reads arrivals.

A level may also open faster than it goes on (GuideLLM 0.8.1 sends a rate level's first third at
about 1.8x the rest's rate, and its first level as a backlog of 133 requests at 72 req/s:
benchmarks/RESULTS.md, 2026-12-06): its P99s then carry the opening's queue, not a
steady load at its rate. Under Poisson arrivals the gaps are exponential, so the mean gap of the
level's last two thirds over its first third's is F-distributed (2b, 2a degrees of freedom for a
and b gaps); `opening_note` says so where that ratio is beyond chance (below `OPENING_P`), the
opening at least `OPENING_RATIO` times the rest's rate, in a level of at least
`OPENING_REQUESTS` requests. A note, as the rate's: the level is stored as it ran.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from fleetplan.core.contract import Point, Run

RATE_TOLERANCE = 0.05
OPENING_P = 1e-5  # chance that a Poisson level opens this much faster than it goes on
OPENING_RATIO = 1.3  # and by this much at least: a difference worth a note
OPENING_REQUESTS = 30


def send_rate(start_s: Sequence[float]) -> float | None:
    """Requests per second over the span of their send times; None for fewer than 2 or a span
    of 0 (all at once)."""
    finite = [t for t in start_s if t is not None and math.isfinite(t)]
    if len(finite) < 2:
        return None
    span = max(finite) - min(finite)
    return (len(finite) - 1) / span if span > 0 else None


def rate_note(offered: float | None, configured: float | None) -> str | None:
    """The note for a level sent at another rate than configured, or None."""
    if offered is None or configured is None or math.isinf(configured) or math.isinf(offered):
        return None
    if abs(offered - configured) <= RATE_TOLERANCE * configured:
        return None
    apart = (offered - configured) / configured
    return (
        f"sent at {offered:.4g} req/s, configured at {configured:.4g} req/s ({apart:+.0%}): "
        "the level is stored at the rate it was really sent at"
    )


def opening_note(start_s: Sequence[float]) -> str | None:
    """The note for a level whose first third was sent faster than the rest, beyond what
    Poisson arrivals give by chance (module docstring), or None."""
    starts = sorted(t for t in start_s if t is not None and math.isfinite(t))
    if len(starts) < OPENING_REQUESTS:
        return None
    third = len(starts) // 3
    opening, rest = starts[third] - starts[0], starts[-1] - starts[third]
    if rest <= 0:
        return None  # all sent at once: a burst, which the load judgement says (`core.load`)
    rest_rate = (len(starts) - 1 - third) / rest
    others = f"the other {len(starts) - third} at {rest_rate:.4g} req/s"
    tail = "its P99s carry the opening's queue, not a steady load at its rate"
    if opening <= 0:
        return f"opened with a burst: its first {third + 1} requests sent at once, {others}: {tail}"
    first_rate = third / opening
    ratio = first_rate / rest_rate  # the rest's mean gap over the opening's
    if ratio < OPENING_RATIO:
        return None
    from scipy.stats import f as f_distribution  # only here: scipy.stats is slow to import

    chance = float(f_distribution.sf(ratio, 2 * (len(starts) - 1 - third), 2 * third))
    if chance >= OPENING_P:
        return None
    return (
        f"opened with a burst: its first {third} requests sent at {first_rate:.4g} req/s, "
        f"{others} ({ratio:.2f}x, not Poisson arrivals by chance): {tail}"
    )


# Requests sent at even gaps (GuideLLM's `constant` rate, vLLM's `--burstiness inf`): a Poisson
# stream's bursts are what its queue, and so its P99s, come from.
EVEN_GAPS_NOTE = (
    "sent at even gaps (a constant rate, more regular than Poisson arrivals): its P99s are lower "
    "than a Poisson stream's at its rate, which plans assume, so a capacity read off it is "
    "optimistic"
)


def replay_note(how: str, rate: str) -> str:
    """The note for a level that replayed a trace's arrivals (`how`: the tool's words for it),
    stored at `rate` (what the rate stored is)."""
    return (
        f"replayed a trace's arrivals{how}, not Poisson arrivals: stored at {rate}; its P99s are "
        "that trace's, with its own bursts and lulls"
    )


def burstiness_note(burstiness: float | None) -> str | None:
    """The note for a level whose gaps between arrivals were gamma-distributed with another
    shape than Poisson's (vLLM's and SGLang's `--burstiness`: 1 is Poisson), or None."""
    if burstiness is None or abs(burstiness - 1) <= 1e-9:
        return None
    if burstiness < 1:
        return (
            f"sent with burstiness {burstiness:g} (gamma gaps, burstier than Poisson arrivals): "
            "its P99s are higher than a Poisson stream's at its rate, which plans assume"
        )
    return (
        f"sent with burstiness {burstiness:g} (gamma gaps, more regular than Poisson "
        "arrivals): its P99s are lower than a Poisson stream's at its rate, which plans assume, "
        "so a capacity read off it is optimistic"
    )


def _notes(point: Point) -> list[str]:
    notes = [rate_note(point.offered_rate_rps, point.configured_rate_rps)]
    rate = point.offered_rate_rps
    if rate is not None and math.isfinite(rate):  # open loops
        notes.append(burstiness_note(point.burstiness))
        if point.requests is not None:
            notes.append(opening_note(point.requests.start_s))
    return [n for n in notes if n is not None and n not in point.notes]


def each_level(
    runs: Sequence[Run], read: Callable[[Point], tuple[Point, list[str]]]
) -> tuple[list[Run], list[str]]:
    """Every level of `runs` read by `read` (the level as it is to be stored, and the notes it
    adds), each note added to the level and said as a warning naming the level."""
    out, warnings = [], []
    for r, run in enumerate(runs):
        points = []
        for i, point in enumerate(run.points):
            point, notes = read(point)
            notes = [n for n in notes if n not in point.notes]
            warnings += [f"run {r + 1} of {len(runs)}, level {i + 1}: {n}" for n in notes]
            if notes:
                point = point.model_copy(update={"notes": (*point.notes, *notes)})
            points.append(point)
        out.append(run.model_copy(update={"points": tuple(points)}))
    return out, warnings


def rate_notes(runs: Sequence[Run]) -> tuple[list[Run], list[str]]:
    """The runs with a note on each point sent at another rate than configured or opened with
    a burst, and the notes as warnings naming the level."""
    return each_level(runs, lambda point: (point, _notes(point)))
