"""A plan with availability: the steps of `planner.plan` with the program of
`planner.availability.program`, each pool carrying its servers needed and planned, its availability
and the chance it carries its load, each fleet its classes' attainment.

`planner.plan.plan` comes here only when some offer's availability is below 1 or some class
asks for an attainment; otherwise nothing here runs and plans are what they were. The frontier
is not computed for such a plan yet (its message says so).
"""

from __future__ import annotations

import importlib

import pandas as pd

from fleetplan.planner.availability.probability import (
    PoolState,
    carries,
    class_attainment,
    one_host_lost,
    servers_needed,
)
from fleetplan.planner.availability.program import ClassNeed, solve_available
from fleetplan.planner.capacity.rules import capacities
from fleetplan.planner.peak.baselines import baselines as solve_baselines
from fleetplan.planner.peak.diagnosis import plan_notes, unservable_classes
from fleetplan.planner.peak.economics import GpuFacts, carbon_gaps, pool_economics
from fleetplan.planner.peak.fleets import (
    Candidates,
    objective_label,
    objective_weights,
    scenario_limits,
)
from fleetplan.planner.peak.pools import pool_plan, totals_of
from fleetplan.planner.peak.program import Limits, Weights
from fleetplan.planner.peak.results import ClassAttainment, FleetPlan, Plan, PlanStatus, PoolPlan
from fleetplan.planner.scenario.scenario import Scenario


def applies(scenario: Scenario) -> bool:
    """Whether the scenario says anything of availability (else today's path runs)."""
    return any(g.availability < 1 for g in scenario.gpus) or any(
        c.attainment is not None for c in scenario.classes
    )


def plan_with_availability(
    scenario: Scenario,
    points: pd.DataFrame,
    facts: dict[str, GpuFacts] | None = None,
    *,
    baselines: bool = True,
) -> Plan:
    # plan.py's helpers (the module: the package's `plan` attribute is the function); it imports
    # this module lazily, so there is no cycle.
    base = importlib.import_module("fleetplan.planner.plan")

    facts = facts or {}
    caps = capacities(points, scenario)
    pools = [pool_economics(c, scenario, facts) for c in caps if c.capacity_rps > 0]
    gaps = carbon_gaps(pools, scenario, facts)
    base.check_carbon_is_known(scenario, gaps)
    candidates = Candidates.of(scenario, pools)
    weights = objective_weights(scenario)
    notes = base.unmeasured_offers(caps, scenario) + base.grid_basis_notes(scenario)
    common = {
        "scenario": scenario.name,
        "model": scenario.model,
        "objective": objective_label(scenario),
        "capacity_rule": scenario.capacity_rule,
        "capacities": base.capacity_rows(caps),
    }
    unservable = unservable_classes(caps, scenario.classes)
    if unservable:
        message = " | ".join(unservable)
        fleet = FleetPlan(name="recommended", status=PlanStatus.INFEASIBLE, message=message)
        return base.infeasible_plan(fleet, message, notes, common)
    limits = scenario_limits(scenario)
    fleet = solve_available_fleet(candidates, "recommended", weights=weights, limits=limits)
    if fleet.totals is None and fleet.status is not PlanStatus.INFEASIBLE:  # stopped, or error
        return Plan(
            status=fleet.status, message=fleet.message, recommended=fleet, notes=notes, **common
        )
    if fleet.totals is None:
        return base.infeasible_plan(fleet, fleet.message, notes, common)
    result = Plan(
        status=fleet.status,
        message=fleet.message,
        recommended=fleet,
        notes=notes + plan_notes(fleet, scenario, gaps) + availability_notes(fleet),
        pareto_message="not computed for a plan with availability (not yet supported)",
        **common,
    )
    if baselines:
        result = result.model_copy(
            update={"baselines": solve_baselines(candidates, weights, solve=solve_available_fleet)}
        )
    return result


def solve_available_fleet(
    candidates: Candidates, name: str, *, weights: Weights, limits: Limits
) -> FleetPlan:
    """The cheapest fleet from `candidates` whose classes meet their attainment."""
    scenario = candidates.scenario
    pools = candidates.pools
    availability = [scenario.offer(p.gpu_model).availability for p in pools]
    needs = {
        c.name: ClassNeed(c.rate_rps, c.attainment, c.fallback)
        for c in scenario.classes
        if c.name in candidates.demand
    }
    try:
        solution = solve_available(
            pools,
            availability,
            needs,
            weights=weights,
            limits=limits,
            time_limit_s=scenario.time_limit_s,
        )
    except ValueError as error:
        return FleetPlan(name=name, status=PlanStatus.ERROR, message=str(error))
    if not solution.has_plan:
        status = PlanStatus(solution.status)
        return FleetPlan(name=name, status=status, message=solution.message)
    chosen: list[PoolPlan] = []
    for pool, a, servers, rate in zip(
        pools, availability, solution.servers, solution.rates, strict=True
    ):
        if servers <= 0 and rate <= 1e-9:
            continue
        needed = servers_needed(rate, pool.capacity.capacity_rps)
        chosen.append(
            pool_plan(pool, servers, rate).model_copy(
                update={
                    "servers_needed": needed,
                    "availability": a,
                    "probability": carries(servers, a, needed),
                }
            )
        )
    classes = [_attainment(c.name, need, chosen) for c, need in _classes(scenario, needs)]
    return FleetPlan(
        name=name,
        status=PlanStatus(solution.status),
        message=solution.message,
        pools=chosen,
        totals=totals_of(chosen),
        classes=classes,
    )


def _classes(scenario: Scenario, needs: dict[str, ClassNeed]):
    return [(c, needs[c.name]) for c in scenario.classes if c.name in needs]


def _attainment(name: str, need: ClassNeed, pools: list[PoolPlan]) -> ClassAttainment:
    mine = [p for p in pools if p.traffic_class == name]
    states = [
        (PoolState(p.servers, p.availability or 1.0, p.capacity_rps_per_server), p.rate_rps)
        for p in mine
    ]
    return ClassAttainment(
        traffic_class=name,
        rate_rps=need.rate_rps,
        fallback=need.fallback,
        attainment_target=need.attainment,
        attainment=class_attainment(states, need.rate_rps, fallback=need.fallback),
    )


def spare_cost(fleet: FleetPlan) -> float:
    """What the fleet's spare servers (planned beyond needed) cost per hour."""
    total = 0.0
    for pool in fleet.pools:
        if pool.servers_needed is not None and pool.servers > 0:
            spare = pool.servers - pool.servers_needed
            total += spare * pool.hourly_cost_usd / pool.servers
    return total


def availability_notes(fleet: FleetPlan) -> list[str]:
    """A note per pool that loses its targets when one host goes (the risk, in words)."""
    notes = []
    for pool in fleet.pools:
        lost = one_host_lost(pool.servers, pool.rate_rps, pool.capacity_rps_per_server)
        if not lost.carries_load:
            notes.append(
                f"{pool.traffic_class} on {pool.gpus_per_server}x {pool.gpu_model}: with one "
                f"host lost, {lost.sentence()}"
            )
    return notes
