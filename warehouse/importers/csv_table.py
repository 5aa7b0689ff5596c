"""The canonical table as CSV: what `fleetplan benchmarks --format csv` writes and `fleetplan
template` starts, edited in a spreadsheet and uploaded again. One row per (run, load level);
units in the column names; an export imports back losslessly. Lines starting with '#' are
comments; text a spreadsheet would run as a formula was written with a leading apostrophe,
which is removed again here. The load columns (sustained rate, stability: `JUDGED`) are accepted
and not read: the warehouse judges every level again when it stores it, from the same figures.
"""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import datetime
from pathlib import PurePath
from typing import Any

from fleetplan.core.contract import Point, Provenance, Run
from fleetplan.core.errors import InputError
from fleetplan.core.gpus import canonical_gpu
from fleetplan.core.strict import duplicate_key
from fleetplan.warehouse.columns import CANONICAL_COLUMNS, LOAD_COLUMNS
from fleetplan.warehouse.importers.base import (
    FileInput,
    ImportOptions,
    Parsed,
    build,
    validation,
)
from fleetplan.warehouse.importers.document import Document

IMPORTER = "csv-table"
VERSION = "1"
# Columns the warehouse assigns: read back as nothing (an import makes new ones).
DERIVED = {"run_id", "level_index", "gpu_known", "imported_from", "imported_at"}
# Judged by the warehouse from the level's figures (`fleetplan.warehouse.load`): read back as
# nothing, and recomputed at store, so an edited or stale value cannot disagree with the figures.
# A level judged on its send times comes back judged on its statistics: the CSV has no send times.
JUDGED = frozenset(LOAD_COLUMNS)
RUN_COLUMNS = {
    "model": "model",
    "gpu_model": "gpu_model",
    "gpu_count": "gpu_count",
    "tensor_parallel_size": "tensor_parallel_size",
    "gpu_label": "gpu_label",
    "dtype": "dtype",
    "engine": "engine",
    "engine_version": "engine_version",
    "variant": "variant",
    "dataset": "dataset",
    "input_len": "input_len",
    "output_len": "output_len",
    "host": "host",
    "created_at": "created_at",
    "source_tool": "tool",
    "source_tool_version": "tool_version",
    "source_file": "source_file",
    "source_sha256": "source_sha256",
    "source_index": "source_index",
    "run_metadata": "metadata",  # JSON text here, an object once the run is built (`_run`)
}
PROVENANCE_COLUMNS = {
    "source_repository": "repository",
    "source_commit": "commit",
    "source_path": "path",
    "source_licence": "licence",
}
REQUIRED = ("model", "gpu_model", "gpu_count", "completed", "duration_s")
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def detect(document: Document) -> bool:
    return document.kind == "csv"


def _text(value: str) -> str | None:
    if value == "":
        return None
    if value.startswith("'") and value[1:2] in _FORMULA and value[1:2] != "":
        return value[1:]  # written neutralised: the apostrophe is not part of the value
    return value


def _typed(field: str, raw: str, where: str, file: str) -> Any:
    """A cell as the contract's type; the annotation decides, never the look of the value."""
    value = _text(raw)
    if value is None:
        return None
    kind = _KIND.get(field, "text")
    try:
        if kind == "int":
            number = float(value)
            if not math.isfinite(number) or number != int(number):
                raise ValueError
            return int(number)
        if kind == "float":
            return float(value)  # "inf", " Infinity " and "nan" too, as `_groups` reads them
        if kind == "bool":
            lowered = value.strip().lower()
            if lowered not in {"true", "false", "1", "0"}:
                raise ValueError
            return lowered in {"true", "1"}
        if kind == "datetime":
            return datetime.fromisoformat(value)
    except ValueError:
        expected = {
            "int": "a whole number",
            "float": "a number (or inf)",
            "bool": "true or false",
            "datetime": "a date-time",
        }[kind]
        raise InputError(
            f"{where}: expected {expected}, got {raw!r:.40}", file=file, field=field
        ) from None
    return value


_KIND: dict[str, str] = {
    "gpu_count": "int",
    "tensor_parallel_size": "int",
    "input_len": "int",
    "output_len": "int",
    "source_index": "int",
    "max_concurrency": "int",
    "requests_sent": "int",
    "completed": "int",
    "failed": "int",
    "complete": "bool",
    "created_at": "datetime",
}
for _name, _info in Point.model_fields.items():
    annotation = str(_info.annotation)
    if _name not in _KIND and "float" in annotation:
        _KIND[_name] = "float"


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    lines = [line for line in document.text.splitlines() if not line.startswith("#")]
    reader = csv.DictReader(io.StringIO("\n".join(lines)))
    header = _header(reader, source.name)
    groups = _groups(reader, header, source.name)
    if not groups:
        raise InputError("the table has no rows", file=source.name)
    runs = [_run(group, position, source) for position, group in enumerate(groups.values())]
    return Parsed(runs, [])


def _header(reader: csv.DictReader, file: str) -> list[str]:
    """The table's columns: every one a column of the canonical table, the required ones there."""
    # Spaces around a column name (`model, gpu_model`, as people type CSV) are not part of it:
    # the rows are read under the stripped names, and a name given twice is refused.
    header = [h.strip() for h in (reader.fieldnames or [])]
    twice = sorted({h for h in header if header.count(h) > 1})
    if twice:
        raise InputError(f"column(s) {', '.join(twice)} given twice", file=file, field=twice[0])
    reader.fieldnames = header
    unknown = sorted(set(header) - set(CANONICAL_COLUMNS))
    if unknown:
        raise InputError(
            f"unknown column(s) {', '.join(unknown)}: the table's columns are those "
            "of `fleetplan benchmarks --format csv`",
            file=file,
            field=unknown[0],
        )
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", file=file, field=missing[0])
    return header


_NOT_TYPED = frozenset(("requests", "notes"))  # no request log in a table; notes are text


def _groups(reader: csv.DictReader, header: list[str], file: str) -> dict[tuple, dict[str, Any]]:
    """Rows by run (the same run_id, or without one the same setup), each row a point."""
    groups: dict[tuple, dict[str, Any]] = {}
    point_fields = [
        (f, _KIND.get(f) == "float")
        for f in Point.model_fields
        if f not in _NOT_TYPED and f in header
    ]
    for number, row in enumerate(reader, start=2):
        where = f"row {number}"
        if None in row:
            raise InputError(f"{where}: more cells than columns", file=file)
        if any(value is None for value in row.values()):
            raise InputError(f"{where}: fewer cells than columns", file=file)
        run_values = {
            ours: _typed(ours, row[column], where, file)
            for column, ours in RUN_COLUMNS.items()
            if column in row
        }
        provenance = {
            ours: _text(row[column])
            for column, ours in PROVENANCE_COLUMNS.items()
            if column in row and _text(row[column]) is not None
        }
        point_values = {}
        for f, is_float in point_fields:
            raw = row[f]
            if not raw:
                continue  # an empty cell: not given
            if is_float and raw[0] != "'":
                try:
                    point_values[f] = float(raw)  # `_typed`'s float, without its lookups
                    continue
                except ValueError:
                    pass  # refused below, with the row and the column
            point_values[f] = _typed(f, raw, where, file)
        if _text(row.get("notes", "")):
            point_values["notes"] = tuple(n.strip() for n in row["notes"].split("|") if n.strip())
        key = (_text(row.get("run_id", "")) or None, tuple(sorted(run_values.items(), key=str)))
        group = groups.setdefault(
            key, {"run": run_values, "provenance": provenance, "points": [], "row": number}
        )
        present = {k: v for k, v in point_values.items() if v is not None}
        group["points"].append(build(Point, file, where, **present))
    return groups


def _run(group: dict[str, Any], position: int, source: FileInput) -> Run:
    values = {k: v for k, v in group["run"].items() if v is not None}
    values.setdefault("tool", "csv table")
    identity = canonical_gpu(str(values.get("gpu_model", "")))
    if identity.known and identity.gpu_id != values["gpu_model"]:
        values.setdefault("gpu_label", values["gpu_model"])  # a label such as "4090"
        values["gpu_model"] = identity.gpu_id
    if "source_file" not in values:
        values["source_file"] = PurePath(source.name).name
    if "source_sha256" not in values:
        values |= {"source_sha256": source.sha256, "source_index": position}
    if "metadata" in values:
        values["metadata"] = metadata_cell(values["metadata"], f"row {group['row']}", source.name)
    with validation(source.name, f"row {group['row']}"):
        provenance = Provenance(**group["provenance"]) if group["provenance"] else None
        return Run(**values, provenance=provenance, points=tuple(group["points"]))


def metadata_cell(text: str, where: str, file: str) -> dict[str, Any]:
    """The run_metadata cell: the JSON object `fleetplan benchmarks` wrote."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if isinstance(value, dict) and (twice := duplicate_key(text)):
        raise InputError(f"{where}: {twice}", file=file)
    if not isinstance(value, dict):
        raise InputError(
            f'{where}: expected a JSON object such as {{"campaign": "fleet"}}, got {text!r:.40}',
            file=file,
            field="run_metadata",
        )
    return value
