"""Capacities as intervals, compared: where two configurations' intervals for one class overlap,
the data does not say which server carries more, and a comparison between them must say so
instead of ranking them by the end it happens to plan on."""

from __future__ import annotations

from collections.abc import Sequence

from fleetplan.planner.levels import Capacity

_EPS = 1e-9


def _wide(capacity: Capacity) -> bool:
    return capacity.high - capacity.low > _EPS * max(capacity.high, 1.0)


def overlapping(capacities: Sequence[Capacity]) -> dict[int, list[int]]:
    """For each capacity (by position) that serves its class, the positions of the others of
    the same class whose intervals overlap it. Two single values are not an overlap (they are
    equal or apart); an interval and a value inside it are."""
    found: dict[int, list[int]] = {}
    for i, a in enumerate(capacities):
        for j, b in enumerate(capacities):
            if i == j or a.traffic_class != b.traffic_class or a.high <= 0 or b.high <= 0:
                continue
            if not (_wide(a) or _wide(b)):
                continue
            if max(a.low, b.low) <= min(a.high, b.high) + _EPS:
                found.setdefault(i, []).append(j)
    return found


def _interval(capacity: Capacity) -> str:
    if not _wide(capacity):
        return f"{capacity.low:.3g}"
    return f"{capacity.low:.3g} to {capacity.high:.3g}"


def overlap_notes(capacities: Sequence[Capacity]) -> list[str]:
    """One note per overlapping pair, in words, for the plan's notes."""
    notes = []
    for i, others in overlapping(capacities).items():
        a = capacities[i]
        for j in others:
            if j < i:
                continue
            b = capacities[j]
            notes.append(
                f"class {a.traffic_class!r}: the capacities of {a.configuration.name} "
                f"({_interval(a)} req/s per server) and {b.configuration.name} "
                f"({_interval(b)}) overlap: the data does not say which server carries more"
            )
    return notes
