"""From a scenario and measured benchmark points to a `Plan`: the recommended fleet, the baselines
and the cost/carbon frontier. This module only orchestrates the steps (see the package docstring
for the model and for which module does what)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from fleetplan.core.errors import InputError
from fleetplan.planner.baselines import baselines as solve_baselines
from fleetplan.planner.capacity import Capacity, capacities
from fleetplan.planner.diagnosis import binding_limits, plan_notes, unservable_classes
from fleetplan.planner.economics import GpuFacts, carbon_gaps, pool_economics
from fleetplan.planner.fleets import (
    Candidates,
    objective_label,
    objective_weights,
    scenario_limits,
    solve_fleet,
)
from fleetplan.planner.frontier import pareto_frontier
from fleetplan.planner.results import CapacityRow, FleetPlan, Plan, PlanStatus
from fleetplan.planner.scenario import Scenario


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
    `pareto_points`: how many frontier points to look for (0: no frontier)."""
    facts = facts or {}
    caps = capacities(points, scenario)
    pools = [pool_economics(c, scenario, facts) for c in caps if c.capacity_rps > 0]
    gaps = carbon_gaps(pools, scenario, facts)
    _check_carbon_is_known(scenario, gaps)
    candidates = Candidates.of(scenario, pools)
    weights = objective_weights(scenario)
    common = {
        "scenario": scenario.name,
        "model": scenario.model,
        "objective": objective_label(scenario),
        "capacity_rule": scenario.capacity_rule,
        "capacities": _capacity_rows(caps),
    }
    unservable = unservable_classes(caps, scenario.classes)
    if unservable:
        message = " | ".join(unservable)
        fleet = FleetPlan(name="recommended", status=PlanStatus.INFEASIBLE, message=message)
        return Plan(status=PlanStatus.INFEASIBLE, message=message, recommended=fleet, **common)
    limits = scenario_limits(scenario)
    fleet = solve_fleet(candidates, "recommended", weights=weights, limits=limits)
    if fleet.status is PlanStatus.INFEASIBLE:
        message = binding_limits(candidates)
        fleet = fleet.model_copy(update={"message": message})
        return Plan(status=PlanStatus.INFEASIBLE, message=message, recommended=fleet, **common)
    result = Plan(
        status=fleet.status,
        message=fleet.message,
        recommended=fleet,
        notes=plan_notes(fleet, scenario, gaps),
        **common,
    )
    updates: dict[str, object] = {}
    if baselines:
        updates["baselines"] = solve_baselines(candidates, weights)
    if pareto_points:
        frontier, why = pareto_frontier(candidates, gaps, pareto_points)
        updates |= {"pareto": frontier, "pareto_message": why}
    return result.model_copy(update=updates)


def _check_carbon_is_known(scenario: Scenario, gaps: list[str]) -> None:
    """An objective or a cap on carbon needs carbon for every GPU model: ask for what is missing."""
    needs_carbon = scenario.objective != "cost" or scenario.carbon_cap_kg_per_hour is not None
    if needs_carbon and gaps:
        raise InputError(
            f"the objective or carbon cap needs carbon for every GPU model, but it is unknown for "
            f"{'; '.join(gaps)}: give idle_w/rated_w/embodied_kgco2e/lifetime_years for them",
            field="gpus",
        )


def _capacity_rows(caps: Sequence[Capacity]) -> list[CapacityRow]:
    return [
        CapacityRow(
            traffic_class=c.traffic_class,
            configuration=c.configuration.label,
            capacity_rps_per_server=c.capacity_rps,
            level=c.level.describe() if c.level else None,
            reason=c.reason,
            behind=bool(c.level and c.level.behind),
            basis=c.basis,
        )
        for c in caps
    ]
