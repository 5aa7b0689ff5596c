"""Capacities as intervals, compared: where two configurations' intervals for one class overlap,
the data does not say which server carries more, and a comparison between them must say so
instead of ranking them by the end it happens to plan on."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fleetplan.planner.capacity.configuration import Capacity

EPS = 1e-9


def is_wide(capacity: Capacity) -> bool:
    return capacity.high - capacity.low > EPS * max(capacity.high, 1.0)


def overlapping(capacities: Sequence[Capacity]) -> dict[int, list[int]]:
    """For each capacity (by position) that serves its class, the positions of the others of
    the same class whose intervals overlap it. Two single values are not an overlap (they are
    equal or apart); an interval and a value inside it are. Compared class by class, as arrays:
    a 50-class x 100-configuration plan compares 50 x 100^2 pairs, not 5,000^2."""
    by_class: dict[str, list[int]] = {}
    for i, capacity in enumerate(capacities):
        by_class.setdefault(capacity.traffic_class, []).append(i)
    found: dict[int, list[int]] = {}
    for members in by_class.values():
        low = np.array([capacities[i].low for i in members], dtype=float)
        high = np.array([capacities[i].high for i in members], dtype=float)
        wide = np.array([is_wide(capacities[i]) for i in members])
        serves = high > 0
        meet = np.maximum.outer(low, low) <= np.minimum.outer(high, high) + EPS
        pairs = meet & np.logical_or.outer(wide, wide) & np.logical_and.outer(serves, serves)
        np.fill_diagonal(pairs, False)
        for a, b in zip(*np.nonzero(pairs), strict=True):
            found.setdefault(members[a], []).append(members[b])
    return dict(sorted(found.items()))


def _interval(capacity: Capacity) -> str:
    if not is_wide(capacity):
        return f"{capacity.low:.3g}"
    return f"{capacity.low:.3g} to {capacity.high:.3g}"


# Configurations named in a class's overlap note; the rest are counted ("and 3 more"): a note
# naming every pair grew with the square of the configurations.
MAX_NAMED_IN_NOTE = 6


def overlap_notes(
    capacities: Sequence[Capacity], found: dict[int, list[int]] | None = None
) -> list[str]:
    """One note per class whose configurations' intervals overlap, naming those configurations
    (at most `MAX_NAMED_IN_NOTE`, the rest counted) with their intervals, for the plan's notes.
    Which overlaps which is in each capacity row's `overlaps`; `found`: what `overlapping` finds
    for `capacities`, where already known."""
    found = overlapping(capacities) if found is None else found
    by_class: dict[str, list[Capacity]] = {}
    for i in sorted(found):
        by_class.setdefault(capacities[i].traffic_class, []).append(capacities[i])
    notes = []
    for name, members in by_class.items():
        shown = [f"{c.configuration.name} ({_interval(c)})" for c in members[:MAX_NAMED_IN_NOTE]]
        more = len(members) - len(shown)
        listed = ", ".join(shown) + (f" and {more} more" if more > 0 else "")
        notes.append(
            f"class {name!r}: the capacity intervals (req/s per server) of {len(members)} "
            f"configurations overlap: {listed}; the data does not say which of them carries more"
        )
    return notes
