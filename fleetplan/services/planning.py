"""Planning against the warehouse: the glue between `warehouse` (data) and `planner` (logic)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from fleetplan.core.contract import validation_message
from fleetplan.planner import GpuFacts, Plan, Scenario, plan
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points, gpu_catalog

_FACT_COLUMNS = {
    "rated_w": ("rated_power_w", "rated_power_source"),
    "idle_w": ("idle_power_w", "idle_power_source"),
    "embodied_kgco2e": ("embodied_kgco2e", "embodied_source"),
    "lifetime_years": ("lifetime_years_default", "lifetime_source"),
}


def facts_from_catalog(catalog: pd.DataFrame) -> dict[str, GpuFacts]:
    facts = {}
    for row in catalog.to_dict("records"):
        values, sources = {}, {}
        for name, (column, source) in _FACT_COLUMNS.items():
            value = row.get(column)
            values[name] = None if value is None or pd.isna(value) else float(value)
            if values[name] is not None:
                sources[name] = str(row.get(source) or "")
        facts[row["gpu_id"]] = GpuFacts(gpu_model=row["gpu_id"], sources=sources, **values)
    return facts


def load_scenario(path: Path) -> Scenario:
    try:
        return Scenario.model_validate_json(path.read_bytes())
    except ValidationError as error:
        raise validation_message(error, file=str(path)) from None


def plan_from_warehouse(warehouse: Warehouse, scenario: Scenario, **options: object) -> Plan:
    points = benchmark_points(warehouse)
    return plan(scenario, points, facts_from_catalog(gpu_catalog(warehouse)), **options)
