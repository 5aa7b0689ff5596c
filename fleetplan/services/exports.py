"""A plan's exports with the inputs they rest on: `fleetplan plan --csv/--json` and the dashboard's
downloads write the same files through these functions.

`plan_inputs` gathers what a plan rests on: the scenario, and per GPU the price per GPU-hour with
where it came from (the reference price row it matches, or "entered"), the power and embodied
figures used (the scenario's override or the catalog's, with its source); per site the electricity
price, grid intensity with its basis and PUE, each with the region preset it matches, if any.

Every CSV has its header on the first line and nothing else but rows (RFC 4180: Python's `csv`,
`pandas.read_csv` with its defaults, a spreadsheet and BI tools read it as it is); text cells are
quoted and never start a formula. `plan_csv`: every pool (recommended and baselines);
`fleet_csv`: the recommended fleet alone with a TOTAL row; `sources_csv`: every input figure with
where it came from; `services.workbook.plan_xlsx`: a workbook with sheets fleet, baselines, inputs
and sources. The JSON is the plan's fields with an `inputs` field beside them and its `headline`
(the figures the page and the text lead with). Each is built only when asked for (the page's
download buttons build theirs on click).

A day scenario (version 2) is planned over its 24 hours, and its exports are the day's: the fleet
CSV one row per configuration under each offer the day reserves or rents (`DAY_COLUMNS`: its
servers hour by hour, its classes' shares, its part of the day's cost and carbon) with a TOTAL
row equal to the day's figures; the pool CSV those rows and each compared fleet's day (the peak
plan run through the day, reserved only); the workbook a `schedule` sheet beside them. The peak
plan is then a comparison, as on the page.
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pandas as pd

from fleetplan.core.tabular import neutralise
from fleetplan.planner.peak.economics import GpuFacts
from fleetplan.planner.peak.results import Plan
from fleetplan.planner.report.table import FLEET_FIGURES, pool_table, rounded
from fleetplan.planner.scenario.parts import HOURS_PER_YEAR
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.services.currency import source_rows
from fleetplan.services.planning import facts_from_catalog

TOTAL = "TOTAL"  # the fleet table's last row, in `class`
SOURCE_COLUMNS = ("item", "figure", "value", "unit", "source")
ENTERED = "entered in the scenario (no reference figure of this value)"
# Figures a GPU offer may set and the catalog otherwise gives (same names in both).
FIGURES = ("idle_w", "rated_w", "embodied_kgco2e", "lifetime_years")


def _text(value: Any, default: str) -> str:
    return default if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def _same(a: Any, b: Any) -> bool:
    return a is not None and b is not None and not pd.isna(b) and abs(float(a) - float(b)) < 1e-9


def _price_source(offer, prices: pd.DataFrame, catalog: pd.DataFrame) -> str:
    """Where a GPU's price comes from: the reference row it matches (the paper's first)."""
    if offer.owned_count is not None and offer.owned_capital == "sunk":
        return "entered in the scenario: GPUs owned, their purchase already spent"
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


def _price_basis(offer) -> str:
    """How an offer's price per GPU-hour is made: a rent, a purchase spread over its lifetime,
    or GPUs owned (their capital sunk, or amortised as a purchase)."""
    purchase = (
        f"purchase ${offer.purchase_usd:g} over {offer.lifetime_years:g} years "
        f"({HOURS_PER_YEAR:g} h a year)"
        if offer.purchase_usd is not None and offer.lifetime_years is not None
        else None
    )
    if offer.owned_count is not None:
        use = "kept, more bought" if offer.owned_use == "minimum" and purchase else "no more"
        owned = f"{offer.owned_count} owned ({use})"
        if offer.owned_capital == "sunk":
            return f"{owned}, capital sunk: 0 a GPU-hour, their electricity counted"
        return f"{owned}, capital amortised: {purchase}"
    return "hourly rent" if offer.hourly_usd is not None else str(purchase)


def _gpu_inputs(
    scenario: Scenario, facts: dict[str, GpuFacts], prices: pd.DataFrame, catalog: pd.DataFrame
) -> list[dict[str, Any]]:
    rows = []
    for offer in scenario.gpus:
        known = facts.get(offer.gpu_model, GpuFacts(offer.gpu_model))
        row: dict[str, Any] = {
            "gpu_model": offer.gpu_model,
            "usd_per_gpu_hour": offer.usd_per_gpu_hour(),
            "price_basis": _price_basis(offer),
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


def pool_rows(plan: Plan, *, include_baselines: bool = True) -> pd.DataFrame:
    """The pool table rounded to the CSV's digits, text cells neutralised."""
    table = rounded(pool_table(plan, include_baselines=include_baselines))
    for column in table.columns:
        if table[column].dtype == object or pd.api.types.is_string_dtype(table[column]):
            table[column] = table[column].map(neutralise)
    return table


def _csv(table: pd.DataFrame) -> str:
    """RFC 4180: the header on the first line, text quoted, CRLF kept out (one line a row)."""
    buffer = io.StringIO()
    table.to_csv(buffer, index=False, lineterminator="\n", quoting=csv.QUOTE_NONNUMERIC)
    return buffer.getvalue()


def plan_csv(plan: Plan) -> str:
    """Every pool of the plan (the recommended fleet's and each baseline's, told apart by
    `fleet`), one row each, the header first: `planner.report.table.POOL_COLUMNS`, rounded per
    `planner.report.table.CSV_DIGITS` (a day plan's: `day_pool_table`). What the rows rest on is
    in `sources_csv` and the JSON."""
    return _csv(day_pool_table(plan) if is_day(plan) else pool_rows(plan))


def fleet_table(plan: Plan) -> pd.DataFrame:
    """The recommended fleet alone, one row per pool with its carbon (operational + embodied)
    and a last row `class` = TOTAL: its GPUs, servers, $/h, $/month, power, energy and
    kgCO2e/month (from the plan's totals; unknown where any pool's is); every figure rounded
    to the CSV's digits (`planner.report.table.CSV_DIGITS`)."""
    table = pool_rows(plan, include_baselines=False)
    operational, embodied = table["operational_kgco2e_month"], table["embodied_kgco2e_month"]
    at = list(table.columns).index("host_embodied_kgco2e_month") + 1
    table.insert(at, "carbon_kgco2e_month", operational + embodied)
    totals = plan.recommended.totals
    if totals is None:
        return rounded(table)
    row: dict[str, Any] = {
        "scenario": neutralise(plan.scenario),
        "fleet": plan.recommended.name,
        "class": TOTAL,
        "gpu_model": ", ".join(f"{n} x {gpu}" for gpu, n in sorted(totals.gpus.items())),
        "servers": totals.servers,
        "gpus": sum(totals.gpus.values()),
        "rate_rps": float(table["rate_rps"].sum()),
    }
    for name in (
        *FLEET_FIGURES,
        "carbon_kgco2e_month",
        "output_tokens_per_s",
        "total_tokens_per_s",
    ):
        row[name] = getattr(totals, name)
    return rounded(pd.concat([table, pd.DataFrame([row])], ignore_index=True)[table.columns])


def fleet_csv(plan: Plan) -> str:
    """`fleet_table` as CSV, the header first (a day plan's: `day_fleet_table`)."""
    return _csv(day_fleet_table(plan) if is_day(plan) else fleet_table(plan))


def is_day(plan: Plan) -> bool:
    """A day scenario's plan (version 2): its exports are the day's."""
    return plan.day is not None


DAY_FLEET = "recommended (day)"
DAY_COLUMNS = (
    "scenario",
    "fleet",
    "offer",
    "commitment",
    "gpu_model",
    "gpus_per_server",
    "server",
    "classes",
    "servers",
    "servers_by_hour",
    "gpu_hours",
    "cost_usd_day",
    "monthly_cost_usd",
    "energy_kwh_day",
    "kgco2e_day",
    "monthly_kgco2e",
    "basis",
)


def hours_text(values: list[int] | list[float]) -> str:
    """24 hourly values in runs: "00-05h 2, 06h 0, 07-23h 3"."""
    runs: list[tuple[int, int, float]] = []
    for hour, value in enumerate(values):
        if runs and runs[-1][2] == value:
            runs[-1] = (runs[-1][0], hour, value)
        else:
            runs.append((hour, hour, value))
    return ", ".join(
        (f"{a:02d}h" if a == b else f"{a:02d}-{b:02d}h") + f" {v:g}" for a, b, v in runs
    )


def _day_rows(plan: Plan) -> list[dict[str, Any]]:
    day = plan.day
    rows = []
    for unit in day.fleet:
        classes = "; ".join(
            f"{c.traffic_class} ({c.model}) {c.share:.0%} of its requests" for c in unit.classes
        )
        servers = {c.server for c in unit.classes if c.server}
        rows.append(
            {
                "scenario": neutralise(plan.scenario),
                "fleet": DAY_FLEET,
                "offer": neutralise(unit.offer),
                "commitment": unit.commitment,
                "gpu_model": unit.gpu_model,
                "gpus_per_server": unit.gpus_per_server,
                "server": neutralise("; ".join(sorted(servers))),
                "classes": neutralise(classes or "none (idle)"),
                "servers": unit.servers,
                "servers_by_hour": hours_text(unit.servers_by_hour),
                "gpu_hours": unit.gpu_hours,
                "cost_usd_day": unit.cost_usd,
                "monthly_cost_usd": unit.monthly_cost_usd,
                "energy_kwh_day": unit.energy_kwh,
                "kgco2e_day": unit.kgco2e,
                "monthly_kgco2e": unit.monthly_kgco2e,
                "basis": unit.basis,
            }
        )
    return rows


def _day_total(plan: Plan) -> dict[str, Any]:
    day = plan.day
    gpus: dict[str, int] = {}
    for unit in day.fleet:
        gpus[unit.gpu_model] = gpus.get(unit.gpu_model, 0) + unit.servers * unit.gpus_per_server
    return {
        "scenario": neutralise(plan.scenario),
        "fleet": DAY_FLEET,
        "offer": TOTAL,
        "commitment": "",
        "gpu_model": ", ".join(f"{n} x {gpu}" for gpu, n in sorted(gpus.items())),
        "servers": sum(unit.servers for unit in day.fleet),
        "gpu_hours": day.gpu_hours,
        "cost_usd_day": day.cost_usd,
        "monthly_cost_usd": day.monthly_cost_usd,
        "energy_kwh_day": day.energy_kwh,
        "kgco2e_day": day.kgco2e,
        "monthly_kgco2e": day.monthly_kgco2e,
    }


def _day_table(rows: list[dict[str, Any]]) -> pd.DataFrame:
    table = pd.DataFrame(rows, columns=list(DAY_COLUMNS))
    figures = ("gpu_hours", "cost_usd_day", "monthly_cost_usd", "energy_kwh_day")
    for column in (*figures, "kgco2e_day", "monthly_kgco2e"):  # unknown stays empty
        table[column] = table[column].map(lambda v: None if v is None else round(float(v), 4))
    return table


def day_fleet_table(plan: Plan) -> pd.DataFrame:
    """A day plan's fleet: one row per configuration under each offer the day uses
    (`DAY_COLUMNS`), then a TOTAL row (in `offer`) whose cost, carbon, energy and GPU-hours are
    the day's own (`plan.day`), as the page and the text lead with."""
    return _day_table([*_day_rows(plan), _day_total(plan)])


def day_pool_table(plan: Plan) -> pd.DataFrame:
    """A day plan's every fleet: the day's rows (`day_fleet_table` without its total), then one
    row per compared fleet with its day's figures (`fleet` its name)."""
    rows = _day_rows(plan)
    for other in plan.day.compared:
        rows.append(
            {
                "scenario": neutralise(plan.scenario),
                "fleet": neutralise(other.name),
                "offer": other.status.value if other.cost_usd is None else "",
                "classes": neutralise(other.message) if other.cost_usd is None else "",
                "gpu_hours": other.gpu_hours,
                "cost_usd_day": other.cost_usd,
                "monthly_cost_usd": other.monthly_cost_usd,
                "kgco2e_day": other.kgco2e,
                "monthly_kgco2e": other.monthly_kgco2e,
            }
        )
    return _day_table(rows)


def headline(plan: Plan) -> dict[str, Any]:
    """The figures the page and the text lead with: the day's for a day scenario, else the
    recommended fleet's (None where there is no plan)."""
    if is_day(plan):
        day = plan.day
        return {
            "plan": "day",
            "status": day.status.value,
            "cost_usd_per_day": day.cost_usd,
            "monthly_cost_usd": day.monthly_cost_usd,
            "kgco2e_per_day": day.kgco2e,
            "monthly_kgco2e": day.monthly_kgco2e,
            "gpu_hours_per_day": day.gpu_hours,
        }
    totals = plan.recommended.totals
    return {
        "plan": "peak",
        "status": plan.status.value,
        "cost_usd_per_day": None if totals is None else totals.hourly_cost_usd * 24,
        "monthly_cost_usd": None if totals is None else totals.monthly_cost_usd,
        "kgco2e_per_day": None
        if totals is None or totals.carbon_kgco2e_month is None
        else totals.carbon_kgco2e_month * 24 / 730,
        "monthly_kgco2e": None if totals is None else totals.carbon_kgco2e_month,
        "gpu_hours_per_day": None if totals is None else 24 * sum(totals.gpus.values()),
    }


def sources_table(plan: Plan, inputs: dict[str, Any]) -> pd.DataFrame:
    """Every figure the plan rests on, one row each: `item` (the scenario, a GPU, a site),
    `figure`, `value`, `unit` and `source` (where it came from, or "entered"); the plan's notes
    last."""
    scenario = inputs["scenario"]
    rows: list[tuple[str, str, Any, str, str]] = [
        ("scenario", "name", plan.scenario, "", "entered"),
        ("scenario", "model", plan.model, "", "entered"),
        ("scenario", "objective", plan.objective, "", "entered"),
        ("scenario", "capacity rule", plan.capacity_rule, "", "entered"),
        ("scenario", "utilisation ceiling", scenario["max_utilization"], "share", "entered"),
    ]
    if scenario.get("currency", "USD") != "USD":
        rows += source_rows(Scenario.model_validate(scenario))
    for traffic in scenario["classes"]:
        rows += _class_demand(traffic)
        for target in ("ttft_p99_ms", "tpot_p99_ms"):
            if traffic.get(target) is not None:
                label = f"{target[:4].upper()} P99 target"
                rows.append((f"class {traffic['name']}", label, traffic[target], "ms", "entered"))
    rows += [row for gpu in inputs["gpus"] for row in _gpu_sources(gpu)]
    for site in inputs["sites"]:
        item = f"site {site['name']}"
        rows += [
            (
                item,
                "electricity price",
                site["electricity_usd_per_kwh"],
                "$/kWh",
                site["electricity_source"],
            ),
            (
                item,
                f"grid intensity ({site['grid_basis']})",
                site["grid_gco2_per_kwh"],
                "gCO2e/kWh",
                site["grid_source"],
            ),
            (item, "PUE", site["pue"], "", site["pue_source"]),
        ]
    rows += [
        ("plan", "hours a month", inputs["hours_per_month"], "h", "fleetplan (730 = 8760 / 12)"),
        ("plan", "hours a year", inputs["hours_per_year"], "h", "fleetplan"),
        ("plan", "power and carbon model", inputs["power_model"], "", "fleetplan"),
    ]
    rows += [("plan", "note", note, "", "fleetplan") for note in plan.notes]
    table = pd.DataFrame(rows, columns=list(SOURCE_COLUMNS))
    for column in ("item", "figure", "unit", "source"):
        table[column] = table[column].map(neutralise)
    table["value"] = table["value"].map(lambda v: "unknown" if v is None else neutralise(v))
    return table


def _class_demand(traffic: dict[str, Any]) -> list[tuple[str, str, Any, str, str]]:
    """A class's demand as entered (a peak rate, 24 hourly rates, a shape, a daily volume in
    a window) and its own model, where it has one."""
    item = f"class {traffic['name']}"
    rows: list[tuple[str, str, Any, str, str]] = []
    if traffic.get("hourly_rps") is not None:
        hourly = traffic["hourly_rps"]
        rows.append((item, "hourly rates (hours 0-23)", hours_text(hourly), "req/s", "entered"))
    elif traffic.get("rate_rps") is not None and traffic.get("daily_requests") is None:
        label = f"peak rate ({traffic['shape']} shape)" if traffic.get("shape") else "rate"
        rows.append((item, label, traffic["rate_rps"], "req/s", "entered"))
    if traffic.get("daily_requests") is not None:
        rows.append((item, "daily requests", traffic["daily_requests"], "requests", "entered"))
        start, end = traffic.get("window_hours") or (0, 24)
        rows.append((item, "window", f"{start:02d}:00-{end:02d}:00", "hours", "entered"))
    if traffic.get("model"):
        rows.append((item, "model", traffic["model"], "", "entered"))
    return rows


_UNITS = {"idle_w": "W", "rated_w": "W", "embodied_kgco2e": "kgCO2e", "lifetime_years": "y"}


def _gpu_sources(gpu: dict[str, Any]) -> list[tuple[str, str, Any, str, str]]:
    """A GPU offer's rows of `sources_table`: its price, power, embodied and host figures."""
    item = f"GPU {gpu['gpu_model']} at {gpu['site']}"
    included = "included" if gpu["electricity_included"] else "not included"
    price = f"price ({gpu['price_basis']}; electricity {included})"
    rows = [(item, price, gpu["usd_per_gpu_hour"], "$/GPU-hour", gpu["price_source"])]
    rows += [(item, name, gpu[name], unit, gpu[f"{name}_source"]) for name, unit in _UNITS.items()]
    per_server = gpu["host_embodied_kgco2e_per_server"]
    host = per_server if per_server is not None else gpu["host_embodied_kgco2e_per_gpu"]
    unit = "kgCO2e per server" if per_server is not None else "kgCO2e per GPU"
    rows.append((item, "host embodied share", host, unit, gpu["host_embodied_source"]))
    return rows


def sources_csv(plan: Plan, inputs: dict[str, Any]) -> str:
    """`sources_table` as CSV, the header first."""
    return _csv(sources_table(plan, inputs))


# What `plan_json` writes beside the plan's own fields: read back with `plan_from_json`.
BESIDE_THE_PLAN = ("headline", "inputs")


def plan_from_json(raw: dict[str, Any]) -> Plan:
    """A plan JSON (`plan_json`) read back as the plan, what is written beside it left out."""
    return Plan.model_validate({k: v for k, v in raw.items() if k not in BESIDE_THE_PLAN})


def plan_json(plan: Plan, inputs: dict[str, Any]) -> str:
    """The whole plan as JSON, with the inputs it rests on in `inputs`; a day plan's with the
    figures it leads with in `headline` (the day's: its `recommended` is the peak plan, a
    comparison), a peak plan's as it always was (its headline is `recommended.totals`)."""
    data = plan.model_dump(mode="json")
    if is_day(plan):
        data["headline"] = headline(plan)
    return json.dumps({**data, "inputs": inputs}, indent=1) + "\n"
