"""What makes a large day plan fast, each against test_planner_day's brute force: the rounding
cuts (planner/day/cuts.py) cut off no integer plan, identical hours planned once keep the
optimum, and the decomposition a large day is planned by (planner/day/program.py `_decomposed`)
gives a plan of the day whose stated bound and gap are true."""

from __future__ import annotations

import functools
import itertools
import random

import pytest

from fleetplan.planner import plan
from fleetplan.planner.day import program as day_program
from fleetplan.planner.day.cuts import cut_rows, tightened
from fleetplan.planner.day.hourly_pools import DayLimits
from fleetplan.planner.day.program import solve_day
from fleetplan.planner.day.pruning import identical_hours
from fleetplan.planner.peak.fleets import objective_weights
from fleetplan.planner.scenario.parts import HOURS
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.planner.solve.kernel import SolveStatus
from tests.support.day_brute_force import (
    FACTS,
    POINTS,
    SMALL,
    brute_force,
    candidates,
    check_served,
    objective,
)


@functools.cache
def _optimum(name: str) -> float:
    return brute_force(*candidates(SMALL[name]))


def covering_cuts(entries, demand) -> list[tuple[list[tuple[int, float]], float]]:
    """`cut_rows` as rows of (column, coefficient) entries, each with its lower side."""
    found = cut_rows(entries, demand)
    if found is None:
        return []
    cols, coef, lower = found
    return [
        (list(zip(cols[row > 0].tolist(), row[row > 0].tolist(), strict=True)), float(low))
        for row, low in zip(coef, lower, strict=True)
    ]


def test_the_rounding_cuts_cut_off_no_integer_plan():
    """Every integer point of random covering rows (up to 7 servers of each of up to 3 pools)
    that covers the demand meets the tightened row and every cut; and the cuts do cut: some
    fractional point that covers the demand breaks one."""
    rng = random.Random(7)
    points = cut_off = 0
    for _ in range(400):
        caps = [rng.uniform(0.2, 10) for _ in range(rng.randint(1, 3))]
        demand = rng.uniform(0.1, 15)
        entries = list(enumerate(caps))
        rows = [(tightened(entries, demand), demand), *covering_cuts(entries, demand)]
        for servers in itertools.product(range(8), repeat=len(caps)):
            if sum(c * s for c, s in zip(caps, servers, strict=True)) >= demand - 1e-12:
                points += 1
                assert len(rows) > 0  # a loop over nothing asserts nothing
                for row, lower in rows:
                    assert sum(c * servers[col] for col, c in row) >= lower - 1e-9
        cheapest = max(range(len(caps)), key=lambda j: caps[j])
        fractional = [0.0] * len(caps)
        fractional[cheapest] = demand / caps[cheapest]  # what the LP takes without the cuts
        if any(sum(c * fractional[col] for col, c in r) < lo - 1e-9 for r, lo in rows):
            cut_off += 1
    assert points > 10_000 and cut_off > 100


def test_identical_hours_are_grouped_and_tied_hours_are_not():
    day, pools = candidates(SMALL["two interactive classes share reserved servers"])
    members = range(len(pools))
    groups = identical_hours(pools, members, DayLimits.of(day))
    # no class has traffic but in 9-11 h and 20 h; the home site's grid is 100 g until 6 h
    quiet = [h for h in range(6, HOURS) if h not in (9, 10, 11, 20)]
    assert groups == [[0, 1, 2, 3, 4, 5], quiet, [9], [10], [11], [20]]
    daily = candidates(SMALL["cost objective with a daily carbon cap"])
    assert identical_hours(daily[1], range(len(daily[1])), DayLimits.of(daily[0])) == [
        [h] for h in range(HOURS)
    ]
    night = candidates(SMALL["chat by day, a nightly volume"])
    night_groups = identical_hours(night[1], range(len(night[1])), DayLimits.of(night[0]))
    for h in (22, 23, 0):  # inside the nightly window: each hour its own
        assert [h] in night_groups


def test_a_day_planned_on_grouped_hours_serves_every_hour_of_each_group():
    name = "two interactive classes share reserved servers"
    day, pools = candidates(SMALL[name])
    solution = solve_day(pools, weights=objective_weights(day), limits=DayLimits.of(day))
    assert solution.status is SolveStatus.OPTIMAL
    check_served(day, pools, solution)
    assert objective(day, pools, solution) == pytest.approx(_optimum(name), rel=1e-6)


@pytest.mark.parametrize("name", list(SMALL))
def test_a_decomposed_day_is_the_optimum(name, monkeypatch):
    """Every instance planned by decomposition, as a large one is (LP with cuts, the pools it
    uses, then the whole program on the columns reduced costs leave): the brute force's
    optimum, proven, every hour served."""
    monkeypatch.setattr(day_program, "LARGE", 0)
    day, pools = candidates(SMALL[name])
    solution = solve_day(pools, weights=objective_weights(day), limits=DayLimits.of(day))
    assert solution.status is SolveStatus.OPTIMAL, solution.message
    check_served(day, pools, solution)
    assert objective(day, pools, solution) == pytest.approx(_optimum(name), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("name", list(SMALL))
def test_a_day_stopped_before_its_proof_states_a_true_bound(name, monkeypatch):
    """The decomposition's first two steps alone (what a large day keeps where the last step
    does not finish in time): every hour served, the stated lower bound at most the brute
    force's optimum, the plan at least it, the gap what the two say, and 'optimal' only where
    the bound meets the plan."""
    monkeypatch.setattr(day_program, "LARGE", 0)
    monkeypatch.setattr(day_program, "PROVE", False)
    day, pools = candidates(SMALL[name])
    solution = solve_day(pools, weights=objective_weights(day), limits=DayLimits.of(day))
    assert solution.has_plan, solution.message
    check_served(day, pools, solution)
    best = _optimum(name)
    value = objective(day, pools, solution)
    assert value >= best - 1e-6 * max(1.0, best)
    if solution.status is SolveStatus.OPTIMAL:
        assert value == pytest.approx(best, rel=1e-6, abs=1e-9)
        return
    assert solution.status is SolveStatus.TIME_LIMIT
    assert "not proven optimal" in solution.message and "decomposition" in solution.message
    assert solution.bound is not None and solution.bound <= best + 1e-6 * max(1.0, best)
    assert solution.mip_gap == pytest.approx((value - solution.bound) / value, abs=1e-6)
    assert f"{solution.mip_gap:.2%}" in solution.message


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_day_plan_states_its_gap(monkeypatch):
    raw = {**SMALL["two interactive classes share reserved servers"], "capacity_rule": "measured"}
    exact = plan(Scenario.model_validate(raw), POINTS, FACTS).day
    assert exact.status.value == "optimal" and exact.optimality_gap == 0.0
    monkeypatch.setattr(day_program, "LARGE", 0)
    monkeypatch.setattr(day_program, "PROVE", False)
    # no cuts: the LP bound alone stays below this day's optimum
    monkeypatch.setattr(day_program, "cut_rows", lambda entries, demand: None)
    decomposed = plan(Scenario.model_validate(raw), POINTS, FACTS).day
    assert decomposed.status.value == "time_limit"
    assert "not proven optimal" in decomposed.message
    assert decomposed.optimality_gap is not None and decomposed.optimality_gap > 0.0
    assert f"{decomposed.optimality_gap:.2%}" in decomposed.message
    assert decomposed.cost_usd == pytest.approx(exact.cost_usd)  # the plan itself is the optimum
