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
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fleetplan.core.contract import Run

RATE_TOLERANCE = 0.05


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


def rate_notes(runs: Sequence[Run]) -> tuple[list[Run], list[str]]:
    """The runs with a note on each point sent at another rate than configured, and the notes
    as warnings naming the level."""
    out, warnings = [], []
    for r, run in enumerate(runs):
        points = []
        for i, point in enumerate(run.points):
            note = rate_note(point.offered_rate_rps, point.configured_rate_rps)
            if note is not None and note not in point.notes:
                warnings.append(f"run {r + 1} of {len(runs)}, level {i + 1}: {note}")
                point = point.model_copy(update={"notes": (*point.notes, note)})
            points.append(point)
        out.append(run.model_copy(update={"points": tuple(points)}))
    return out, warnings
