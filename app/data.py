"""The dashboard's access to the warehouse, and nothing else: the file is held only while a page
reads or writes it (open, query, close), so that `fleetplan ingest`, `fleetplan benchmarks` and a
campaign's `--ingest` can use it while the dashboard runs. Streamlit's caches keep what was read,
keyed by the file's modification time and size: new data written by another process is read on
the next rerun. What to do with the data is in fleetplan/services/ (and planner/, warehouse/),
where it is tested without Streamlit."""

from __future__ import annotations

import os
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TypeVar

import pandas as pd
import streamlit as st

from fleetplan.core.errors import WarehouseError
from fleetplan.planner.peak.economics import GpuFacts
from fleetplan.planner.peak.results import Plan
from fleetplan.services.plan_runner import PlanRunner
from fleetplan.services.planning import (
    PAGE_TIME_LIMIT_S,
    facts_from_catalog,
    load_scenario,
    plan_on_the_page,
)
from fleetplan.warehouse import queries
from fleetplan.warehouse.db import Warehouse, resolve_path

READ_ONLY_ENV = "FLEETPLAN_READ_ONLY"  # set by `fleetplan app --read-only`
# How long a page waits for another process (an ingest) to let go of the file.
WAIT_S = 15.0
# One connection at a time in this process: DuckDB refuses a second connection to a file that
# is open in another mode (read-only beside read-write), and sessions run in threads.
_LOCK = threading.Lock()
_HELD = threading.local()
_LOCK_PLANS = threading.Lock()
T = TypeVar("T")

Stamp = tuple[str, int, int, int, int]


def read_only() -> bool:
    """Whether the dashboard was started read-only: no upload, no delete, no migration."""
    return os.environ.get(READ_ONLY_ENV, "").strip().lower() in ("1", "true", "yes")


def _size_and_time(path: Path) -> tuple[int, int]:
    try:
        status = path.stat()
    except FileNotFoundError:
        return (-1, -1)
    return (status.st_size, status.st_mtime_ns)


def stamp() -> Stamp:
    """What the cached reads are keyed by: the warehouse path, and the size and modification
    time of its file and of DuckDB's write-ahead log beside it (any write changes one)."""
    path = resolve_path()
    wal = path.with_name(path.name + ".wal")
    return (str(path), *_size_and_time(path), *_size_and_time(wal))


@st.cache_resource(show_spinner=False)
def _prepared(path: str) -> bool:
    """Create or migrate the warehouse once per process (a read-write open, closed at once)."""
    with Warehouse.open(path, wait_s=WAIT_S):
        return True


def _open(*, write: bool) -> Warehouse:
    path = resolve_path()
    if read_only():
        if write:
            raise WarehouseError("this dashboard is read-only: nothing can be changed here")
        return Warehouse.open(path, read_only=True, wait_s=WAIT_S)
    _prepared(str(path))
    return Warehouse.open(path, read_only=not write, wait_s=WAIT_S, migrate=write)


@contextmanager
def holding(*, write: bool = False) -> Iterator[Warehouse]:
    """The warehouse, open for the `with` block only, then closed (so other processes may use
    it). On failure (busy, unreadable, read-only) the page says so and stops."""
    if getattr(_HELD, "open", False):
        # The lock is not re-entrant: read what the block needs before entering it.
        raise RuntimeError("the warehouse is already open in this thread")
    with _LOCK:
        try:
            warehouse = _open(write=write)
        except WarehouseError as error:
            st.error(f"The warehouse cannot be opened. {error}", icon=":material/error:")
            st.stop()
            raise  # unreachable: st.stop() raises
        _HELD.open = True
        try:
            yield warehouse
        finally:
            _HELD.open = False
            warehouse.close()


def _read(query: Callable[[Warehouse], T]) -> T:
    with holding() as warehouse:
        return query(warehouse)


def refresh() -> None:
    """After the warehouse changed (an upload, a deletion): drop cached query results."""
    st.cache_data.clear()


# Cached reads: the stamp is part of the key (a parameter without a leading underscore, which
# Streamlit would leave out of the key), so a changed file is read again; a few entries only, as
# older stamps are never asked for again.
@st.cache_data(show_spinner=False, max_entries=4)
def _points(key: Stamp) -> pd.DataFrame:
    return _read(queries.benchmark_points)


@st.cache_data(show_spinner=False, max_entries=4)
def _run_origins(key: Stamp) -> dict[str, str]:
    return _read(queries.run_origins)


@st.cache_data(show_spinner=False, max_entries=4)
def _catalog(key: Stamp) -> pd.DataFrame:
    return _read(queries.gpu_catalog)


@st.cache_data(show_spinner=False, max_entries=4)
def _prices(key: Stamp) -> pd.DataFrame:
    return _read(queries.gpu_prices)


@st.cache_data(show_spinner=False, max_entries=4)
def _regions(key: Stamp) -> pd.DataFrame:
    return _read(queries.regions)


@st.cache_data(show_spinner=False, max_entries=4)
def _sources(key: Stamp) -> pd.DataFrame:
    return _read(queries.sources)


@st.cache_data(show_spinner=False, max_entries=4)
def _counts(key: Stamp) -> dict[str, int]:
    return _read(queries.counts)


def points() -> pd.DataFrame:
    return _points(stamp())


def run_origins() -> dict[str, str]:
    return _run_origins(stamp())


def catalog() -> pd.DataFrame:
    return _catalog(stamp())


def prices() -> pd.DataFrame:
    return _prices(stamp())


def regions() -> pd.DataFrame:
    return _regions(stamp())


def sources() -> pd.DataFrame:
    return _sources(stamp())


def counts() -> dict[str, int]:
    return _counts(stamp())


def facts() -> dict[str, GpuFacts]:
    return facts_from_catalog(catalog())


PLANS_KEPT = 64
_RUNNER_LOCK = threading.Lock()
_RUNNER: list[PlanRunner] = []


def plan_runner() -> PlanRunner:
    """The server's one runner of plans: a slot per core, one plan per session, each in a
    process that ends with its session (`services.plan_runner`)."""
    with _RUNNER_LOCK:
        if not _RUNNER:
            _RUNNER.append(PlanRunner())
        return _RUNNER[0]


@st.cache_resource(show_spinner=False)
def _plans() -> OrderedDict[tuple[str, Stamp], Plan]:
    """Plans made, shared by sessions, the most recent last (at most PLANS_KEPT)."""
    return OrderedDict()


def _session() -> tuple[str, Callable[[], bool]]:
    """This session's id, and whether it is still open (true where there is no server: tests)."""
    from streamlit import runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    context = get_script_run_ctx()
    session = context.session_id if context is not None else ""
    if not session or not runtime.exists():
        return session, lambda: True
    server = runtime.get_instance()
    return session, lambda: server.is_active_session(session)


def _progress(status, seconds: float) -> None:
    """A plan's progress on the page: a call into Streamlit, where a rerun or a closed session
    stops this script, and with it the plan's process (the runner kills it on the way out)."""
    if seconds >= 1.0:
        status.caption(f"Planning... {seconds:.0f} s (at most {PAGE_TIME_LIMIT_S:g} s of solving)")


def replay_for(
    plan: Plan, scenario, points_shown: pd.DataFrame, trace: bytes, *, name: str, **options
) -> dict:
    """A request log replayed through the plan on screen (`services.replay.replay_for_page`),
    in a process of the plan runner as the page's plans are: within the wall limit, ended when
    the session ends or replays again."""
    from fleetplan.services.replay import replay_for_page

    status = st.empty()
    session, wanted = _session()
    try:
        return plan_runner().run(
            f"{session}:replay",
            partial(replay_for_page, name=name, **options),
            plan,
            scenario,
            points_shown,
            trace,
            wanted=wanted,
            tick=partial(_replay_progress, status),
            too_long=("the replay", "replay part of the log with `fleetplan simulate --trace`"),
        )
    finally:
        status.empty()


def _replay_progress(status, seconds: float) -> None:
    if seconds >= 1.0:
        status.caption(f"Replaying... {seconds:.0f} s")


def download_session() -> tuple[str, Callable[[], bool]]:
    """The runner's name and liveness test for the plans this session's downloads build, taken
    during a run of the page: a download is built when its button is clicked, outside any run,
    where the session cannot be known. One name per session, so a newer download's plan ends an
    older one still in flight; ended with the session, as the page's plans are."""
    session, wanted = _session()
    return f"{session or uuid.uuid4().hex}:download", wanted


def plan_for(
    scenario_json: str,
    *,
    frontier: bool = False,
    session: tuple[str, Callable[[], bool]] | None = None,
) -> Plan:
    """Plans are cached by scenario (its JSON is the cache key), warehouse stamp and whether the
    cost/carbon frontier was asked for (`frontier`: the page asks when its tab is open): going
    back to an earlier input is instant, new data plans again. Planned as `fleetplan plan`
    plans, from the same tables, within the page's own limits, in a process of its own: a
    session's newer plan, a rerun or the session's end stops it (`services.plan_runner`).
    `session`: a plan asked for outside a run of the page (a download being built): its name in
    the runner and whether its session is still open (`download_session`), without progress on
    the page."""
    key = (scenario_json, stamp(), frontier)
    plans = _plans()
    with _LOCK_PLANS:
        if key in plans:
            plans.move_to_end(key)
            return plans[key]
    scenario = load_scenario(scenario_json.encode(), name="scenario")
    status = st.empty() if session is None else None
    name, wanted = _session() if session is None else session
    try:
        result = plan_runner().run(
            name,
            partial(plan_on_the_page, frontier=frontier),
            scenario,
            points(),
            catalog(),
            wanted=wanted,
            tick=None if status is None else partial(_progress, status),
        )
    finally:
        if status is not None:
            status.empty()
    with _LOCK_PLANS:
        plans[key] = result
        while len(plans) > PLANS_KEPT:
            plans.popitem(last=False)
    return result
