"""From a scenario and measured benchmark points to a `Plan`: the recommended fleet, the baselines
and the cost/carbon frontier. This module only orchestrates the steps (see the package docstring
for the model and for which module does what)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.configuration import Capacity
from fleetplan.planner.capacity.intervals import overlap_notes, overlapping
from fleetplan.planner.capacity.measure_hint import measure_notes
from fleetplan.planner.capacity.rules import capacities
from fleetplan.planner.day.plan_day import plan_day, start_day
from fleetplan.planner.peak.baselines import baselines as solve_baselines
from fleetplan.planner.peak.diagnosis import binding_limits, plan_notes, unservable_classes
from fleetplan.planner.peak.economics import GpuFacts, carbon_gaps, pool_economics
from fleetplan.planner.peak.fleets import (
    Candidates,
    fleet_of,
    objective_label,
    objective_weights,
    scenario_limits,
    solve_pools,
)
from fleetplan.planner.peak.frontier import pareto_frontier
from fleetplan.planner.peak.measure_next import measure_next_notes
from fleetplan.planner.peak.program import Weights
from fleetplan.planner.peak.results import CapacityRow, FleetPlan, Plan, PlanStatus
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.planner.solve.kernel import plan_clock


def plan(
    scenario: Scenario,
    points: pd.DataFrame,
    facts: dict[str, GpuFacts] | None = None,
    *,
    baselines: bool = True,
    pareto_points: int = 12,
) -> Plan:
    """Plan a fleet. Bad input raises InputError; an infeasible scenario is a status.

    `points`: benchmark points in the columns of the canonical table; `facts`: reference figures
    per GPU model (power, embodied carbon, lifetime) where the scenario gives none;
    `pareto_points`: how many frontier points to look for (0: no frontier).

    The scenario's `time_limit_s` bounds the plan's solving as a whole, from its first solve
    (`kernel.plan_clock`): the recommended fleet (its peak, with a day's programs solving in
    threads beside it) first; the baselines and the frontier get what is left, and say so where
    nothing was."""
    from fleetplan.planner.availability import (
        plan_available as availability_plan,
    )  # imports this module's helpers

    scenario = scenario.as_planned()  # owned GPUs: the owned part, and what may be bought
    # some availability < 1 or an attainment asked: the peak with spares (a day scenario's day
    # gets its spares hour by hour, planner.day.spares, beside its peak plan)
    if availability_plan.applies(scenario) and not scenario.is_day:
        with plan_clock(scenario.time_limit_s):
            return availability_plan.plan_with_availability(
                scenario, points, facts, baselines=baselines
            )
    facts = facts or {}
    caps = capacities(points, scenario)
    pools = [
        pool_economics(c, scenario, facts, offer)
        for c in caps
        if c.capacity_rps > 0
        for offer in scenario.offers_of(c.configuration.gpu_model)
    ]
    gaps = carbon_gaps(pools, scenario, facts)
    check_carbon_is_known(scenario, gaps)
    candidates = Candidates.of(scenario, pools)
    weights = objective_weights(scenario)
    inputs_notes = unmeasured_offers(caps, scenario) + grid_basis_notes(scenario)
    overlaps = overlapping(caps)  # which capacities' intervals overlap: notes and rows
    inputs_notes += overlap_notes(caps, overlaps) + measure_notes(points, scenario)
    common = _common_fields(scenario, caps, overlaps)
    unservable = unservable_classes(caps, scenario.classes)
    if unservable:
        message = " | ".join(unservable)
        fleet = FleetPlan(name="recommended", status=PlanStatus.INFEASIBLE, message=message)
        return infeasible_plan(fleet, message, inputs_notes, common)
    with plan_clock(scenario.time_limit_s):  # one time limit for every solve from here
        limits = scenario_limits(scenario)
        # version 2: the day's programs solve in threads while its peak is planned here
        day = start_day(scenario, pools, weights=weights) if scenario.is_day else None
        try:
            peak = solve_pools(candidates, weights=weights, limits=limits)
        except BaseException:
            if day is not None:
                day.abandon()
            raise
        fleet = fleet_of(candidates, "recommended", peak)
        if day is not None:  # the day beside its peak
            common["day"] = plan_day(
                scenario, pools, weights=weights, peak=peak, carbon_known=not gaps, started=day
            )
        if fleet.status is PlanStatus.INFEASIBLE:
            message = binding_limits(candidates)
            return infeasible_plan(fleet, message, inputs_notes, common)
        result = Plan(
            status=fleet.status,
            message=fleet.message,
            recommended=fleet,
            notes=inputs_notes
            + plan_notes(fleet, scenario, gaps)
            + measure_next_notes(fleet, pools, scenario),
            **common,
        )
        return _with_comparisons(result, candidates, weights, gaps, baselines, pareto_points)


def _common_fields(
    scenario: Scenario, caps: Sequence[Capacity], overlaps: dict[int, list[int]]
) -> dict:
    """The fields every plan carries, feasible or not: what was asked and the capacities."""
    return {
        "scenario": scenario.name,
        "model": scenario.model,
        "objective": objective_label(scenario),
        "capacity_rule": scenario.capacity_rule,
        "capacity_at": scenario.capacity_at,
        "capacities": capacity_rows(caps, overlaps),
    }


def _with_comparisons(
    result: Plan,
    candidates: Candidates,
    weights: Weights,
    gaps: list[str],
    baselines: bool,
    pareto_points: int,
) -> Plan:
    """The plan with the baselines and the cost/carbon frontier beside it, where asked for."""
    updates: dict[str, object] = {}
    if baselines:
        updates["baselines"] = solve_baselines(candidates, weights)
    if pareto_points:
        frontier, why = pareto_frontier(candidates, gaps, pareto_points)
        updates |= {"pareto": frontier, "pareto_message": why}
    return result.model_copy(update=updates)


def infeasible_plan(fleet: FleetPlan, message: str, notes: list[str], common: dict) -> Plan:
    fleet = fleet.model_copy(update={"message": message})
    return Plan(
        status=PlanStatus.INFEASIBLE, message=message, recommended=fleet, notes=notes, **common
    )


def unmeasured_offers(caps: Sequence[Capacity], scenario: Scenario) -> list[str]:
    """A note for each offered GPU the plan leaves out because the model was never measured on
    it (it cannot be planned without its throughput and latency there)."""
    measured = {c.configuration.gpu_model for c in caps}
    return [
        f"{offer.gpu_model} is offered but has no benchmark results for {scenario.model}, so the "
        "plan leaves it out: measure it (fleetplan collect) or upload its runs to plan it"
        for offer in scenario.gpus
        if offer.gpu_model not in measured
    ]


def grid_basis_notes(scenario: Scenario) -> list[str]:
    """A warning when the sites' grid figures are on different bases (direct figures leave out
    upstream emissions, so they read lower than lifecycle ones for the same grid)."""
    bases = scenario.grid_bases()
    if len(bases) < 2:
        return []
    listed = "; ".join(f"{basis}: {', '.join(sites)}" for basis, sites in sorted(bases.items()))
    return [
        f"grid carbon intensity mixes bases ({listed}): direct figures count combustion only and "
        "read lower than lifecycle ones for the same grid, so carbon between these sites is not "
        "compared like for like; pick regions of one basis, or enter figures of one basis"
    ]


def check_carbon_is_known(scenario: Scenario, gaps: list[str]) -> None:
    """An objective or a cap on carbon needs carbon for every GPU model: ask for what is missing."""
    needs_carbon = scenario.objective != "cost" or scenario.carbon_cap_kg_per_hour is not None
    if needs_carbon and gaps:
        raise InputError(
            f"the objective or carbon cap needs carbon for every GPU model, but it is unknown for "
            f"{'; '.join(gaps)}: give idle_w/rated_w/embodied_kgco2e/lifetime_years for them",
            field="gpus",
        )


def capacity_rows(
    caps: Sequence[Capacity], overlaps: dict[int, list[int]] | None = None
) -> list[CapacityRow]:
    """The plan's table of capacities, one row per (class, configuration); `overlaps`: what
    `intervals.overlapping` finds for `caps`, where already known."""
    overlaps = overlapping(caps) if overlaps is None else overlaps
    names = [c.configuration.name for c in caps]
    described: dict[int, str] = {}  # classes with one targets rest on one level
    for c in caps:
        if c.level is not None and id(c.level) not in described:
            described[id(c.level)] = c.level.describe()
    return [
        CapacityRow(
            traffic_class=c.traffic_class,
            configuration=c.configuration.label,
            server=c.configuration.server,
            capacity_rps_per_server=c.capacity_rps,
            capacity_low_rps_per_server=c.low,
            capacity_high_rps_per_server=c.high,
            overlaps=[names[j] for j in overlaps.get(i, [])],
            level=described[id(c.level)] if c.level is not None else None,
            reason=c.reason,
            behind=bool(c.level and c.level.behind),
            basis=c.basis,
        )
        for i, c in enumerate(caps)
    ]
