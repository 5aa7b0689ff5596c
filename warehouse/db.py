"""One DuckDB warehouse file per process: opening, migrating, transactions, busy handling.

DuckDB lets one process open a file for writing, and a second process cannot open it at all
meanwhile. Opening here waits (up to `wait_s`) for the other process to let go, then fails with
`WarehouseBusyError` naming that process, never with DuckDB's raw IOException.

Only an existing DuckDB database, or a path where nothing is yet, is a warehouse: DuckDB opens
any other file (a results JSON given as `--warehouse` by mistake) as a temporary in-memory
database, so everything "imported" into it would be lost without a word. A damaged database is
said to be damaged (with how to rebuild or restore it), never "in use", and is not waited for.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from fleetplan.core.errors import WarehouseBusyError, WarehouseDamagedError, WarehouseError
from fleetplan.core.paths import project_root
from fleetplan.core.text import printable
from fleetplan.warehouse.migrations import MIGRATIONS

log = logging.getLogger(__name__)

ENV_VAR = "FLEETPLAN_WAREHOUSE"
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")
# DuckDB's own words when another process holds the file. Matched whole: its corruption message
# ("... in block at location ...") also contains "lock".
_BUSY = ("Could not set lock on file", "Conflicting lock is held")
_DAMAGED = ("Corrupt database file", "not a valid DuckDB database")
# How the user chose the path: messages name the option to change.
_OPTION = "--warehouse (or $FLEETPLAN_WAREHOUSE)"
# A DuckDB database file: a checksum (8 bytes), then this magic.
_MAGIC = b"DUCK"
_MAGIC_AT = 8


def default_path() -> Path:
    return project_root() / "var" / "fleetplan.duckdb"


def resolve_path(path: str | os.PathLike[str] | None = None) -> Path:
    """`--warehouse`, else `$FLEETPLAN_WAREHOUSE`, else `var/fleetplan.duckdb` in the project."""
    chosen = path or os.environ.get(ENV_VAR) or default_path()
    return Path(chosen).expanduser()


def utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def check_path(path: Path, *, read_only: bool) -> None:
    """Refuse, before DuckDB sees it, a path that is neither a DuckDB database nor a new file."""
    try:
        exists = path.exists()
    except OSError as error:  # a name over the system's limit, a loop of links
        raise WarehouseError(
            f"cannot open the warehouse {path}: {error.strerror or error}"
        ) from None
    if exists:
        if path.is_dir():
            raise WarehouseError(
                f"cannot open the warehouse {path}: it is a folder; give {_OPTION} a file "
                f"path such as {path / 'fleetplan.duckdb'}"
            )
        try:
            with path.open("rb") as handle:
                head = handle.read(_MAGIC_AT + len(_MAGIC)) if path.is_file() else b""
        except OSError as error:
            raise WarehouseError(
                f"cannot open the warehouse {path}: {error.strerror or error}"
            ) from None
        if head[_MAGIC_AT:] != _MAGIC:
            raise WarehouseError(
                f"cannot open the warehouse {path}: it is not a DuckDB database (a results file "
                f"given as the warehouse?). Give {_OPTION} an existing warehouse or a new "
                "path; files to import go after the options, as PATH"
            )
        return
    if read_only:
        raise WarehouseError(f"no warehouse at {path}: build it with `fleetplan build`")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise WarehouseError(
                    f"cannot create the warehouse {path}: {parent} is a file, not a folder; "
                    f"give {_OPTION} a path inside a folder"
                )
            break


def check_target(path: str | os.PathLike[str] | None = None) -> None:
    """Refuse, before hours of work whose end is an ingest (`collect --ingest`), a warehouse
    that ingest would refuse: not a DuckDB database, a folder, another application's database,
    one a newer fleetplan wrote. Nothing is created or written; one another process holds is
    left for the ingest to wait for."""
    resolved = resolve_path(path)
    check_path(resolved, read_only=False)
    if not resolved.exists():
        return
    try:
        connection = duckdb.connect(str(resolved), read_only=True)
    except duckdb.Error as error:
        if _busy(resolved, error) is not None:
            return
        raise _damaged(resolved, error) or WarehouseError(
            f"cannot open the warehouse {resolved}: {error}"
        ) from error
    try:
        Warehouse(connection, resolved, read_only=False).check_schema()  # an empty one is fine
    except duckdb.Error as error:
        raise WarehouseError(f"cannot use the warehouse {resolved}: {error}") from error
    finally:
        connection.close()


def _damaged(path: Path, error: Exception) -> WarehouseError | None:
    text = str(error)
    if not any(words in text for words in _DAMAGED):
        return None
    return WarehouseDamagedError(
        f"the warehouse {path} is damaged ({text.strip()[:200]}). Restore it from a backup, or "
        f"move it aside and rebuild it: `fleetplan build --warehouse {path}` (sample data and "
        "reference tables), then `fleetplan ingest` your result files again"
    )


def _busy(path: Path, error: Exception) -> WarehouseBusyError | None:
    text = str(error)
    if not any(words in text for words in _BUSY):
        return None
    holder = _LOCK_HOLDER.search(text)
    who = (
        f"process {holder['pid']} ({Path(holder['program']).name})" if holder else "another process"
    )
    return WarehouseBusyError(
        f"the warehouse {path} is in use by {who}. DuckDB allows one process per file: stop that "
        "process (for example the dashboard) or wait for it to finish, then try again."
    )


class Warehouse:
    """The warehouse connection of this process. Use `cursor()` in other threads."""

    def __init__(self, connection: duckdb.DuckDBPyConnection, path: Path, read_only: bool):
        self.connection = connection
        self.path = path
        self.read_only = read_only
        self._lock = threading.RLock()

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str] | None = None,
        *,
        read_only: bool = False,
        wait_s: float = 0.0,
        migrate: bool = True,
        on_wait: Callable[[WarehouseBusyError], None] | None = None,
    ) -> Warehouse:
        """Open (and migrate) the warehouse. Another process holding it is waited for, up to
        `wait_s`; `on_wait` is told once when the waiting starts."""
        resolved = resolve_path(path)
        check_path(resolved, read_only=read_only)
        if not read_only:
            try:
                resolved.parent.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise WarehouseError(
                    f"cannot create the warehouse {resolved}: {error.strerror or error}; give "
                    f"{_OPTION} a path in a folder you can write"
                ) from None
        deadline = time.monotonic() + wait_s
        delay = 0.05
        while True:
            try:
                connection = duckdb.connect(str(resolved), read_only=read_only)
                break
            except duckdb.Error as error:
                damaged = _damaged(resolved, error)
                if damaged is not None:
                    raise damaged from error
                busy = _busy(resolved, error)
                if busy is None:
                    raise WarehouseError(
                        f"cannot open the warehouse {resolved}: {error}"
                    ) from error
                if time.monotonic() >= deadline:
                    raise busy from error
                if on_wait is not None and delay == 0.05:
                    on_wait(busy)
                log.info("warehouse busy, retrying: %s", busy)
                time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
                delay = min(delay * 2, 1.0)
        warehouse = cls(connection, resolved, read_only)
        try:
            if migrate and not read_only:
                warehouse.migrate()
            else:
                warehouse.check_schema()
        except duckdb.Error as error:
            connection.close()
            damaged = _damaged(resolved, error)
            if damaged is not None:
                raise damaged from error
            raise WarehouseError(f"cannot use the warehouse {resolved}: {error}") from error
        except Exception:
            connection.close()
            raise
        return warehouse

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A cursor for the calling thread (DuckDB connections are not shared across threads)."""
        return self.connection.cursor()

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction on the process connection: all of it lands, or none of it."""
        with self._lock:
            con = self.connection
            con.begin()
            try:
                yield con
            except BaseException:
                con.rollback()
                raise
            con.commit()

    # -- schema -----------------------------------------------------------------------------

    def applied_migrations(self) -> list[str]:
        columns = self.connection.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = "
            "'schema_migrations' AND table_schema = 'main' AND table_catalog = current_database()"
        ).fetchall()
        if not columns:
            return []
        if {name for (name,) in columns} != {"name", "applied_at"}:
            return []  # another application's table of that name: its tables are foreign
        rows = self.connection.execute("SELECT name FROM schema_migrations ORDER BY name")
        return [name for (name,) in rows.fetchall()]

    def _foreign_objects(self) -> list[str]:
        """What a database without fleetplan's migrations holds of its own: tables and views in
        any schema, schemas, sequences, macros, types (an empty database holds none)."""
        return [
            name
            for (name,) in self.connection.execute(
                "SELECT table_schema || '.' || table_name FROM information_schema.tables "
                "WHERE table_catalog = current_database() "
                "UNION ALL SELECT 'schema ' || schema_name FROM duckdb_schemas() "
                "WHERE database_name = current_database() AND NOT internal "
                "AND schema_name <> 'main' "
                "UNION ALL SELECT 'sequence ' || sequence_name FROM duckdb_sequences() "
                "WHERE database_name = current_database() AND NOT temporary "
                "UNION ALL SELECT 'macro ' || function_name FROM duckdb_functions() "
                "WHERE database_name = current_database() AND NOT internal "
                "AND function_type IN ('macro', 'table_macro') "
                "UNION ALL SELECT 'type ' || type_name FROM duckdb_types() "
                "WHERE database_name = current_database() AND NOT internal "
                "ORDER BY 1"
            ).fetchall()
        ]

    def check_schema(self) -> None:
        """Refuse a database that is not a fleetplan warehouse (one with tables of its own and
        no record of fleetplan's migrations), or one a newer fleetplan wrote; before anything
        is written to it, so a refusal changes nothing."""
        applied = self.applied_migrations()
        if not applied:
            foreign = self._foreign_objects()
            if foreign:
                names = ", ".join(printable(name.removeprefix("main.")) for name in foreign[:5])
                raise WarehouseError(
                    f"the warehouse {self.path} is another application's DuckDB database (it "
                    f"holds {names}{', ...' if len(foreign) > 5 else ''} and no fleetplan "
                    f"schema): fleetplan leaves it unchanged; give {_OPTION} a fleetplan "
                    "warehouse or a new path"
                )
            if self.read_only:
                raise WarehouseError(
                    f"no warehouse at {self.path} (an empty DuckDB database): build it with "
                    "`fleetplan build`, or `fleetplan ingest` files into it"
                )
        known = {name for name, _ in MIGRATIONS}
        unknown = [name for name in applied if name not in known]
        if unknown:
            raise WarehouseError(
                f"the warehouse {self.path} was written by a newer fleetplan (migrations "
                f"{', '.join(unknown)}): upgrade fleetplan or use another --warehouse"
            )

    def migrate(self, *, upto: str | None = None) -> list[str]:
        """Apply pending migrations in order, each in its own transaction; returns their names."""
        self.check_schema()
        applied = set(self.applied_migrations())
        done = []
        with self._lock:
            self.connection.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(name VARCHAR PRIMARY KEY, applied_at TIMESTAMP NOT NULL)"
            )
            for name, step in MIGRATIONS:
                if name not in applied:
                    with self.transaction() as con:
                        if callable(step):
                            step(con)
                        else:
                            con.execute(step)
                        con.execute(
                            "INSERT INTO schema_migrations VALUES (?, ?)", [name, utc_now()]
                        )
                    log.info("applied migration %s to %s", name, self.path)
                    done.append(name)
                if name == upto:
                    break
        return done
