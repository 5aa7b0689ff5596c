"""Files and warehouse contents the tests write and compare."""

from __future__ import annotations

import json
from pathlib import Path

from fleetplan.warehouse.db import Warehouse


def write_json(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value))
    return path


def table_snapshot(wh: Warehouse) -> dict[str, list]:
    """Every row of the benchmark tables, to check that a rejected import changed nothing."""
    cur = wh.cursor()
    return {
        table: cur.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()  # noqa: S608
        for table in ("sources", "runs", "points")
    }
