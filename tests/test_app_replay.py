"""The Plan page's trace replay (app/plan_replay.py): a request log uploaded and replayed through
the plan on screen, in AppTest; the same answer as `fleetplan simulate --trace` on the plan's
JSON."""

from __future__ import annotations

import json

import pytest

from fleetplan.services.exports import plan_json
from tests.support.pages import open_app, seen
from tests.test_replay import poisson_trace

pytestmark = pytest.mark.slow


def test_an_uploaded_log_is_replayed_through_the_plan_on_screen(
    monkeypatch, sample_warehouse_path, tmp_path, cli
):
    at = open_app(monkeypatch, sample_warehouse_path)
    result, scenario = at.session_state["s_result"], at.session_state["s_current"]
    first = scenario.classes[0].name
    trace = poisson_trace(tmp_path / "t.csv", rate=2.0, seconds=900, start="2024-03-01 14:00:00")
    at.file_uploader(key="w_trace_file").set_value(
        ("log.csv", trace.read_bytes(), "text/csv")
    ).run()
    assert not at.exception, at.exception
    at.selectbox(key="w_trace_class").set_value(first).run()
    at.button(key="w_trace_run").click().run()
    assert not at.exception, at.exception
    table = next(df.value for df in at.dataframe if "Busiest minute" in df.value.columns)
    assert list(table["Hour"]) == [14] and list(table["Class"]) == [first]
    assert table["Requests"].sum() == len(trace.read_text().splitlines()) - 1
    shown = " ".join(seen(m.value) for m in at.markdown)
    assert f"**{first}**" in shown
    assert ("meets its targets" in shown) == bool(table["Meets targets"].all())
    # The command line says the same of the same plan and log.
    plan = tmp_path / "plan.json"
    plan.write_text(plan_json(result, {"scenario": scenario.model_dump(mode="json")}))
    done = cli(
        "simulate",
        "--plan",
        plan,
        "--trace",
        trace,
        "--class",
        first,
        "--format",
        "json",
        "--warehouse",
        sample_warehouse_path,
    )
    assert done.returncode == 0, done.stderr
    cli_class = next(c for c in json.loads(done.stdout)["classes"] if c["name"] == first)
    assert cli_class["hours"][0]["ttft_p99_ms"] == pytest.approx(table["P99 TTFT (ms)"].iloc[0])
    assert cli_class["hours"][0]["tpot_p99_ms"] == pytest.approx(table["P99 TPOT (ms)"].iloc[0])


def test_a_log_that_cannot_be_replayed_says_why(monkeypatch, sample_warehouse_path):
    at = open_app(monkeypatch, sample_warehouse_path)
    at.file_uploader(key="w_trace_file").set_value(
        ("bad.csv", b"when,prompt\n1,2\n", "text/csv")
    ).run()
    at.button(key="w_trace_run").click().run()
    assert not at.exception, at.exception
    errors = [seen(e.value) for e in at.error]
    assert any("cannot be replayed" in e and "output_tokens" in e for e in errors), errors


def test_the_pages_replay_is_bounded_and_runs_where_a_plan_runs(
    monkeypatch, sample_warehouse_path, tmp_path
):
    """A replay from the page runs in the plan runner (a process of its own, the wall limit,
    ended with its session), and a log times its scale past two million requests is refused
    before any is made (a 200 MiB log at x1000 ran for hours in the page's own thread)."""
    from fleetplan.app import data
    from fleetplan.services.plan_runner import PlanRunner

    at = open_app(monkeypatch, sample_warehouse_path)
    trace = poisson_trace(tmp_path / "t.csv", rate=2.0, seconds=1200, start="2024-03-01 14:00:00")
    at.file_uploader(key="w_trace_file").set_value(
        ("log.csv", trace.read_bytes(), "text/csv")
    ).run()
    at.selectbox(key="w_trace_class").set_value(at.session_state["s_current"].classes[0].name)
    at.number_input(key="w_trace_scale").set_value(1000.0).run()
    at.button(key="w_trace_run").click().run()
    assert not at.exception, at.exception
    errors = [seen(e.value) for e in at.error]
    assert any("over the 2,000,000 one replay simulates" in e for e in errors), errors
    # past the runner's wall: stopped, and said so as a replay
    slow = PlanRunner(wall_s=0.05)
    monkeypatch.setattr(data, "_RUNNER", [slow])
    at.number_input(key="w_trace_scale").set_value(1.0).run()
    at.button(key="w_trace_run").click().run()
    assert not at.exception, at.exception
    errors = [seen(e.value) for e in at.error]
    assert any("the replay took over 0.05 s and was stopped" in e for e in errors), errors
    assert slow.started == 1  # it ran in a process of the runner's
