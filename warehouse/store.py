"""Writing runs to the warehouse and removing them: one source file per transaction. Each point
is stored with its load judgement (`fleetplan.warehouse.load`). A run already stored (the same
content, `fleetplan.warehouse.identity`, whatever file brought it) is not stored again."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from fleetplan.core.contract import Run
from fleetplan.core.load import judge_point
from fleetplan.warehouse.columns import LOAD_COLUMNS
from fleetplan.warehouse.db import Warehouse, utc_now
from fleetplan.warehouse.identity import POINT_FIELDS, run_keys
from fleetplan.warehouse.load import load_values

log = logging.getLogger("fleetplan.store")

_RUN_COLUMNS = (
    "run_id",
    "source_id",
    "origin_sha256",
    "origin_index",
    "tool",
    "tool_version",
    "engine",
    "engine_version",
    "model",
    "dtype",
    "gpu_model",
    "gpu_label",
    "gpu_known",
    "gpu_count",
    "tensor_parallel_size",
    "host",
    "dataset",
    "input_len",
    "output_len",
    "created_at",
    "source_file",
    "provenance_repository",
    "provenance_commit",
    "provenance_path",
    "provenance_licence",
    "provenance_notes",
    "metadata",
    "run_key",
    "variant",
)
# The point columns stored: the measured ones a run's identity hashes (`identity.POINT_FIELDS`),
# and where the latency statistics came from, which is provenance, not a measurement.
_POINT_FIELDS = (*POINT_FIELDS, "stats_source")
_POINT_COLUMNS = ("run_id", "level_index", *_POINT_FIELDS)
# Judged from the point as it arrives, with its request log (send times) where it has one: the
# log is not stored, so this is the only time that judgement can be made.
_STORED_COLUMNS = (*_POINT_COLUMNS, *LOAD_COLUMNS, "configured_rate_rps", "notes")
# Notes are stored as one text, joined by this (None when a point has none).
NOTE_SEPARATOR = " | "


@dataclass(frozen=True, slots=True)
class SourceFile:
    """An imported file, as the `sources` table records it."""

    name: str
    sha256: str
    size_bytes: int
    importer: str
    importer_version: str
    origin: str = "cli"
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StoreResult:
    runs_added: int
    points_added: int
    runs_already_present: int
    present_in: tuple[str, ...] = field(default=())  # file names that already held skipped runs


def find_source(warehouse: Warehouse, sha256: str) -> tuple[str, str] | None:
    """(file name, imported at) of an already imported file with this content, if any."""
    row = (
        warehouse.cursor()
        .execute(
            "SELECT file_name, strftime(imported_at, '%Y-%m-%d %H:%M UTC') FROM sources "
            "WHERE source_id = ?",
            [sha256],
        )
        .fetchone()
    )
    return (row[0], row[1]) if row else None


def _origin(run: Run, source: SourceFile, position: int) -> tuple[str, int]:
    """Where a run's numbers were first read from, as the file says (a run file derived from
    another keeps that file's checksum and position), else this file: provenance, never the
    run's identity (a file could claim any checksum)."""
    sha = run.source_sha256 or source.sha256
    index = run.source_index if run.source_index is not None else position
    return sha, index


def _run_row(run: Run, run_id: str, source: SourceFile, position: int, key: str) -> tuple:
    origin_sha, origin_index = _origin(run, source, position)
    prov = run.provenance
    return (
        run_id,
        source.sha256,
        origin_sha,
        origin_index,
        run.tool,
        run.tool_version,
        run.engine,
        run.engine_version,
        run.model,
        run.dtype,
        run.gpu_model,
        run.gpu_label,
        run.gpu_known,
        run.gpu_count,
        run.tensor_parallel_size,
        run.host,
        run.dataset,
        run.input_len,
        run.output_len,
        run.created_at,
        run.source_file or source.name,
        prov.repository if prov else None,
        prov.commit if prov else None,
        prov.path if prov else None,
        prov.licence if prov else None,
        prov.notes if prov else None,
        json.dumps(run.metadata, sort_keys=True, ensure_ascii=False),
        key,
        run.variant,
    )


def _point_rows(run: Run, run_id: str) -> list[tuple]:
    """The run's points as rows of `_STORED_COLUMNS`: their fields, then their load judgement."""
    rows = []
    for level, point in enumerate(run.points):
        values = point.model_dump(include=set(_POINT_FIELDS))
        rows.append(
            (
                run_id,
                level,
                *(_plain(values[name]) for name in _POINT_FIELDS),
                *load_values(judge_point(point)),
                _plain(point.configured_rate_rps),
                NOTE_SEPARATOR.join(point.notes) or None,
            )
        )
    return rows


def runs_present(
    warehouse: Warehouse, sha256: str, runs: Sequence[Run], keys: Sequence[str] | None = None
) -> dict[int, str]:
    """Which of a file's runs the warehouse holds already (the same content, as `store_runs`
    decides), by position: the name of the file that brought each. `sha256` (the file's) is
    not used: a run's identity is its content, not its file. `keys`: the runs' keys
    (`identity.run_keys`), where known."""
    del sha256
    keys = run_keys(runs) if keys is None else keys
    held = _held(warehouse.cursor(), keys)
    return {i: held[key] for i, key in enumerate(keys) if key in held}


def _held(con, keys: Sequence[str]) -> dict[str, str]:
    """The keys among `keys` that stored runs have, with the name of the file that brought
    each. One cheap lookup per file (this runs for every file of a large ingest)."""
    if not keys:
        return {}
    wanted = sorted(set(keys))
    marks = ", ".join("?" for _ in wanted)  # placeholders only; the values are parameters
    sql = (
        "SELECT r.run_key, s.file_name FROM runs r "  # noqa: S608
        f"JOIN sources s ON s.source_id = r.source_id WHERE r.run_key IN ({marks})"
    )
    return dict(con.execute(sql, wanted).fetchall())


def store_runs(
    warehouse: Warehouse, source: SourceFile, runs: Sequence[Run], keys: Sequence[str] | None = None
) -> StoreResult:
    """Store a file's runs in one transaction. Runs already stored (the same content, e.g. the
    raw file behind a sample-data file, or this file re-serialised), or twice in this file, are
    skipped and counted. `keys`: the runs' keys (`identity.run_keys`), where known."""
    keys = run_keys(runs) if keys is None else keys
    if len(keys) != len(runs):
        raise ValueError(f"{len(keys)} keys for {len(runs)} runs")
    with warehouse.transaction() as con:
        held = _held(con, keys)
        present_in = set(held.values())
        run_rows, point_rows = [], []
        seen = set(held)
        already = 0
        for position, (run, key) in enumerate(zip(runs, keys, strict=True)):
            if key in seen:
                already += 1
                if key not in held:  # twice in this file
                    present_in.add(source.name)
                continue
            seen.add(key)
            run_id = f"{source.sha256[:16]}-{position}"
            run_rows.append(_run_row(run, run_id, source, position, key))
            point_rows.extend(_point_rows(run, run_id))
        if run_rows:
            log.info(
                "storing %s: %d run(s), %d point(s)", source.name, len(run_rows), len(point_rows)
            )
            _insert_source(con, source)
            _insert(con, "runs", _RUN_COLUMNS, run_rows)
            _insert(con, "points", _STORED_COLUMNS, point_rows)
    return StoreResult(
        runs_added=len(run_rows),
        points_added=len(point_rows),
        runs_already_present=already,
        present_in=tuple(sorted(present_in)),
    )


def _insert_source(con, source: SourceFile) -> None:
    con.execute(
        "INSERT INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            source.sha256,
            source.name,
            source.size_bytes,
            source.importer,
            source.importer_version,
            source.origin,
            utc_now(),
            json.dumps(list(source.warnings), ensure_ascii=False),
        ],
    )


def delete_source(warehouse: Warehouse, sha256: str) -> int:
    """Remove an imported file and everything read from it; returns how many runs went."""
    with warehouse.transaction() as con:
        runs = con.execute("SELECT count(*) FROM runs WHERE source_id = ?", [sha256]).fetchone()
        con.execute(
            "DELETE FROM points WHERE run_id IN (SELECT run_id FROM runs WHERE source_id = ?)",
            [sha256],
        )
        con.execute("DELETE FROM runs WHERE source_id = ?", [sha256])
        con.execute("DELETE FROM sources WHERE source_id = ?", [sha256])
    return int(runs[0]) if runs else 0


def _plain(value: object) -> object:
    return getattr(value, "value", value)  # enums to their stored text


def _insert(con, table: str, columns: Sequence[str], rows: list[tuple]) -> None:
    """Insert rows in one statement, through Arrow (None stays NULL, never NaN); a few rows go
    as parameters. Identifiers come from the fixed tuples above, never from input."""
    names = ", ".join(columns)
    if len(rows) <= 8:
        marks = ", ".join("?" for _ in columns)
        con.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", rows)  # noqa: S608
        return
    import pyarrow as pa

    incoming = pa.table(
        [pa.array(list(values)) for values in zip(*rows, strict=True)], names=list(columns)
    )
    con.register("_fleetplan_incoming", incoming)
    try:
        con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _fleetplan_incoming")  # noqa: S608
    finally:
        con.unregister("_fleetplan_incoming")
