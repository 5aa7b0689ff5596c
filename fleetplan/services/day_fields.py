"""A day scenario's fields (version 2) through the Plan page's peak tables.

The page's Traffic classes, GPUs on offer and Sites tables show what a version 1 scenario says;
a class's hours, a volume, an offer's name and commitment and a site's hourly grid are edited in
the day section (`app/plan_day.py`) and kept on the scenario the tables start from. A row of a
table keeps its index while it is edited (the editor drops deleted rows and numbers added ones
after the last), so the day fields of row `i` are those of the base scenario's item `i`: a class
renamed keeps its hours, a row added has none.

The Rate column of a class given by its hours or by a volume is its peak: a rate typed there
scales the hours (or the volume) to it; the rate left as shown leaves them as they are.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from numbers import Integral
from typing import Any

from pydantic import BaseModel


def day_fields(item: BaseModel) -> dict[str, Any]:
    """The fields of version 2 an item (class, offer, site) says, as a scenario file has them."""
    dumped = item.model_dump(mode="json")
    return {name: dumped[name] for name, _ in item._day_fields if name in dumped}


def _scaled(record: dict[str, Any], base: BaseModel, day: dict[str, Any]) -> dict[str, Any]:
    """A class given by hours or a volume: its rate in the table is its peak (above)."""
    rate, peak = record.pop("rate_rps", None), base.rate_rps
    if rate is None or peak is None or math.isclose(rate, peak, rel_tol=1e-9):
        return day
    factor = rate / peak
    if day.get("hourly_rps") is not None:
        return day | {"hourly_rps": [v * factor for v in day["hourly_rps"]]}
    return day | {"daily_requests": day["daily_requests"] * factor}


def with_base_day_fields(
    records: Sequence[tuple[Hashable, dict[str, Any]]], items: Sequence[BaseModel]
) -> list[dict[str, Any]]:
    """Each table row (its index label and what the row says) with the day fields of the base
    scenario's item at that index; a row without one (added) as it is."""
    out = []
    for label, record in records:
        known = isinstance(label, Integral) and 0 <= int(label) < len(items)
        base = items[int(label)] if known else None
        day = day_fields(base) if base is not None else {}
        if day and ("hourly_rps" in day or "daily_requests" in day):
            day = _scaled(record, base, day)
        out.append(record | day)
    return out
