"""The Plan page's forms as plain tables, and back to a Scenario. No Streamlit here: tested alone.

Editable tables are what `st.data_editor` shows; `scenario_from_forms` turns them back into a
validated `Scenario`, with errors that name the table, the row and the column.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
from fleetplan.planner import GpuFacts, Scenario
from fleetplan.planner.presets import PRESETS
from fleetplan.warehouse.queries import models_by_coverage
from pydantic import ValidationError

from fleetplan.core.errors import InputError

CLASS_COLUMNS = ("name", "rate_rps", "share_pct", "ttft_p99_ms", "tpot_p99_ms")
GPU_COLUMNS = ("gpu_model", "hourly_usd", "electricity_included", "site", "max_gpus",
               "include_embodied", "idle_w", "rated_w", "embodied_kgco2e")  # fmt: skip
SITE_COLUMNS = ("name", "electricity_usd_per_kwh", "grid_gco2_per_kwh", "pue")
DEFAULT_PRESET = "chatbot + batch eval"
DEFAULT_HEADROOM = 0.8
# Default sites: rented datacenter GPUs in Virginia (US data-centre hub); consumer GPUs in homes
# (PUE 1.0) on the US average grid. Both editable; values come from the region presets.
DEFAULT_SITES = {"datacenter": ("us-va", None), "consumer": ("us", 1.0)}


def _none(value: Any) -> Any:
    """Missing cells from data_editor (None, NaN, pd.NA, '') as None."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str) and not value.strip():
        return None
    return value


def default_price(prices: pd.DataFrame, gpu_model: str) -> tuple[float | None, str | None]:
    """The paper's price where there is one (so that its figures reproduce), else the lowest."""
    mine = prices[prices["gpu_id"] == gpu_model]
    if mine.empty:
        return None, None
    paper = mine[mine["kind"] == "paper assumption"]
    row = (paper if not paper.empty else mine.sort_values("usd_per_gpu_hour")).iloc[0]
    return float(row["usd_per_gpu_hour"]), f"{row['provider']}, {row['price_date']}"


def site_from_region(name: str, region: dict[str, Any], pue: float | None = None) -> dict:
    return {
        "name": name,
        "electricity_usd_per_kwh": _none(region.get("electricity_usd_per_kwh")) or 0.0,
        "grid_gco2_per_kwh": _none(region.get("grid_gco2_per_kwh")) or 0.0,
        "pue": pue if pue is not None else (_none(region.get("pue_default")) or 1.0),
    }


def default_scenario(
    points: pd.DataFrame, catalog: pd.DataFrame, prices: pd.DataFrame, regions: pd.DataFrame
) -> Scenario:
    """A sensible first scenario: the best-covered model, the paper's prices, preset traffic."""
    model = models_by_coverage(points)[0]
    measured = sorted(points.loc[points["model"] == model, "gpu_model"].unique())
    segments = dict(zip(catalog["gpu_id"], catalog["segment"], strict=True))
    by_region = {row["region_id"]: row for row in regions.to_dict("records")}
    gpus, used_sites = [], set()
    for gpu_model in measured:
        price, _ = default_price(prices, gpu_model)
        if price is None:
            continue
        site = "consumer" if segments.get(gpu_model) == "consumer" else "datacenter"
        used_sites.add(site)
        gpus.append({"gpu_model": gpu_model, "hourly_usd": price, "site": site})
    sites = [
        site_from_region(name, by_region.get(region, {}), pue)
        for name, (region, pue) in DEFAULT_SITES.items()
        if name in used_sites
    ]
    short = model.split("/")[-1]
    return Scenario.model_validate(
        {
            "name": f"{DEFAULT_PRESET} on {short}",
            "model": model,
            "classes": [c.model_dump(exclude_none=True) for c in PRESETS[DEFAULT_PRESET]],
            "gpus": gpus,
            "sites": sites,
            "max_utilization": DEFAULT_HEADROOM,
        }
    )


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
_GPU_TYPES = {"hourly_usd": float, "idle_w": float, "rated_w": float, "embodied_kgco2e": float,
              "max_gpus": "Int64"}  # fmt: skip


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
        cleaned = {c: _none(row.get(c)) for c in columns}
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
