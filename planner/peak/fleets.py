"""A named fleet, solved: the scenario's objective and limits in the program's terms, the
candidate pools every fleet of a scenario is chosen from, and the program's answer as a
`FleetPlan`. The recommendation, the baselines and the frontier's points are all solved here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from fleetplan.planner.peak.economics import PoolEconomics
from fleetplan.planner.peak.pools import pool_plan, totals_of
from fleetplan.planner.peak.program import Limits, Solution, Weights, solve
from fleetplan.planner.peak.results import FleetPlan, PlanStatus
from fleetplan.planner.scenario.parts import CarbonPrice
from fleetplan.planner.scenario.scenario import Scenario


@dataclass(frozen=True, slots=True)
class Candidates:
    """What every fleet of one scenario is chosen from: the pools whose configuration meets a
    class's targets, and the rate each class must be served at."""

    scenario: Scenario
    pools: tuple[PoolEconomics, ...]
    demand: dict[str, float]

    @classmethod
    def of(cls, scenario: Scenario, pools: list[PoolEconomics]) -> Candidates:
        demand = {
            c.name: c.rate_rps * f if (f := scenario.burst_factor(c)) != 1.0 else c.rate_rps
            for c in scenario.classes
        }
        return cls(scenario, tuple(pools), demand)

    def only(self, keep: Callable[[PoolEconomics], bool]) -> Candidates:
        """The same scenario with fewer pools (a baseline's rule)."""
        return replace(self, pools=tuple(p for p in self.pools if keep(p)))


def objective_weights(scenario: Scenario) -> Weights:
    if scenario.objective == "cost":
        return Weights(usd=1.0, kg=0.0)
    if scenario.objective == "carbon":
        return Weights(usd=0.0, kg=1.0)
    price = scenario.carbon_price_usd_per_kg
    assert price is not None, "the objective is cost, carbon or a carbon price"
    return Weights(usd=1.0, kg=price)


def objective_label(scenario: Scenario) -> str:
    if isinstance(scenario.objective, CarbonPrice):
        return f"cost with a carbon price of ${scenario.objective.carbon_price_usd_per_t:g}/tCO2e"
    return str(scenario.objective)


def scenario_limits(scenario: Scenario, *, carbon_cap_kg_per_hour: float | None = None) -> Limits:
    """The scenario's GPU, budget and carbon limits; `carbon_cap_kg_per_hour` replaces the
    scenario's."""
    if carbon_cap_kg_per_hour is None:
        carbon_cap_kg_per_hour = _per_hour(
            scenario.carbon_cap_kg_per_hour, scenario.carbon_cap_kg_per_day
        )
    return Limits(
        max_gpus={g.offer_name: g.max_gpus for g in scenario.gpus if g.max_gpus is not None},
        budget_usd_per_hour=_per_hour(scenario.budget_usd_per_hour, scenario.budget_usd_per_day),
        carbon_cap_kg_per_hour=carbon_cap_kg_per_hour,
        min_gpus={g.offer_name: g.min_gpus for g in scenario.gpus if g.min_gpus},
    )


def _per_hour(hourly: float | None, daily: float | None) -> float | None:
    """An hourly limit and a daily one (a day scenario's) as one hourly limit at the peak, where
    every hour is the peak hour: the lower of the hourly and a 24th of the daily."""
    bounds = [b for b in (hourly, None if daily is None else daily / 24) if b is not None]
    return min(bounds) if bounds else None


def solve_fleet(
    candidates: Candidates,
    name: str,
    *,
    weights: Weights,
    limits: Limits,
    fewest_gpus: bool = True,
    time_limit_s: float | None = None,
) -> FleetPlan:
    """The best fleet from `candidates` under `weights` and `limits`, named `name`; no pools and
    no totals when the program finds none (its status and message say why)."""
    solution = solve_pools(
        candidates,
        weights=weights,
        limits=limits,
        fewest_gpus=fewest_gpus,
        time_limit_s=time_limit_s,
    )
    return fleet_of(candidates, name, solution)


def solve_pools(
    candidates: Candidates,
    *,
    weights: Weights,
    limits: Limits,
    fewest_gpus: bool = True,
    time_limit_s: float | None = None,
) -> Solution:
    """The program's answer for `candidates`: servers and rate per candidate pool."""
    return solve(
        candidates.pools,
        candidates.demand,
        weights=weights,
        limits=limits,
        time_limit_s=time_limit_s or candidates.scenario.time_limit_s,
        fewest_gpus=fewest_gpus,
    )


def fleet_of(candidates: Candidates, name: str, solution: Solution) -> FleetPlan:
    """The program's answer as a `FleetPlan` named `name`."""
    pools = candidates.pools
    if not solution.has_plan:
        status = PlanStatus(solution.status)
        return FleetPlan(name=name, status=status, message=solution.message)
    chosen = [
        pool_plan(pool, servers, rate)
        for pool, servers, rate in zip(pools, solution.servers, solution.rates, strict=True)
        if servers > 0 or rate > 1e-9
    ]
    return FleetPlan(
        name=name,
        status=PlanStatus(solution.status),
        message=solution.message,
        pools=chosen,
        totals=totals_of(chosen),
    )
