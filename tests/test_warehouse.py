"""The DuckDB warehouse: migrations, path resolution, one writer at a time, all-or-nothing."""

from __future__ import annotations

import subprocess

import duckdb
import pytest

from fleetplan.core.contract import LATENCY_FIELDS, Point
from fleetplan.core.errors import WarehouseBusyError, WarehouseError
from fleetplan.warehouse.db import ENV_VAR, Warehouse, resolve_path
from fleetplan.warehouse.importers.base import FileInput
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.migrations import MIGRATIONS
from fleetplan.warehouse.store import SourceFile, delete_source, store_runs
from tests.support.files import table_snapshot
from tests.support.paths import ROOT
from tests.support.processes import held_by_another_process


def test_migrations_are_recorded_once(warehouse_path):
    with Warehouse.open(warehouse_path) as wh:
        assert wh.applied_migrations() == [name for name, _ in MIGRATIONS]
    with Warehouse.open(warehouse_path) as wh:
        assert wh.migrate() == []
        count = wh.cursor().execute("SELECT count(*) FROM schema_migrations").fetchone()[0]
        assert count == len(MIGRATIONS)


def test_an_old_file_is_migrated_and_keeps_its_data(warehouse_path):
    first = MIGRATIONS[0][0]
    with Warehouse.open(warehouse_path, migrate=False) as wh:
        wh.migrate(upto=first)
        wh.cursor().execute(
            "INSERT INTO sources VALUES ('abc', 'old.json', 1, 'x', '1', 'cli', now(), '[]')"
        )
    with duckdb.connect(str(warehouse_path)) as raw:
        tables = {
            t for (t,) in raw.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
        assert "gpu_catalog" not in tables
    with Warehouse.open(warehouse_path) as wh:
        assert wh.applied_migrations() == [name for name, _ in MIGRATIONS]
        assert wh.cursor().execute("SELECT file_name FROM sources").fetchall() == [("old.json",)]
        assert wh.cursor().execute("SELECT count(*) FROM gpu_catalog").fetchone() == (0,)


def test_a_warehouse_from_a_newer_fleetplan_is_refused(warehouse_path):
    with Warehouse.open(warehouse_path) as wh:
        wh.cursor().execute("INSERT INTO schema_migrations VALUES ('999_future', now())")
    with pytest.raises(WarehouseError, match="newer fleetplan"):
        Warehouse.open(warehouse_path)


def test_not_a_duckdb_file_is_a_clear_error(tmp_path):
    bogus = tmp_path / "notes.duckdb"
    bogus.write_text("hello, this is not a database" * 100)
    with pytest.raises(WarehouseError, match="cannot open the warehouse"):
        Warehouse.open(bogus)


def test_every_point_field_has_a_column(warehouse):
    columns = {
        name
        for (name,) in warehouse.cursor()
        .execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'points'")
        .fetchall()
    }
    assert set(Point.model_fields) - {"requests"} <= columns  # per-request logs stay in files
    assert set(LATENCY_FIELDS) <= columns


def test_path_resolution_order(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert resolve_path() == ROOT / "var" / "fleetplan.duckdb"
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "env.duckdb"))
    assert resolve_path() == tmp_path / "env.duckdb"
    assert resolve_path(tmp_path / "flag.duckdb") == tmp_path / "flag.duckdb"
    check = subprocess.run(
        ["git", "check-ignore", "-q", "var/fleetplan.duckdb"], cwd=ROOT, check=False
    )
    assert check.returncode == 0, "the default warehouse must be ignored by git"


def test_a_warehouse_held_by_another_process_is_reported_clearly(warehouse_path):
    Warehouse.open(warehouse_path).close()
    with held_by_another_process(warehouse_path) as holder:
        with pytest.raises(WarehouseBusyError) as caught:
            Warehouse.open(warehouse_path, wait_s=0.3)
        assert f"process {holder.pid}" in str(caught.value)
        assert "one process per file" in str(caught.value)


def test_opening_waits_for_the_other_process_to_let_go(warehouse_path):
    Warehouse.open(warehouse_path).close()
    with held_by_another_process(warehouse_path, seconds=1.0) as holder:
        with Warehouse.open(warehouse_path, wait_s=20) as wh:
            assert wh.applied_migrations()
        assert holder.wait(timeout=10) == 0  # it held the file when the open began, then let go


def test_a_failure_inside_a_store_rolls_everything_back(warehouse, monkeypatch):
    import json

    from benchmarks.inputs.vllm_results import make_result
    from fleetplan.warehouse import store

    data = json.dumps(make_result(detailed=False)).encode()
    parsed = parse(FileInput.from_bytes("a.json", data))
    run = parsed.runs[0]
    source = SourceFile("a.json", parsed.file.sha256, len(data), parsed.importer, "1")
    before = table_snapshot(warehouse)
    # The points violate a constraint half-way through the insert, after the source and run.
    # (A run twice in one file is no longer such a failure: it is stored once.)
    insert = store._insert

    def failing(con, table, columns, rows):
        rows = rows + rows if table == "points" else rows  # a duplicate primary key
        insert(con, table, columns, rows)

    monkeypatch.setattr(store, "_insert", failing)
    with pytest.raises(duckdb.ConstraintException):
        store_runs(warehouse, source, [run])
    monkeypatch.undo()
    assert table_snapshot(warehouse) == before
    assert store_runs(warehouse, source, [run]).runs_added == 1


def test_delete_source_removes_its_runs_and_points(warehouse):
    import json

    from benchmarks.inputs.vllm_results import make_result

    data = json.dumps(make_result(detailed=False)).encode()
    parsed = parse(FileInput.from_bytes("a.json", data))
    source = SourceFile("a.json", parsed.file.sha256, len(data), parsed.importer, "1")
    store_runs(warehouse, source, parsed.runs)
    assert delete_source(warehouse, parsed.file.sha256) == 1
    assert all(rows == [] for rows in table_snapshot(warehouse).values())
