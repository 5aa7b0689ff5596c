"""A plan's exports with the inputs they rest on: `fleetplan plan --csv/--json` and the dashboard's
downloads write the same files through these functions.

`plan_inputs` gathers what a plan rests on: the scenario, and per GPU the price per GPU-hour with
where it came from (the reference price row it matches, or "entered"), the power and embodied
figures used (the scenario's override or the catalog's, with its source); per site the electricity
price, grid intensity with its basis and PUE, each with the region preset it matches, if any.

The CSV stays one row per pool (`planner.report.POOL_COLUMNS`, rounded per
`planner.report.CSV_DIGITS`) after a commented header: lines starting with `# ` that say what the
rows rest on in words, and one `# inputs: ` line holding the inputs as JSON. Text cells are quoted,
so `pandas.read_csv(path, comment='#')` reads the rows (a `#` inside a quoted cell stays data);
other readers skip the lines starting with `#`. The JSON is the plan's fields with an `inputs`
field beside them.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import pandas as pd

from fleetplan.core.tabular import neutralise
from fleetplan.planner.economics import GpuFacts
from fleetplan.planner.report import pool_table, rounded
from fleetplan.planner.results import Plan
from fleetplan.planner.scenario import HOURS_PER_YEAR, Scenario
from fleetplan.services.planning import facts_from_catalog

INPUTS_PREFIX = "# inputs: "
ENTERED = "entered in the scenario (no reference figure of this value)"
# Figures a GPU offer may set and the catalog otherwise gives (same names in both).
FIGURES = ("idle_w", "rated_w", "embodied_kgco2e", "lifetime_years")


def _text(value: Any, default: str) -> str:
    return default if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def _same(a: Any, b: Any) -> bool:
    return a is not None and b is not None and not pd.isna(b) and abs(float(a) - float(b)) < 1e-9


def _price_source(offer, prices: pd.DataFrame, catalog: pd.DataFrame) -> str:
    """Where a GPU's price comes from: the reference row it matches (the paper's first)."""
    if offer.purchase_usd is not None:
        row = catalog[catalog["gpu_id"] == offer.gpu_model]
        if not row.empty and _same(offer.purchase_usd, row.iloc[0].get("purchase_usd")):
            return f"purchase price: {row.iloc[0]['purchase_source']}"
        return ENTERED
    mine = prices[prices["gpu_id"] == offer.gpu_model] if not prices.empty else prices
    matches = [r for r in mine.to_dict("records") if _same(offer.hourly_usd, r["usd_per_gpu_hour"])]
    matches.sort(key=lambda r: r.get("kind") != "paper assumption")
    if not matches:
        return ENTERED
    r = matches[0]
    kind = _text(r.get("kind"), "kind unknown")
    return f"{r['provider']}, {r['price_date']} ({kind}): {r['source']}"


def _gpu_inputs(
    scenario: Scenario, facts: dict[str, GpuFacts], prices: pd.DataFrame, catalog: pd.DataFrame
) -> list[dict[str, Any]]:
    rows = []
    for offer in scenario.gpus:
        known = facts.get(offer.gpu_model, GpuFacts(offer.gpu_model))
        row: dict[str, Any] = {
            "gpu_model": offer.gpu_model,
            "usd_per_gpu_hour": offer.usd_per_gpu_hour(),
            "price_basis": (
                "hourly rent"
                if offer.hourly_usd is not None
                else f"purchase ${offer.purchase_usd:g} over {offer.lifetime_years:g} years "
                f"({HOURS_PER_YEAR:g} h a year)"
            ),
            "price_source": _price_source(offer, prices, catalog),
            "electricity_included": offer.electricity_included,
            "include_embodied": offer.include_embodied,
            "site": offer.site,
        }
        for name in FIGURES:
            mine = getattr(offer, name)
            if mine is not None:
                row[name], row[f"{name}_source"] = mine, "the scenario"
                continue
            value = getattr(known, name)
            source = known.sources.get(name) if value is not None else None
            row[name] = value
            row[f"{name}_source"] = (
                f"catalog: {source}" if source else "unknown" if value is None else "catalog"
            )
        row |= _host_inputs(offer, known)
        rows.append(row)
    return rows


def _host_inputs(offer, known: GpuFacts) -> dict[str, Any]:
    """The host server's embodied share used: the offer's per server, else the catalog's per
    GPU (x GPUs per server), with its source; unknown when neither gives one."""
    if offer.host_embodied_kgco2e is not None:
        return {
            "host_embodied_kgco2e_per_server": offer.host_embodied_kgco2e,
            "host_embodied_kgco2e_per_gpu": None,
            "host_embodied_source": "the scenario (per server)",
        }
    per_gpu = known.host_embodied_kgco2e_per_gpu
    source = known.sources.get("host_embodied_kgco2e_per_gpu")
    return {
        "host_embodied_kgco2e_per_server": None,
        "host_embodied_kgco2e_per_gpu": per_gpu,
        "host_embodied_source": (
            "unknown: embodied carbon counts the GPUs only"
            if per_gpu is None
            else f"catalog (x GPUs per server): {source}"
        ),
    }


def _region_match(site, regions: pd.DataFrame) -> tuple[dict | None, dict | None]:
    """The region presets whose grid figure and whose electricity price equal the site's
    (a region matching both is preferred for both)."""
    records = regions.to_dict("records") if not regions.empty else []
    grid = [r for r in records if _same(site.grid_gco2_per_kwh, r.get("grid_gco2_per_kwh"))]
    price = [
        r for r in records if _same(site.electricity_usd_per_kwh, r.get("electricity_usd_per_kwh"))
    ]
    both = [r for r in grid if r in price]
    if both:
        return both[0], both[0]
    return (grid[0] if grid else None), (price[0] if price else None)


def _site_inputs(scenario: Scenario, regions: pd.DataFrame) -> list[dict[str, Any]]:
    rows = []
    for site in scenario.sites:
        grid, price = _region_match(site, regions)
        pue_source = ENTERED
        for region in (grid, price):
            if region is not None and _same(site.pue, region.get("pue_default")):
                pue_source = f"region preset {region['region_id']}: {region['pue_source']}"
        if site.pue == 1.0 and pue_source == ENTERED:
            pue_source = "entered: 1.0, no facility overhead (e.g. GPUs in homes)"
        rows.append(
            {
                "name": site.name,
                "electricity_usd_per_kwh": site.electricity_usd_per_kwh,
                "electricity_source": (
                    f"region preset {price['region_id']} "
                    f"({_text(price['electricity_basis'], 'basis unknown')}, "
                    f"{_text(price['electricity_year'], 'year unknown')}): "
                    f"{price['electricity_source']}"
                    if price
                    else ENTERED
                ),
                "grid_gco2_per_kwh": site.grid_gco2_per_kwh,
                "grid_basis": site.grid_basis
                or (_text(grid["grid_basis"], "unknown") if grid else "unknown (entered)"),
                "grid_source": (
                    f"region preset {grid['region_id']} "
                    f"({_text(grid['grid_year'], 'year unknown')}): "
                    f"{grid['grid_source']}"
                    if grid
                    else ENTERED
                ),
                "pue": site.pue,
                "pue_source": pue_source,
            }
        )
    return rows


def plan_inputs(
    scenario: Scenario,
    *,
    catalog: pd.DataFrame,
    prices: pd.DataFrame,
    regions: pd.DataFrame,
) -> dict[str, Any]:
    """What the plan rests on: the scenario, the prices, power and embodied figures per GPU and
    the site figures, each with where it came from; and the hours in a month and a year."""
    facts = facts_from_catalog(catalog)
    return {
        "scenario": scenario.model_dump(mode="json"),
        "gpus": _gpu_inputs(scenario, facts, prices, catalog),
        "sites": _site_inputs(scenario, regions),
        "hours_per_month": 730.0,
        "hours_per_year": HOURS_PER_YEAR,
        "power_model": (
            "per server: measured power at the level where measured (level_power_w), else GPUs x "
            "(idle_w + load / level throughput x (rated_w - idle_w)); energy x PUE x grid = "
            "operational carbon; (GPUs x embodied_kgco2e + host share per server) / "
            "(lifetime_years x hours_per_year) per hour = embodied carbon, where the host share is "
            "host_embodied_kgco2e_per_server, else host_embodied_kgco2e_per_gpu x GPUs per server "
            "(its part in host_embodied_kgco2e_month); cost = GPUs x usd_per_gpu_hour, plus "
            "energy x PUE x electricity price where electricity is not included. Energy columns: "
            "gpu_energy_kwh_month is before PUE, facility_energy_kwh_month = it x PUE. "
            "utilization = rate_rps / (servers x full_capacity_rps_per_server); "
            "capacity_rps_per_server = full_capacity_rps_per_server x max_utilization"
        ),
    }


def _one_line(text: object) -> str:
    """Text for a comment line: on one line, and no cell after a comma a spreadsheet would run
    as a formula."""
    flat = re.sub(r"[\r\n]+", " ", str(text))
    return re.sub(r",(\s*)([=+\-@\t])", r",\1'\2", flat)


def _header(plan: Plan, inputs: dict[str, Any]) -> list[str]:
    scenario = inputs["scenario"]
    lines = [
        "fleetplan plan: one row per pool; these lines are the inputs the rows rest on.",
        "Read the rows with pandas.read_csv(path, comment='#'); numbers are rounded per column "
        "(planner.report.CSV_DIGITS); the last # line holds the inputs as JSON.",
        f"scenario: {plan.scenario}; model {plan.model}; objective {plan.objective}; capacity "
        f"rule {plan.capacity_rule}; utilisation ceiling {scenario['max_utilization']:g}",
    ]
    for gpu in inputs["gpus"]:
        included = "included" if gpu["electricity_included"] else "not included"
        lines.append(
            f"GPU {gpu['gpu_model']} at site {gpu['site']}: ${gpu['usd_per_gpu_hour']:g} per "
            f"GPU-hour ({gpu['price_basis']}; electricity {included}) from {gpu['price_source']}"
        )
        for name in ("idle_w", "rated_w", "embodied_kgco2e", "lifetime_years"):
            value = "unknown" if gpu[name] is None else f"{gpu[name]:g}"
            lines.append(f"  {gpu['gpu_model']} {name} {value} from {gpu[f'{name}_source']}")
        lines.append(f"  {gpu['gpu_model']} host share: {_host_text(gpu)}")
    for site in inputs["sites"]:
        lines.append(
            f"site {site['name']}: electricity ${site['electricity_usd_per_kwh']:g}/kWh from "
            f"{site['electricity_source']}; grid {site['grid_gco2_per_kwh']:g} gCO2e/kWh "
            f"({site['grid_basis']}) from {site['grid_source']}; PUE {site['pue']:g} from "
            f"{site['pue_source']}"
        )
    lines += [f"note: {note}" for note in plan.notes]
    return lines


def _host_text(gpu: dict[str, Any]) -> str:
    if gpu["host_embodied_kgco2e_per_server"] is not None:
        value = f"{gpu['host_embodied_kgco2e_per_server']:g} kgCO2e per server"
    elif gpu["host_embodied_kgco2e_per_gpu"] is not None:
        value = f"{gpu['host_embodied_kgco2e_per_gpu']:g} kgCO2e per GPU"
    else:
        value = "unknown"
    return f"{value} from {gpu['host_embodied_source']}"


def plan_csv(plan: Plan, inputs: dict[str, Any]) -> str:
    """The plan's pools as CSV after a commented header of the inputs (module docstring)."""
    buffer = io.StringIO()
    for line in _header(plan, inputs):
        buffer.write(f"# {_one_line(line)}\n")
    # A comma before a formula character, or before spaces and one, is only ever inside a JSON
    # string (the separators are ", " and ": ", and no input is negative): escaped as \u002c
    # there, the same data, and no spreadsheet cell after a comma starts a formula.
    data = re.sub(r",(?=[=+\-@]|\s+[=+@])", r"\\u002c", json.dumps(inputs, ensure_ascii=False))
    buffer.write(INPUTS_PREFIX + data + "\n")
    table = rounded(pool_table(plan))
    for column in table.columns:
        if table[column].dtype == object or pd.api.types.is_string_dtype(table[column]):
            table[column] = table[column].map(neutralise)
    table.to_csv(buffer, index=False, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    return buffer.getvalue()


def read_inputs(csv_text: str) -> dict[str, Any]:
    """The inputs a plan CSV carries (its `# inputs: ` line)."""
    for line in csv_text.splitlines():
        if line.startswith(INPUTS_PREFIX):
            return json.loads(line.removeprefix(INPUTS_PREFIX))
        if not line.startswith("#"):
            break
    raise ValueError("no '# inputs: ' line before the header row: not a fleetplan plan CSV")


def plan_json(plan: Plan, inputs: dict[str, Any]) -> str:
    """The whole plan as JSON, with the inputs it rests on in `inputs`."""
    return json.dumps({**plan.model_dump(mode="json"), "inputs": inputs}, indent=1) + "\n"
