"""One DuckDB warehouse file per process: opening, migrating, transactions, busy handling.

DuckDB lets one process open a file for writing, and a second process cannot open it at all
meanwhile. Opening here waits (up to `wait_s`) for the other process to let go, then fails with
`WarehouseBusyError` naming that process, never with DuckDB's raw IOException.
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

from fleetplan.core.errors import WarehouseBusyError, WarehouseError
from fleetplan.core.paths import project_root
from fleetplan.warehouse.migrations import MIGRATIONS

log = logging.getLogger(__name__)

ENV_VAR = "FLEETPLAN_WAREHOUSE"
_LOCK_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")


def default_path() -> Path:
    return project_root() / "var" / "fleetplan.duckdb"


def resolve_path(path: str | os.PathLike[str] | None = None) -> Path:
    """`--warehouse`, else `$FLEETPLAN_WAREHOUSE`, else `var/fleetplan.duckdb` in the project."""
    chosen = path or os.environ.get(ENV_VAR) or default_path()
    return Path(chosen).expanduser()


def utc_now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _busy(path: Path, error: Exception) -> WarehouseBusyError | None:
    text = str(error)
    if "lock" not in text.lower():
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
        if read_only and not resolved.exists():
            raise WarehouseError(f"no warehouse at {resolved}: build it with `fleetplan build`")
        if not read_only:
            resolved.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + wait_s
        delay = 0.05
        while True:
            try:
                connection = duckdb.connect(str(resolved), read_only=read_only)
                break
            except duckdb.Error as error:
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
        exists = self.connection.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_migrations'"
        ).fetchone()
        if not exists or not exists[0]:
            return []
        rows = self.connection.execute("SELECT name FROM schema_migrations ORDER BY name")
        return [name for (name,) in rows.fetchall()]

    def check_schema(self) -> None:
        known = {name for name, _ in MIGRATIONS}
        unknown = [name for name in self.applied_migrations() if name not in known]
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
