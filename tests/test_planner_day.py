"""The day program (planner/day/program.py) against an independent brute force on small instances,
its hourly coverage and windows, a version 1 scenario planned as at its peak, and the new user's
scenario (examples/day-chat-nightly.json) on the bundled data."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from fleetplan.planner import plan
from fleetplan.planner.day.hourly_pools import DayLimits
from fleetplan.planner.day.program import solve_day
from fleetplan.planner.peak.fleets import objective_weights
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.planner.solve.kernel import SolveStatus
from fleetplan.services.planning import load_scenario, plan_from_warehouse
from fleetplan.warehouse.db import Warehouse
from tests.support.day_brute_force import (
    CHAT,
    FACTS,
    H100,
    POINTS,
    R4090,
    SITES,
    SMALL,
    brute_force,
    candidates,
    check_served,
    objective,
)
from tests.support.paths import ROOT
from tests.support.planner_points import gpu, scenario


@pytest.mark.parametrize("name", list(SMALL))
def test_the_day_program_agrees_with_a_brute_force(name):
    day, pools = candidates(SMALL[name])
    solution = solve_day(
        pools, weights=objective_weights(day), limits=DayLimits.of(day), time_limit_s=60
    )
    assert solution.status is SolveStatus.OPTIMAL, solution.message
    check_served(day, pools, solution)
    expected = brute_force(day, pools)
    assert math.isfinite(expected)
    assert objective(day, pools, solution) == pytest.approx(expected, rel=1e-6, abs=1e-9)


def test_the_limits_bind_in_the_limited_instances():
    """The budget and the carbon cap change the answer (so the brute force checks them)."""
    for name, drop in (
        ("carbon objective with a daily budget", "budget_usd_per_day"),
        ("cost objective with a daily carbon cap", "carbon_cap_kg_per_day"),
    ):
        limited = candidates(SMALL[name])
        free = candidates({k: v for k, v in SMALL[name].items() if k != drop})
        assert brute_force(*limited) > brute_force(*free) + 1e-6, name


def test_an_infeasible_day_is_a_status():
    raw = {**SMALL["two interactive classes share reserved servers"], "budget_usd_per_day": 1.0}
    day, pools = candidates(raw)
    solution = solve_day(pools, weights=objective_weights(day), limits=DayLimits.of(day))
    assert solution.status is SolveStatus.INFEASIBLE


def test_a_version_1_scenario_plans_its_day_as_its_peak():
    """A flat, reserved scenario planned over the day costs 24 times its peak plan's hour."""
    raw = scenario(
        [{"name": "chat", "rate_rps": 6, "ttft_p99_ms": 100}, {"name": "batch", "rate_rps": 3}],
        [gpu("h100-pcie", 2.0), gpu("rtx-4090", 0.3)],
    )
    peak = plan(Scenario.model_validate({**raw, "capacity_rule": "measured"}), POINTS, FACTS)
    assert peak.day is None
    day = plan(
        Scenario.model_validate({**raw, "version": 2, "capacity_rule": "measured"}), POINTS, FACTS
    )
    assert day.day.cost_usd == pytest.approx(24 * peak.recommended.totals.hourly_cost_usd)
    assert day.day.compared[0].cost_usd == pytest.approx(day.day.cost_usd)
    gpus = {r.gpu_model: r.gpus for r in day.day.reserved}
    assert gpus == peak.recommended.totals.gpus


@pytest.fixture
def new_user(sample_warehouse_path):
    day = load_scenario(ROOT / "examples" / "day-chat-nightly.json")
    with Warehouse.open(sample_warehouse_path, read_only=True) as wh:
        return day, plan_from_warehouse(wh, day)


def _by_hour(result, name):
    return {h.hour: [p for p in h.pools if p.traffic_class == name] for h in result.day.schedule}


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_new_users_nightly_job_runs_in_the_night_on_the_servers_chat_uses_by_day(new_user):
    day, result = new_user
    assert result.day.status.value == "optimal"
    nightly = _by_hour(result, "nightly eval")
    chat = _by_hour(result, "chat")
    window = set(day.classes[1].window())
    served = {h for h, pools in nightly.items() if pools}
    assert served and served <= window
    total = sum(p.rate_rps for pools in nightly.values() for p in pools) * 3600
    assert total == pytest.approx(50_000)
    day_offers = {p.offer for h in range(9, 18) for p in chat[h]}
    night_offers = {p.offer for h in served for p in nightly[h]}
    assert night_offers & day_offers  # the same reserved servers: chat by day, the job at night
    assert {r.offer for r in result.day.reserved} >= night_offers & day_offers
    # every hour's capacity covers chat's demand at its targets
    for hour in result.day.schedule:
        demand = day.classes[0].hourly_demand()[hour.hour]
        assert sum(p.rate_rps for p in chat[hour.hour]) == pytest.approx(demand)
    saving = result.day.saving_vs_peak_usd
    assert saving is not None and saving > 0
    assert result.day.compared[0].cost_usd - result.day.cost_usd == pytest.approx(saving)


def test_on_demand_4090s_run_only_in_the_hours_they_are_needed(sample_warehouse_path):
    """With a nightly job too large for the idle H100s (1,000,000 requests: the 6 H100s chat
    leaves idle at night carry about 400,000 at the 3.2 req/s each proves), RTX 4090s are rented
    in the night only, and only in hours when every reserved server is busy."""
    raw = json.loads((ROOT / "examples" / "day-chat-nightly.json").read_text())
    raw["classes"][1]["daily_requests"] = 1_000_000
    day = Scenario.model_validate(raw)
    with Warehouse.open(sample_warehouse_path, read_only=True) as wh:
        result = plan_from_warehouse(wh, day)
    rented = {h.hour for h in result.day.schedule if h.on_demand}
    assert rented and rented <= set(day.classes[1].window())
    assert all(h.idle_reserved_servers == 0 for h in result.day.schedule if h.on_demand)
    assert all(
        p.offer == "rtx-4090" for h in result.day.schedule for p in h.pools if h.hour in rented
        if p.offer not in {r.offer for r in result.day.reserved}
    )  # fmt: skip


def test_plan_command_prints_the_day_and_writes_json_and_the_schedule_csv(
    cli, tmp_path, sample_warehouse_path
):
    example = ROOT / "examples" / "day-chat-nightly.json"
    out = ["--json", tmp_path / "p.json", "--schedule-csv", tmp_path / "s.csv"]
    done = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", example, *out)
    assert done.returncode == 0, done.stderr
    assert "The day (hours of UTC)" in done.stdout and "Saving against the peak plan" in done.stdout
    data = json.loads((tmp_path / "p.json").read_text())["day"]
    assert {"cost_usd", "kgco2e", "schedule"} <= set(data)
    assert [h["hour"] for h in data["schedule"]] == list(range(24))
    keys = {"offer", "gpu_model", "gpus_per_server", "class", "servers", "rate_rps"}
    assert all(set(p) == keys for h in data["schedule"] for p in h["pools"])
    text = (tmp_path / "s.csv").read_text()
    assert text.startswith("hour,offer,")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == sum(len(h["pools"]) for h in data["schedule"])
    assert {r["class"] for r in rows} == {"chat", "nightly eval"}


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_version_1_plan_json_has_no_day(cli, tmp_path, sample_warehouse_path):
    example = ROOT / "examples" / "chat-batch-qwen14b.json"
    done = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", example,
                     "--json", tmp_path / "p.json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "day" not in json.loads((tmp_path / "p.json").read_text())
    assert "The day" not in done.stdout


def test_bursts_are_planned_for_only_where_the_scenario_lets_them():
    chat = {**CHAT, "burstiness": 1.5}
    for lets, factor in ((False, 1.0), (True, 1.5)):
        raw = scenario([chat], [H100, R4090], sites=SITES, plan_bursts=lets)
        day, pools = candidates(raw)
        solution = solve_day(pools, weights=objective_weights(day), limits=DayLimits.of(day))
        served = sum(r for (i, h), r in solution.rates.items() if h == 10)
        assert served == pytest.approx(7 * factor)


def test_the_schema_and_the_scenario_speak_of_hours_commitments_and_volumes():
    schema = json.dumps(Scenario.model_json_schema())
    for name in ("hourly_rps", "shape", "daily_requests", "window_hours", "commitment",
                 "budget_usd_per_day", "carbon_cap_kg_per_day", "hourly_grid_gco2_per_kwh",
                 "hourly_electricity_usd_per_kwh", "timezone", "business-day"):  # fmt: skip
        assert name in schema
    day = load_scenario(ROOT / "examples" / "day-chat-nightly.json")
    assert day.is_day and day.classes[1].window() == (22, 23, 0, 1, 2, 3, 4, 5)
    again = Scenario.model_validate_json(day.model_dump_json())
    assert again == day  # a day scenario written out reads back the same
    v1 = load_scenario(ROOT / "examples" / "chat-batch-qwen14b.json")
    assert not v1.is_day and "commitment" not in v1.model_dump_json()


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"version": 1}, "version 1 cannot say"),
        ({"classes": [{"name": "c", "rate_rps": 5, "hourly_rps": [1] * 24}]}, "not the highest"),
        ({"classes": [{"name": "c", "window_hours": [1, 2]}]}, "window_hours is the window"),
        ({"classes": [{"name": "c", "hourly_rps": [1] * 23}]}, "hourly_rps"),
        ({"timezone": "Mars/Olympus"}, "not a known timezone"),
        ({"gpus": [H100, H100]}, "give each offer a name"),
    ],
)
def test_a_bad_day_scenario_is_refused_naming_the_field(change, says):
    raw = {**SMALL["chat by day, a nightly volume"], **change}
    with pytest.raises(ValueError, match=says):
        Scenario.model_validate(raw)


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@pytest.mark.parametrize(
    ("scenario_file", "before"),
    [
        ("examples/chat-batch-qwen14b.json", "chat-batch-qwen14b-v1.json"),
        (None, "sample-scenario-v1.json"),
    ],
)
def test_a_version_1_plan_is_byte_for_byte_what_it_was_before_version_2(
    cli, tmp_path, sample_warehouse_path, scenario_file, before
):
    """The plan JSON of version 1 scenarios (the example, and test_planner_sample's) as main's
    `fleetplan plan --json` writes it on the bundled warehouse (first written before version 2
    existed, at f797023; written again when issues 19 and 20 changed what plans say: rewrite it
    only for a change meant to change plans)."""
    from tests.test_planner_sample import SCENARIO

    path = ROOT / scenario_file if scenario_file else tmp_path / "s.json"
    if scenario_file is None:
        path.write_text(json.dumps(SCENARIO))
    out = tmp_path / "p.json"
    done = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", path, "--json", out)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == (ROOT / "tests" / "fixtures" / "plans" / before).read_bytes()


@pytest.mark.parametrize("name", list(SMALL))
def test_the_peak_fleet_run_through_the_day_is_a_plan_of_the_day(name):
    """What a day stopped at its time limit falls back to where it does better: feasible."""
    from fleetplan.planner.day.plan_day import from_peak
    from fleetplan.planner.peak.fleets import Candidates, scenario_limits, solve_pools

    day, pools = candidates(SMALL[name])
    econ = [p.econ for p in pools]
    peak = solve_pools(
        Candidates.of(day, econ), weights=objective_weights(day), limits=scenario_limits(day)
    )
    if not peak.has_plan:
        pytest.skip("no plan at the peak")
    check_served(day, pools, from_peak(pools, peak))
