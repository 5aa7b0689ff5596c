"""The Plan page's day (scenario version 2) as plain tables, and back. No Streamlit here.

Four tables beside the page's peak tables (`scenario_forms`): each class's demand through the
day (a flat rate, a preset shape scaled to the class's peak Rate, 24 rates of its own, or a
volume of requests a day inside a window) and its model; the 24 rates of the classes given by
their hours (one column per class); each GPU offer's name and commitment (reserved / on demand);
each site's grid intensity in each hour. `with_day_tables` makes the scenario they describe,
with errors that name the table, the row and the column as the page shows them.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd
from pydantic import ValidationError

from fleetplan.core.errors import InputError
from fleetplan.planner.scenario.parts import HOURS, SHAPES
from fleetplan.planner.scenario.scenario import Scenario, TrafficClass
from fleetplan.services.scenario_forms import cell_value, in_page_words, place

DEMANDS = ("flat", "business-day", "evening-peak", "hours", "volume")
DEMAND_LABELS = {
    "flat": "flat: the Rate all day",
    "business-day": "business day x the Rate",
    "evening-peak": "evening peak x the Rate",
    "hours": "24 rates (table below)",
    "volume": "requests a day in a window",
}
DAY_CLASS_LABELS = {
    "name": "Class",
    "demand": "Demand through the day",
    "daily_requests": "Requests a day",
    "window_from": "Window from (h)",
    "window_to": "to (h, not included)",
    "model": "Model (blank: the scenario's)",
}
OFFER_LABELS = {"gpu_model": "GPU", "name": "Offer", "commitment": "Commitment"}
COMMITMENTS = ("reserved", "on_demand")
HOURS_TITLE, SITE_HOURS_TITLE = "Requests/s in each hour", "Grid gCO2e/kWh in each hour"
TITLES = {
    "classes": "Demand through the day",
    "gpus": "Offers through the day",
    "hours": HOURS_TITLE,
    "site_hours": SITE_HOURS_TITLE,
}


def demand_of(traffic: TrafficClass) -> str:
    if traffic.is_volume:
        return "volume"
    if traffic.hourly_rps is not None:
        return "hours"
    return traffic.shape or "flat"


def day_classes_table(scenario: Scenario) -> pd.DataFrame:
    rows = []
    for c in scenario.classes:
        start, end = c.window_hours or (None, None)
        rows.append(
            {
                "name": c.name,
                "demand": demand_of(c),
                "daily_requests": c.daily_requests,
                "window_from": start,
                "window_to": end,
                "model": c.model,
            }
        )
    types = {"daily_requests": float, "window_from": "Int64", "window_to": "Int64", "model": object}
    return pd.DataFrame(rows, columns=list(DAY_CLASS_LABELS)).astype(types)


HOUR_COLUMNS = tuple(str(h) for h in range(HOURS))  # the hour tables' columns: "0" to "23"


def _hour_rows(rows: list[tuple[str, list[float]]]) -> pd.DataFrame:
    table = pd.DataFrame(
        [{"name": name, **dict(zip(HOUR_COLUMNS, values, strict=True))} for name, values in rows],
        columns=["name", *HOUR_COLUMNS],
    )
    return table.astype(dict.fromkeys(HOUR_COLUMNS, float))


def hours_table(scenario: Scenario) -> pd.DataFrame:
    """A row of 24 rates (hours 0-23) per class given by its hours."""
    return _hour_rows(
        [(c.name, list(c.hourly_rps)) for c in scenario.classes if demand_of(c) == "hours"]
    )


def site_hours_table(scenario: Scenario) -> pd.DataFrame:
    """A row per site: its hourly grid, or its flat figure all day."""
    return _hour_rows(
        [(s.name, [float(s.grid_at(h)) for h in range(HOURS)]) for s in scenario.sites]
    )


def pasted_hours(text: str, where: str) -> list[float]:
    """24 values pasted as one row (a spreadsheet's row: tabs; or commas, semicolons, spaces,
    line breaks), each a number at least 0; InputError names what is wrong."""
    parts = [p for p in re.split(r"[\s,;]+", text.strip()) if p]
    if len(parts) != HOURS:
        raise InputError(
            f"a row of {HOURS} values (hours 0-23) is needed, {len(parts)} were pasted",
            field=where,
        )
    values = []
    for hour, part in enumerate(parts):
        try:
            value = float(part)
        except ValueError:
            raise InputError(f"{part!r} is not a number", field=f"{where}, hour {hour}") from None
        if not math.isfinite(value) or value < 0:
            raise InputError(f"{part!r}: at least 0 and finite", field=f"{where}, hour {hour}")
        values.append(value)
    return values


def filled_hours(values: list[float], start: int, end: int, value: float) -> list[float]:
    """`values` with hours start to end (end not included; at or before start it wraps past
    midnight, 0 to 0 the whole day, as a window does) set to `value`."""
    if not (0 <= start <= 23 and 0 <= end <= 24):
        raise InputError("hours run from 0 to 23 (the end up to 24)", field="fill")
    if not math.isfinite(value) or value < 0:
        raise InputError("the value is at least 0 and finite", field="fill")
    hours = range(start, end) if end > start else [*range(start, HOURS), *range(0, end)]
    return [value if h in set(hours) else v for h, v in enumerate(values)]


def with_hours(scenario: Scenario, table: str, name: str, values: list[float]) -> Scenario:
    """The scenario with `name`'s 24 values set: a class's rates (`HOURS_TITLE`), or a site's
    grid (`SITE_HOURS_TITLE`)."""
    raw = scenario.model_dump(mode="json")
    if table == HOURS_TITLE:
        for traffic in raw["classes"]:
            if traffic["name"] == name:
                traffic.pop("rate_rps", None)
                traffic.pop("shape", None)
                traffic["hourly_rps"] = values
    else:
        for site in raw["sites"]:
            if site["name"] == name:
                site["hourly_grid_gco2_per_kwh"] = values
    return validated(raw)


def offers_table(scenario: Scenario) -> pd.DataFrame:
    rows = [
        {"gpu_model": g.gpu_model, "name": g.name, "commitment": g.commitment}
        for g in scenario.gpus
    ]
    return pd.DataFrame(rows, columns=list(OFFER_LABELS)).astype({"name": object})


def day_settings(scenario: Scenario) -> dict[str, Any]:
    return {
        "timezone": scenario.timezone,
        "budget_usd_per_day": scenario.budget_usd_per_day,
        "carbon_cap_kg_per_day": scenario.carbon_cap_kg_per_day,
    }


def _where(table: str, row: str | None = None, column: str | None = None) -> str:
    return ", ".join(p for p in (TITLES[table], row, column) if p)


def _hours(table: pd.DataFrame, name: str, title: str) -> list[float] | None:
    """The 24 values of `name`'s row (None: no row of that name)."""
    rows = table[table["name"] == name].to_dict("records")
    if not rows:
        return None
    values = []
    for hour in HOUR_COLUMNS:
        value = cell_value(rows[0].get(hour))
        if value is None:
            raise InputError("every hour needs a value", field=f"{title}, {name}, hour {hour}")
        values.append(float(value))
    return values


def _volume(traffic: TrafficClass, row: dict[str, Any]) -> dict[str, Any]:
    """A volume class's fields from its row; what is blank is filled from the class as it was
    (a class that becomes a volume keeps its requests a day, over the whole day)."""
    start, end = cell_value(row.get("window_from")), cell_value(row.get("window_to"))
    if start is None and end is None:
        window = traffic.window_hours or (0, 0)
    elif start is None or end is None:
        raise InputError(
            "a window needs both hours", field=_where("classes", traffic.name, "Window")
        )
    else:
        window = (int(start), int(end))
    daily = cell_value(row.get("daily_requests"))
    if daily is None:
        daily = sum(traffic.hourly_demand()) * 3600
    return {"daily_requests": float(daily), "window_hours": list(window)}


def _class(traffic: TrafficClass, row: dict[str, Any], hours: pd.DataFrame) -> dict[str, Any]:
    raw = traffic.model_dump(mode="json")
    for name in ("hourly_rps", "shape", "daily_requests", "window_hours", "model"):
        raw.pop(name, None)
    demand = cell_value(row.get("demand")) or "flat"
    if demand not in DEMANDS:
        raise InputError(f"{demand!r} is not one of {', '.join(DEMANDS)}", field=_where("classes"))
    if demand in SHAPES and demand != "flat":
        raw["shape"] = demand
    elif demand == "hours":
        values = _hours(hours, traffic.name, HOURS_TITLE)
        if values is None:  # becomes hours: its day as it was
            values = list(traffic.hourly_demand())
        raw.pop("rate_rps", None)
        raw["hourly_rps"] = values
    elif demand == "volume":
        raw.pop("rate_rps", None)
        raw |= _volume(traffic, row)
    model = cell_value(row.get("model"))
    return raw | ({"model": str(model).strip()} if model else {})


def _offer(offer, row: dict[str, Any]) -> dict[str, Any]:
    raw = offer.model_dump(mode="json")
    raw.pop("name", None)
    raw["commitment"] = cell_value(row.get("commitment")) or "reserved"
    name = cell_value(row.get("name"))
    return raw | ({"name": str(name).strip()} if name else {})


def _sites(scenario: Scenario, site_hours: pd.DataFrame) -> list[dict[str, Any]]:
    sites = []
    for site in scenario.sites:
        raw = site.model_dump(mode="json")
        raw.pop("hourly_grid_gco2_per_kwh", None)
        values = _hours(site_hours, site.name, SITE_HOURS_TITLE)
        if values is not None and any(v != site.grid_gco2_per_kwh for v in values):
            raw["hourly_grid_gco2_per_kwh"] = values  # all its flat figure: none
        sites.append(raw)
    return sites


def with_day_tables(
    scenario: Scenario,
    *,
    classes: pd.DataFrame,
    hours: pd.DataFrame,
    offers: pd.DataFrame,
    site_hours: pd.DataFrame,
    settings: dict[str, Any],
) -> Scenario:
    """The day scenario the day tables describe (version 2), on `scenario`'s other fields."""
    raw = scenario.model_dump(mode="json") | {"version": 2}
    rows = classes.to_dict("records")
    raw["classes"] = [_class(c, r, hours) for c, r in zip(scenario.classes, rows, strict=True)]
    raw["gpus"] = [
        _offer(offer, row)
        for offer, row in zip(scenario.gpus, offers.to_dict("records"), strict=True)
    ]
    raw["sites"] = _sites(scenario, site_hours)
    raw |= {k: v or None for k, v in settings.items() if k != "timezone"}
    raw["timezone"] = (settings.get("timezone") or "UTC").strip()
    return validated(raw)


# Where the day tables show a field of version 2 (the rest: the peak tables, `place`).
_DAY_PLACES = {
    ("classes", "hourly_rps"): ("hours", None),
    ("classes", "daily_requests"): ("classes", DAY_CLASS_LABELS["daily_requests"]),
    ("classes", "window_hours"): ("classes", "Window"),
    ("classes", "model"): ("classes", "Model"),
    ("gpus", "name"): ("gpus", OFFER_LABELS["name"]),
    ("gpus", "commitment"): ("gpus", OFFER_LABELS["commitment"]),
    ("sites", "hourly_grid_gco2_per_kwh"): ("site_hours", None),
}


def _day_place(raw: dict[str, Any], loc: tuple) -> str:
    path = ".".join(str(part) for part in loc)
    if len(loc) >= 3 and (loc[0], loc[2]) in _DAY_PLACES and isinstance(loc[1], int):
        table, column = _DAY_PLACES[(loc[0], loc[2])]
        item = raw[loc[0]][loc[1]]
        return _where(table, str(item.get("name") or item.get("gpu_model")), column)
    return place(path) if path else "scenario"


def validated(raw: dict[str, Any]) -> Scenario:
    try:
        return Scenario.model_validate(raw)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        message = in_page_words(first["msg"].removeprefix("Value error, "))
        raise InputError(message, field=_day_place(raw, tuple(first["loc"]))) from None


_PEAK_ONLY = ("hourly_rps", "shape", "daily_requests", "window_hours", "model", "burstiness")


def at_the_peak(scenario: Scenario) -> Scenario:
    """The scenario of version 1 a day scenario is at its peak: every class at its peak rate,
    every offer reserved under its GPU's name, no hourly profile, no daily limit."""
    raw = scenario.model_dump(mode="json")
    for name in ("version", "timezone", "budget_usd_per_day", "carbon_cap_kg_per_day"):
        raw.pop(name, None)
    raw.pop("plan_bursts", None)
    for c in raw["classes"]:
        for name in _PEAK_ONLY:
            c.pop(name, None)
    for g in raw["gpus"]:
        g.pop("name", None)
        g.pop("commitment", None)
    for s in raw["sites"]:
        s.pop("hourly_grid_gco2_per_kwh", None)
        s.pop("hourly_electricity_usd_per_kwh", None)
    return validated(raw)


def with_offer(scenario: Scenario, gpu_model: str, hourly_usd: float) -> Scenario:
    """One more offer: `gpu_model` on demand at `hourly_usd` a GPU-hour, in the site (and with
    the figures) of its first offer, named after it. A price of nothing is refused: every hour
    rented would be free."""
    if not hourly_usd > 0:
        raise InputError(
            f"an on-demand price of ${hourly_usd:.2f} a GPU-hour would make every hour rented "
            "free: give what the GPU costs on demand",
            field="hourly_usd",
        )
    first = scenario.offer(gpu_model)
    taken = {g.offer_name for g in scenario.gpus}
    name = next(
        n
        for n in (f"{gpu_model} on demand", *(f"{gpu_model} on demand {i}" for i in range(2, 99)))
        if n not in taken
    )
    raw = scenario.model_dump(mode="json") | {"version": 2}
    offer = first.model_dump(mode="json") | {
        "name": name,
        "commitment": "on_demand",
        "hourly_usd": hourly_usd,
    }
    for owned in ("purchase_usd", "owned_count", "owned_capital", "owned_use"):
        offer.pop(owned, None)  # rented by the hour: nothing bought or owned
    raw["gpus"] = [*raw["gpus"], offer]
    return validated(raw)
