"""`fleetplan simulate` on a day plan (issue 35): it simulated the plan's `recommended` fleet,
which for a day scenario is its peak comparison (planned without availability, no spares, no
attainment: "planned none" and every window met), and did not say so. It now simulates the day:
each hour's servers as scheduled, spares included, against each hour's attainment."""

from __future__ import annotations

import copy
import json

import pytest

from fleetplan.planner import Scenario
from fleetplan.planner.availability.simulation import SimulationInputError
from fleetplan.planner.day.simulation import read_day, simulate_day
from fleetplan.services.exports import plan_json
from fleetplan.services.planning import plan_from_tables
from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def day_raw(sample_tables) -> dict:
    """The example day with every offer up 95 % of the time and chat's attainment 0.999."""
    raw = json.loads((ROOT / "examples" / "day-chat-nightly.json").read_text())
    for offer in raw["gpus"]:
        offer["availability"] = 0.95
    raw["classes"][0]["attainment"] = 0.999
    plan = plan_from_tables(
        Scenario.model_validate(raw), sample_tables.points, sample_tables.catalog
    )
    assert plan.day is not None and plan.day.cost_usd is not None
    return json.loads(plan_json(plan, {}))


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_day_is_simulated_hour_by_hour_and_agrees_with_its_attainment(day_raw):
    day = read_day(day_raw["day"])
    assert {u.availability for u in day.fleet} == {0.95}
    assert all(s.full_capacity_rps_per_server for u in day.fleet for s in u.classes)
    result = simulate_day(day, hours=20_000, seed=0)
    by_class = {c.traffic_class: c for c in result.classes}
    assert set(by_class) == {"chat", "nightly eval"}
    for name, c in by_class.items():
        planned = {a.traffic_class: a for a in day.attainment}[name]
        assert c.planned == planned.attainment
        # each hour with traffic, against that hour's own figure
        assert {r.hour for r in c.hours} == {
            h for h, v in enumerate(planned.by_hour) if v is not None
        }
        assert c.agrees(), (name, c.worst, c.planned)
    # the nightly job runs 22h-06h only: its hours are those
    assert {r.hour for r in by_class["nightly eval"].hours} <= {22, 23, 0, 1, 2, 3, 4, 5}


def test_the_day_without_its_spares_falls_short_of_its_attainment(day_raw):
    # the same day with the chat's servers cut to what carries its rate (no spare for a host
    # down): the simulation sees the misses (it is not a restatement of the plan)
    raw = copy.deepcopy(day_raw["day"])
    for unit in raw["fleet"]:
        for share in unit["classes"]:
            if share["class"] == "chat":
                share["servers_by_hour"] = [
                    max(1, -(-int(r) // int(share["full_capacity_rps_per_server"]))) if r > 0 else 0
                    for r in share["rate_by_hour"]
                ]
    result = simulate_day(read_day(raw), hours=5_000, seed=0)
    chat = next(c for c in result.classes if c.traffic_class == "chat")
    assert chat.worst.high < 0.999 and chat.agrees() is False


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_cli_simulates_the_day_and_says_so(cli, tmp_path, day_raw):
    path = tmp_path / "day.json"
    path.write_text(json.dumps(day_raw))
    done = cli("simulate", "--plan", path, "--hours", "500", input="")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Simulated the day plan over 500 h (seed 0)")
    lines = {line.split()[0]: line for line in done.stdout.splitlines()[3:]}
    assert set(lines) == {"chat", "nightly"}
    assert "0.99987" in lines["chat"]  # the day's attainment of chat, not "none"


def _broken(day_raw, change) -> dict:
    raw = copy.deepcopy(day_raw)
    change(raw["day"])
    return raw


def _share(day: dict) -> dict:
    return day["fleet"][0]["classes"][0]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda d: d["fleet"][0].update(availability=0), "day.fleet[0].availability is 0"),
        (lambda d: d["fleet"][0].update(availability=1.5), "day.fleet[0].availability is 1.5"),
        (
            lambda d: _share(d).update(servers_by_hour=[1] * 23),
            "day.fleet[0].classes[0].servers_by_hour has 23 entries",
        ),
        (
            lambda d: _share(d)["servers_by_hour"].__setitem__(3, -2),
            "day.fleet[0].classes[0].servers_by_hour[3] is -2",
        ),
        (
            lambda d: _share(d)["servers_by_hour"].__setitem__(3, 10**9),
            "servers_by_hour[3] is 1000000000",
        ),
        (
            lambda d: _share(d)["rate_by_hour"].__setitem__(5, -1.0),
            "day.fleet[0].classes[0].rate_by_hour[5] is -1.0",
        ),
        (lambda d: d["fleet"][0].pop("gpus_per_server"), "day.fleet.0.gpus_per_server"),
        (lambda d: d.update(fleet=[]), "day.fleet is empty"),
        (lambda d: d.update(fleet="all of them"), "day.fleet"),
        (
            lambda d: d["attainment"][0]["by_hour"].__setitem__(9, 2.0),
            "day.attainment[0].by_hour[9] is 2.0",
        ),
    ],
)
def test_a_hostile_day_is_refused_naming_the_field(cli, tmp_path, day_raw, change, named):
    path = tmp_path / "day.json"
    path.write_text(json.dumps(_broken(day_raw, change)))
    done = cli("simulate", "--plan", path, input="")
    assert done.returncode == 1, done.stdout
    assert named in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"window_s": 7200.0}, "--window-s 7200 is longer than an hour"),
        ({"hours": 1e9}, "--hours"),
        ({"repair_hours": 1e-9}, "--repair-hours"),
    ],
)
def test_the_days_options_are_bounded_before_any_work(day_raw, options, named):
    with pytest.raises(SimulationInputError, match=named):
        simulate_day(read_day(day_raw["day"]), **options)
