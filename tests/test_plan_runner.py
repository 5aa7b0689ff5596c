"""One session cannot hold more than its share of the dashboard's server (issue 21): plans run in
processes of their own, at most `slots` at once server-wide and one per session; a superseded
plan, or one whose session ended, is killed and frees its slot. Real processes, real plans; the
waits are bounded, and nothing asserts how long anything took."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from fleetplan.core.errors import InputError
from fleetplan.services.plan_runner import PlanCancelled, PlanRunner, PlanSuperseded
from fleetplan.services.planning import load_scenario, plan_on_the_page
from fleetplan.warehouse.queries import benchmark_points, gpu_catalog
from tests.support import plan_jobs

# each plan runs in a process of its own (the fork server's): seconds a test
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def until(condition, what: str) -> None:
    """Wait for `condition` (at most a minute), failing with `what` if it never holds."""
    for _ in range(1200):
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"never: {what}")


class Sessions:
    """Plans of several sessions at once, each in a thread, with what each ended with."""

    def __init__(self, runner: PlanRunner):
        self.runner = runner
        self.ended: dict[str, object] = {}
        self.threads: list[threading.Thread] = []

    def start(self, session: str, function, *args, **options) -> None:
        def run() -> None:
            try:
                self.ended[session] = self.runner.run(session, function, *args, **options)
            except Exception as error:
                self.ended[session] = error

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        self.threads.append(thread)

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in self.threads)


def test_six_sessions_never_run_more_plans_than_the_slots(tmp_path):
    runner = PlanRunner(slots=2)
    release = tmp_path / "release"
    sessions = Sessions(runner)
    for i in range(6):
        sessions.start(f"s{i}", plan_jobs.wait_for, str(release), i)

    def holding() -> list[str]:
        return [s for s in (f"s{i}" for i in range(6)) if runner.process_of(s) is not None]

    until(lambda: len(holding()) == 2, "two plans in their processes")
    assert runner.running == 2  # the other four wait for a slot, without a process
    assert all(runner.process_of(s).is_alive() for s in holding())
    release.touch()
    sessions.join()
    assert sessions.ended == {f"s{i}": i for i in range(6)}
    assert runner.peak == 2 and runner.running == 0


def test_a_sessions_new_plan_ends_the_one_in_flight(tmp_path):
    runner = PlanRunner(slots=1)
    sessions = Sessions(runner)
    sessions.start("tab", plan_jobs.wait_for, str(tmp_path / "never"), "old")
    until(lambda: runner.process_of("tab") is not None, "the first plan's process started")
    first = runner.process_of("tab")
    assert first.is_alive()
    # the same session asks again: the old plan's process is killed, and its slot (the only
    # one) goes to the new plan
    assert runner.run("tab", plan_jobs.double, 21) == 42
    sessions.join()
    assert isinstance(sessions.ended["tab"], PlanSuperseded)
    assert not first.is_alive() and first.exitcode is not None
    assert runner.running == 0 and runner.process_of("tab") is None


def test_a_plan_whose_session_ended_is_killed_and_frees_its_slot(tmp_path):
    runner = PlanRunner(slots=1)
    alive = threading.Event()
    alive.set()
    sessions = Sessions(runner)
    sessions.start(
        "closed-tab", plan_jobs.wait_for, str(tmp_path / "never"), 1, wanted=alive.is_set
    )
    until(lambda: runner.process_of("closed-tab") is not None, "the plan's process started")
    process = runner.process_of("closed-tab")
    alive.clear()  # the tab closed
    sessions.join()
    assert isinstance(sessions.ended["closed-tab"], PlanCancelled)
    assert not process.is_alive()
    assert runner.run("another", plan_jobs.double, 2) == 4  # the one slot is free again


def test_a_plan_waiting_for_a_slot_is_superseded_without_ever_starting(tmp_path):
    runner = PlanRunner(slots=1)
    release = tmp_path / "release"
    sessions = Sessions(runner)
    sessions.start("busy", plan_jobs.wait_for, str(release), "busy")
    until(lambda: runner.running == 1, "the slot taken")
    sessions.start("tab", plan_jobs.double, 1)
    until(lambda: "tab" in runner._jobs, "the second plan waiting")
    runner.end_session("tab")
    release.touch()
    sessions.join()
    assert isinstance(sessions.ended["tab"], PlanSuperseded)
    assert sessions.ended["busy"] == "busy" and runner.peak == 1


def test_a_plan_past_its_wall_time_is_stopped_and_says_so(tmp_path):
    runner = PlanRunner(slots=1, wall_s=0.5)
    with pytest.raises(InputError, match=r"the plan took over 0\.5 s and was stopped"):
        runner.run("tab", plan_jobs.wait_for, str(tmp_path / "never"), 1)
    assert runner.running == 0


def test_a_plan_that_waits_its_wall_time_for_a_slot_is_refused_and_never_started(tmp_path):
    # it waited for as long as the slots stayed busy (a download's plan, never cancelled: for
    # ever)
    runner = PlanRunner(slots=1, wall_s=0.5)
    sessions = Sessions(runner)
    sessions.start("busy", plan_jobs.wait_for, str(tmp_path / "never"), "busy")
    until(lambda: runner.running == 1, "the slot taken")
    with pytest.raises(InputError, match=r"waited over 0\.5 s for one of the server's 1 planning"):
        runner.run("tab", plan_jobs.double, 1)
    assert runner.started == 1 and "tab" not in runner._jobs
    sessions.join()  # the busy one ran past its own wall time
    assert isinstance(sessions.ended["busy"], InputError) and runner.running == 0


def test_a_downloads_plan_is_its_sessions_ended_with_it_and_by_its_next(
    monkeypatch, sample_warehouse_path, tmp_path
):
    # a download's plan ran under a name of its own ("download-<uuid>") that nothing ended: a
    # closed tab's download planned on, and each click another plan
    import streamlit as st

    from fleetplan.app import data
    from fleetplan.warehouse.db import ENV_VAR

    monkeypatch.setenv(ENV_VAR, str(sample_warehouse_path))
    st.cache_data.clear()
    st.cache_resource.clear()
    runner = PlanRunner(slots=1)
    monkeypatch.setattr(data, "_RUNNER", [runner])
    asked = (ROOT / "examples" / "chat-batch-qwen14b.json").read_text()
    with pytest.raises(PlanCancelled):
        data.plan_for(asked, frontier=True, session=("tab:download", lambda: False))
    assert runner.started == 0  # ended before it had a process
    name, wanted = data.download_session()  # outside a server: a name of its own, always open
    assert name.endswith(":download") and wanted()
    # a second download of the same session ends the first one's plan
    sessions = Sessions(runner)
    sessions.start("tab:download", plan_jobs.wait_for, str(tmp_path / "never"), 0)
    until(lambda: runner.process_of("tab:download") is not None, "the first download's plan")
    plan = data.plan_for(asked, frontier=True, session=("tab:download", lambda: True))
    sessions.join()
    assert isinstance(sessions.ended["tab:download"], PlanSuperseded)
    assert plan.recommended.totals is not None and plan.pareto


def test_a_refusal_in_the_plans_process_is_the_same_input_error():
    with pytest.raises(InputError, match="no such model") as caught:
        PlanRunner(slots=1).run("tab", plan_jobs.refuse)
    assert caught.value.field == "model"


def test_the_dashboards_plan_in_its_process_is_the_plan_made_in_this_one(sample_warehouse_path):
    from fleetplan.warehouse.db import Warehouse

    with Warehouse.open(sample_warehouse_path, read_only=True) as warehouse:
        points, catalog = benchmark_points(warehouse), gpu_catalog(warehouse)
    scenario = load_scenario(ROOT / "examples" / "chat-batch-qwen14b.json")
    here = plan_on_the_page(scenario, points, catalog)
    there = PlanRunner(slots=1).run("tab", plan_on_the_page, scenario, points, catalog)
    assert there.model_dump() == here.model_dump()


def test_the_plan_page_plans_in_the_servers_runner_and_leaves_no_process(
    monkeypatch, sample_warehouse_path
):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    from fleetplan.app import data
    from fleetplan.warehouse.db import ENV_VAR

    monkeypatch.setenv(ENV_VAR, str(sample_warehouse_path))
    st.cache_data.clear()
    st.cache_resource.clear()
    monkeypatch.setattr(data, "_RUNNER", [PlanRunner(slots=1)])
    runner = data.plan_runner()
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    assert at.session_state["s_result"].recommended is not None
    assert (runner.started, runner.running) == (1, 0) and not runner._jobs
    at.run()  # unchanged inputs: the plan made is reused, no process started
    assert at.session_state["s_result"].recommended is not None
    assert (runner.started, runner.running) == (1, 0)


def test_a_finished_plans_process_plans_again_and_an_ended_ones_never(tmp_path):
    runner = PlanRunner(slots=1)
    assert runner.run("a", plan_jobs.double, 1) == 2
    assert runner.run("b", plan_jobs.double, 2) == 4
    with pytest.raises(InputError):
        runner.run("c", plan_jobs.refuse)
    assert runner.started == 1  # one warm process served all three
    sessions = Sessions(runner)
    sessions.start("d", plan_jobs.wait_for, str(tmp_path / "never"), 0)
    until(lambda: runner.process_of("d") is not None, "the plan given the warm process")
    ended = runner.process_of("d")
    runner.end_session("d")
    sessions.join()
    assert isinstance(sessions.ended["d"], PlanSuperseded) and not ended.is_alive()
    assert runner.run("e", plan_jobs.double, 3) == 6
    assert runner.started == 2  # the ended plan's process was not reused
