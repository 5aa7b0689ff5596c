"""The Plan page's forms as plain tables, and back to a Scenario. No Streamlit here: tested alone.

Editable tables are what `st.data_editor` shows; `scenario_from_forms` turns them back into a
validated `Scenario`, with errors that name the table, the row and the column, so that the page
and the command line validate with the same model. To show one more scenario field in a table,
add its name to that table's columns here (and a column config on the page).
"""

from __future__ import annotations

import math
from typing import Any, get_args

import pandas as pd
from pydantic import ValidationError

from fleetplan.core.errors import InputError
from fleetplan.planner.economics import GpuFacts
from fleetplan.planner.scenario import CapacityRule, CarbonPrice, Scenario
from fleetplan.services.exports import follow_model

CLASS_COLUMNS = ("name", "rate_rps", "share_pct", "ttft_p99_ms", "tpot_p99_ms")
GPU_COLUMNS = (
    "gpu_model",
    "hourly_usd",
    "electricity_included",
    "site",
    "max_gpus",
    "include_embodied",
    "idle_w",
    "rated_w",
    "embodied_kgco2e",
)
SITE_COLUMNS = ("name", "electricity_usd_per_kwh", "grid_gco2_per_kwh", "pue")
# The objective as the page offers it: a carbon price is "price" with its own number.
OBJECTIVE_CHOICES = ("cost", "carbon", "price")
# The scenario's `capacity_rule`, as the page offers it.
CAPACITY_RULES: tuple[str, ...] = get_args(CapacityRule)
CAPACITY_RULE_LABELS = {"model": "Latency model", "measured": "Measured levels"}


def cell_value(value: Any) -> Any:
    """A cell's value, or None for a missing one: None, NaN, pd.NA, NaT or a blank string (what
    `st.data_editor` and a DataFrame row give for an empty cell)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str) and not value.strip():
        return None
    return value


def classes_table(scenario: Scenario) -> pd.DataFrame:
    """Traffic classes; `share_pct` (of a total rate) is an alternative way to give a rate."""
    rows = [{c: getattr(k, c, None) for c in CLASS_COLUMNS} for k in scenario.classes]
    return pd.DataFrame(rows, columns=list(CLASS_COLUMNS)).astype(
        {"rate_rps": float, "share_pct": float, "ttft_p99_ms": float, "tpot_p99_ms": float}
    )


def _rates_from_shares(classes: list[dict[str, Any]], total_rps: float | None) -> list[dict]:
    """A class given as a share of the total rate gets its rate; the share is not kept."""
    out = []
    for i, row in enumerate(classes):
        share = row.pop("share_pct", None)
        if row.get("rate_rps") is None and share is not None:
            if not total_rps:
                where = f"Traffic classes, row {i + 1}, column share_pct"
                raise InputError("a share needs the total rate below the table", field=where)
            row["rate_rps"] = total_rps * share / 100
        out.append(row)
    return out


_FACTS_SHOWN = ("idle_w", "rated_w", "embodied_kgco2e")
_GPU_TYPES = {
    "hourly_usd": float,
    "idle_w": float,
    "rated_w": float,
    "embodied_kgco2e": float,
    "max_gpus": "Int64",
}


def gpus_table(scenario: Scenario, facts: dict[str, GpuFacts] | None = None) -> pd.DataFrame:
    """GPU offers; power and embodied figures the scenario leaves open show the catalog's."""
    rows = []
    for offer in scenario.gpus:
        row = {c: getattr(offer, c) for c in GPU_COLUMNS}
        known = (facts or {}).get(offer.gpu_model)
        for column in _FACTS_SHOWN:
            if row[column] is None and known is not None:
                row[column] = getattr(known, column)
        rows.append(row)
    return pd.DataFrame(rows, columns=list(GPU_COLUMNS)).astype(_GPU_TYPES)


def sites_table(scenario: Scenario) -> pd.DataFrame:
    rows = [{c: getattr(s, c) for c in SITE_COLUMNS} for s in scenario.sites]
    return pd.DataFrame(rows, columns=list(SITE_COLUMNS))


def _records(table: pd.DataFrame, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    records = []
    for row in table.to_dict("records"):
        cleaned = {c: cell_value(row.get(c)) for c in columns}
        if all(v is None for v in cleaned.values()):
            continue  # an empty row the editor added
        records.append({k: v for k, v in cleaned.items() if v is not None})
    return records


_TABLE_OF = {"classes": "Traffic classes", "gpus": "GPUs", "sites": "Sites"}


def scenario_from_forms(
    base: Scenario,
    *,
    model: str,
    classes: pd.DataFrame,
    gpus: pd.DataFrame,
    sites: pd.DataFrame,
    settings: dict[str, Any],
    total_rps: float | None = None,
) -> Scenario:
    """The scenario the page's inputs describe; InputError names the table, row and column."""
    raw = base.model_dump(mode="json")
    raw |= {
        "name": follow_model(base.name, old_model=base.model, new_model=model),
        "model": model,
        "classes": _rates_from_shares(_records(classes, CLASS_COLUMNS), total_rps),
        "gpus": [
            {**g, "max_gpus": int(g["max_gpus"])} if "max_gpus" in g else g
            for g in _records(gpus, GPU_COLUMNS)
        ],
        "sites": _records(sites, SITE_COLUMNS),
        **settings,
    }
    try:
        return Scenario.model_validate(raw)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        loc = [str(part) for part in first["loc"]]
        where = loc[0] if loc else "scenario"
        if where in _TABLE_OF and len(loc) >= 2 and loc[1].isdigit():
            column = f", column {loc[2]}" if len(loc) > 2 else ""
            where = f"{_TABLE_OF[where]}, row {int(loc[1]) + 1}{column}"
        message = first["msg"].removeprefix("Value error, ")
        raise InputError(message, field=where) from None


def objective_choice(scenario: Scenario) -> str:
    """Which of `OBJECTIVE_CHOICES` the scenario's objective is."""
    return "price" if isinstance(scenario.objective, CarbonPrice) else str(scenario.objective)


def scenario_settings(
    *,
    objective: str,
    carbon_price_usd_per_t: float | None,
    max_utilization: float,
    budget_usd_per_hour: float | None,
    carbon_cap_kg_per_hour: float | None,
    capacity_rule: str | None = None,
) -> dict[str, Any]:
    """The page's single inputs as scenario fields (`scenario_from_forms`' `settings`); a budget
    or carbon cap of 0 means none; no capacity rule keeps the scenario's."""
    rule = {"capacity_rule": capacity_rule} if capacity_rule is not None else {}
    return rule | {
        "objective": (
            {"carbon_price_usd_per_t": carbon_price_usd_per_t}
            if objective == "price"
            else objective
        ),
        "max_utilization": max_utilization,
        "budget_usd_per_hour": budget_usd_per_hour or None,
        "carbon_cap_kg_per_hour": carbon_cap_kg_per_hour or None,
    }


def site_names(sites: pd.DataFrame, scenario: Scenario) -> list[str]:
    """The sites named in the (edited) sites table, or the scenario's when it names none."""
    named = [s for s in sites["name"].dropna().tolist() if s]
    return named or [s.name for s in scenario.sites]
