"""A day scenario's fields (version 2) through the Plan page's peak tables.

The page's Traffic classes, GPUs on offer and Sites tables show what a version 1 scenario says;
a class's hours, a volume, an offer's name and commitment and a site's hourly grid are edited in
the day section (`app/plan_day.py`) and kept on the scenario the tables start from. A row of a
table keeps its index while it is edited (the editor drops deleted rows and numbers added ones
after the last): a row's day fields are those of the base scenario's item of its name (a
class, a site), or at its index (a row renamed; an offer of the same GPU); a row added has none.

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


def _matches(
    records: Sequence[tuple[Hashable, dict[str, Any]]], items: Sequence[BaseModel], key: str
) -> list[int | None]:
    """Which base item each row is. A class or a site: the one of its name, else (a row
    renamed) the one at its index, unless another row has that one's name. An offer: the one at
    its index, if of the same GPU. None: a row added."""
    found: list[int | None] = [None] * len(records)
    taken: set[int] = set()
    if key == "name":
        by_name = {item.name: i for i, item in enumerate(items)}
        for n, (_, record) in enumerate(records):
            if record.get("name") in by_name:
                found[n] = by_name[record["name"]]
                taken.add(found[n])
    for n, (label, record) in enumerate(records):
        at = int(label) if isinstance(label, Integral) else -1
        if found[n] is not None or not 0 <= at < len(items) or at in taken:
            continue
        if key == "name" or getattr(items[at], key) == record.get(key):
            found[n] = at
            taken.add(at)
    return found


def with_base_day_fields(
    records: Sequence[tuple[Hashable, dict[str, Any]]], items: Sequence[BaseModel], key: str
) -> list[dict[str, Any]]:
    """Each table row (its index label and what the row says) with the day fields of the base
    scenario's item it is (`_matches`; `key`: "name" for classes and sites, "gpu_model" for
    offers); a row that is none of them (added) as it is."""
    out = []
    for (_, record), found in zip(records, _matches(records, items, key), strict=True):
        base = items[found] if found is not None else None
        day = day_fields(base) if base is not None else {}
        if day and ("hourly_rps" in day or "daily_requests" in day):
            day = _scaled(record, base, day)
        out.append(record | day)
    return out
