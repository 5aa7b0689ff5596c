"""The cost/carbon (Pareto) frontier: fleets no other fleet beats on both cost and carbon, found
within the scenario's time limit.

1. The two ends: the cheapest fleet and the cleanest fleet.
2. Carbon prices between them (minimise cost + price x carbon): each price gives a Pareto-optimal
   fleet, and classes stay separable, so these solves are fast.
3. Epsilon-constraint: the cheapest fleet under a carbon cap just below the point on the left of
   the widest gap left, until enough points or the time runs out; these find the points no price
   reaches.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence

import numpy as np

from fleetplan.planner.peak.fleets import Candidates, scenario_limits, solve_fleet
from fleetplan.planner.peak.program import Weights
from fleetplan.planner.peak.results import HOURS_PER_MONTH, FleetPlan, ParetoPoint, PlanStatus
from fleetplan.planner.solve.kernel import Deadline, said, spent

# A weight this small only breaks ties: "min cost" still prefers the cleaner of equal-cost fleets.
_NUDGE = 1e-6
# Gaps narrower than this share of the frontier's carbon span are not searched, and a capped solve
# asks for at least that much less carbon than the point on its left. Where moving load between
# pools changes energy continuously, the frontier has stretches of fleets that differ only in
# their split, and each capped solve found the next one a millionth cleaner: 229 solves and the
# whole time limit (10 s) on the bundled data at a 0.6 utilisation ceiling, for 10 points. A
# point within 1 % of the span of another cannot be told apart from it on the chart either.
MIN_GAP = 0.01


def pareto_frontier(
    candidates: Candidates, gaps: list[str], count: int
) -> tuple[list[ParetoPoint], str | None]:
    """Up to `count` (or more) frontier points by ascending cost, and a message when the sweep
    was cut short or some points are not proven optimal."""
    if gaps:
        return [], "carbon unknown for " + "; ".join(gaps)
    limit = said(candidates.scenario.time_limit_s)
    if spent():
        return [], f"not swept: the plan's time limit of {limit:g} s was spent before it"
    deadline = Deadline(candidates.scenario.time_limit_s).end  # within the plan's clock
    cheapest, cleanest = _ends(candidates)
    if cheapest.totals is None or cleanest.totals is None:
        if time.monotonic() >= deadline:
            return [], f"not swept: no end of it found within the time limit of {limit:g} s"
        return [], "no feasible fleet to sweep"
    priced = _priced(candidates, cheapest=cheapest, cleanest=cleanest, deadline=deadline)
    fleets = [cheapest, cleanest, *priced]
    frontier, unproven = _close_gaps(candidates, fleets, count=count, deadline=deadline)
    message = None
    if len(frontier) < count and time.monotonic() >= deadline:
        message = f"{len(frontier)} points found within the time limit of {limit:g} s"
    if unproven:
        message = (message + "; " if message else "") + f"{unproven} not proven optimal"
    return frontier, message


def _ends(candidates: Candidates) -> tuple[FleetPlan, FleetPlan]:
    """The cheapest fleet and the cleanest fleet under the scenario's limits."""
    limits = scenario_limits(candidates.scenario)
    cheapest = solve_fleet(
        candidates,
        "min cost",
        weights=Weights(usd=1, kg=_NUDGE),
        limits=limits,
        fewest_gpus=False,
    )
    cleanest = solve_fleet(
        candidates,
        "min carbon",
        weights=Weights(usd=_NUDGE, kg=1),
        limits=limits,
        fewest_gpus=False,
    )
    return cheapest, cleanest


def _priced(
    candidates: Candidates, *, cheapest: FleetPlan, cleanest: FleetPlan, deadline: float
) -> list[FleetPlan]:
    """Fleets at carbon prices around the one at which the two ends cost the same."""
    assert cheapest.totals is not None and cleanest.totals is not None
    span_cost = cleanest.totals.hourly_cost_usd - cheapest.totals.hourly_cost_usd
    span_carbon = carbon_kg_per_hour(cheapest) - carbon_kg_per_hour(cleanest)
    if span_carbon <= 1e-9 or span_cost <= 0:
        return []
    slope = span_cost / span_carbon  # $ per kg at which the two ends cost the same
    limits = scenario_limits(candidates.scenario)
    found = []
    for price in slope * np.geomspace(0.02, 50, 16):
        if time.monotonic() >= deadline:
            break
        fleet = solve_fleet(
            candidates,
            "priced",
            weights=Weights(usd=1, kg=float(price)),
            limits=limits,
            fewest_gpus=False,
            time_limit_s=_left(deadline),
        )
        if fleet.totals is not None:
            found.append(fleet)
    return found


def _close_gaps(
    candidates: Candidates, fleets: list[FleetPlan], *, count: int, deadline: float
) -> tuple[list[ParetoPoint], int]:
    """Capped solves in the widest gaps of the frontier until `count` points, no gap left or
    the deadline; the frontier and how many of its solves were not proven optimal."""
    scenario = candidates.scenario
    fleets = list(fleets)
    frontier = non_dominated(fleets)
    unproven = 0
    closed: set[float] = set()  # left ends of gaps known to hold no other frontier point
    step = MIN_GAP * (frontier[0].carbon_kg_per_hour - frontier[-1].carbon_kg_per_hour)
    while len(frontier) < count and time.monotonic() < deadline:
        left = _widest_open_gap(frontier, closed, step)
        if left is None:
            break
        # The cheapest fleet cleaner than `left` by a step is the next point of the frontier.
        carbon_cap_kg_per_hour = left.carbon_kg_per_hour - max(step, left.carbon_kg_per_hour * 1e-6)
        if scenario.carbon_cap_kg_per_hour is not None:
            carbon_cap_kg_per_hour = min(carbon_cap_kg_per_hour, scenario.carbon_cap_kg_per_hour)
        fleet = solve_fleet(
            candidates,
            "capped",
            weights=Weights(usd=1, kg=_NUDGE),
            limits=scenario_limits(scenario, carbon_cap_kg_per_hour=carbon_cap_kg_per_hour),
            fewest_gpus=False,
            time_limit_s=_left(deadline),
        )
        closed.add(left.carbon_kg_per_hour)
        if fleet.totals is None:
            continue
        unproven += fleet.status is not PlanStatus.OPTIMAL
        fleets.append(fleet)
        frontier = non_dominated(fleets)
    return frontier, unproven


def _widest_open_gap(
    frontier: list[ParetoPoint], closed: set[float], step: float
) -> ParetoPoint | None:
    """The left point of the widest carbon gap between neighbours not yet searched and wider
    than two steps (`MIN_GAP`)."""
    open_gaps = [
        (left, right)
        for left, right in itertools.pairwise(frontier)
        if left.carbon_kg_per_hour not in closed
        and left.carbon_kg_per_hour - right.carbon_kg_per_hour
        > max(2 * step, 1e-6 * left.carbon_kg_per_hour)
    ]
    if not open_gaps:
        return None
    left, _right = max(open_gaps, key=lambda g: g[0].carbon_kg_per_hour - g[1].carbon_kg_per_hour)
    return left


def _left(deadline: float) -> float:
    """Seconds left before the deadline, never quite none (the solver needs a positive limit)."""
    return max(deadline - time.monotonic(), 0.01)


def carbon_kg_per_hour(fleet: FleetPlan) -> float:
    assert fleet.totals is not None and fleet.totals.carbon_kgco2e_month is not None
    return fleet.totals.carbon_kgco2e_month / HOURS_PER_MONTH


def non_dominated(fleets: Sequence[FleetPlan]) -> list[ParetoPoint]:
    """Fleets no other fleet beats on both cost and carbon, by ascending cost."""
    points = sorted(
        {
            (round(f.totals.hourly_cost_usd, 9), round(carbon_kg_per_hour(f), 9)): f
            for f in fleets
            if f.totals is not None
        }.items()
    )
    frontier = []
    best_carbon = math.inf
    for (cost, carbon), fleet in points:
        if carbon < best_carbon - 1e-12:
            best_carbon = carbon
            assert fleet.totals is not None
            frontier.append(
                ParetoPoint(
                    hourly_cost_usd=cost,
                    carbon_kg_per_hour=carbon,
                    monthly_cost_usd=cost * HOURS_PER_MONTH,
                    carbon_kgco2e_month=carbon * HOURS_PER_MONTH,
                    gpus=fleet.totals.gpus,
                    proven_optimal=fleet.status is PlanStatus.OPTIMAL,
                )
            )
    return frontier
