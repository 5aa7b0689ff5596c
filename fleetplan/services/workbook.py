"""The plan as a workbook (openpyxl): the exports' tables (`services.exports`) on sheets, and the
scenario as entered, one field a row."""

from __future__ import annotations

import io
import json
import math
from typing import Any

import pandas as pd

from fleetplan.core.tabular import neutralise
from fleetplan.planner.day.schedule import SCHEDULE_COLUMNS, schedule_rows
from fleetplan.planner.peak.results import Plan
from fleetplan.services.exports import (
    DAY_FLEET,
    day_fleet_table,
    day_pool_table,
    fleet_table,
    is_day,
    pool_rows,
    sources_table,
)


def schedule_table(day) -> pd.DataFrame:
    """The schedule CSV's rows (`planner.day.schedule`), text cells neutralised."""
    table = pd.DataFrame(schedule_rows(day), columns=list(SCHEDULE_COLUMNS))
    for column in ("offer", "class", "basis", "commitment", "gpu_model"):
        table[column] = table[column].map(neutralise)
    return table


def inputs_table(inputs: dict[str, Any]) -> pd.DataFrame:
    """The scenario as entered, one field a row: `part` (settings, a class, a GPU offer, a site),
    `field`, `value` (lists and objects as JSON)."""
    scenario = inputs["scenario"]
    rows = [
        ("settings", key, value)
        for key, value in scenario.items()
        if key not in ("classes", "gpus", "sites")
    ]
    for part, label in (("classes", "class"), ("gpus", "GPU offer"), ("sites", "site")):
        for i, entry in enumerate(scenario.get(part) or []):
            name = entry.get("name") or entry.get("gpu_model") or str(i + 1)
            rows += [(f"{label} {name}", key, value) for key, value in entry.items()]
    table = pd.DataFrame(rows, columns=["part", "field", "value"])
    table["value"] = table["value"].map(
        lambda v: json.dumps(v) if isinstance(v, list | dict) else v
    )
    return table.map(neutralise)


def plan_xlsx(plan: Plan, inputs: dict[str, Any]) -> bytes:
    """A workbook (openpyxl): sheets `fleet` (`fleet_table`), `baselines` (their pools),
    `inputs` (`inputs_table`) and `sources` (`sources_table`); a day plan's: `fleet`
    (`day_fleet_table`), `schedule` (the schedule CSV's rows), `compared` (the compared fleets'
    days), `inputs` and `sources`. The header on row 1 of each, text never run as a formula, inf
    written as the text "inf"."""
    from openpyxl import Workbook
    from openpyxl.styles import Font

    if is_day(plan):
        pools = day_pool_table(plan)
        sheets = {
            "fleet": day_fleet_table(plan),
            "schedule": schedule_table(plan.day),
            "compared": pools[pools["fleet"] != DAY_FLEET],
            "inputs": inputs_table(inputs),
            "sources": sources_table(plan, inputs),
        }
    else:
        pools = pool_rows(plan)
        sheets = {
            "fleet": fleet_table(plan),
            "baselines": pools[pools["fleet"] != plan.recommended.name],
            "inputs": inputs_table(inputs),
            "sources": sources_table(plan, inputs),
        }
    book = Workbook()
    book.remove(book.active)
    for name, table in sheets.items():
        sheet = book.create_sheet(name)
        sheet.append(list(table.columns))
        for record in table.itertuples(index=False):
            sheet.append([_cell(value) for value in record])
        for cell in sheet[1]:
            cell.font = Font(bold=True)
        sheet.freeze_panes = "A2"
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def _cell(value: Any) -> Any:
    """A value openpyxl writes as data: unknown empty, inf as text, text as a string cell."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    return value
