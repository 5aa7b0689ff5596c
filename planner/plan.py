"""From a scenario and measured benchmark points to a recommended fleet, its baselines and the
cost/carbon Pareto frontier. See the package docstring for the model."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from enum import StrEnum

import numpy as np
import pandas as pd
from fleetplan.planner.capacity import Capacity, capacities
from fleetplan.planner.economics import (
    EnergyBasis,
    GpuFacts,
    PoolEconomics,
    carbon_gaps,
    pool_economics,
)
from fleetplan.planner.milp import Limits, SolveStatus, Weights, solve
from fleetplan.planner.scenario import CarbonPrice, Scenario, TrafficClass
from pydantic import BaseModel, ConfigDict, Field, field_serializer

from fleetplan.core.errors import InputError

HOURS_PER_MONTH = 730.0  # 8,760 h / 12
PAPER_TTFT_THRESHOLD_MS = 200.0
H100_MODELS = ("h100-pcie", "h100-sxm", "h100-nvl")


class PlanStatus(StrEnum):
    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"
    INFEASIBLE = "infeasible"
    NOT_APPLICABLE = "not_applicable"  # a baseline the scenario offers no GPUs for
    ERROR = "error"


class _Out(BaseModel):
    model_config = ConfigDict(frozen=True)


class PoolPlan(_Out):
    """Servers of one configuration serving one class."""

    traffic_class: str
    gpu_model: str
    gpus_per_server: int
    servers: int
    gpus: int
    rate_rps: float
    capacity_rps_per_server: float
    utilization: float = Field(description="Carried rate over the servers' measured capacity.")
    hourly_cost_usd: float
    monthly_cost_usd: float
    power_kw: float | None
    energy_kwh_month: float | None
    operational_kgco2e_month: float | None
    embodied_kgco2e_month: float | None
    energy_basis: EnergyBasis
    output_tokens_per_s: float | None
    total_tokens_per_s: float | None
    level_offered_rate_rps: float | None
    level_throughput_rps: float
    level_ttft_p99_ms: float | None
    level_tpot_p99_ms: float | None
    level_source_file: str
    behind: bool = Field(description="The level's server fell behind its offered load.")

    @field_serializer("level_offered_rate_rps", when_used="json")
    def _inf(self, value: float | None) -> float | str | None:
        return "inf" if value is not None and math.isinf(value) else value


class Totals(_Out):
    hourly_cost_usd: float
    monthly_cost_usd: float
    servers: int
    gpus: dict[str, int]
    power_kw: float | None
    energy_kwh_month: float | None
    operational_kgco2e_month: float | None
    embodied_kgco2e_month: float | None
    carbon_kgco2e_month: float | None
    output_tokens_per_s: float | None
    total_tokens_per_s: float | None
    usd_per_million_output_tokens: float | None
    usd_per_million_total_tokens: float | None
    gco2e_per_million_output_tokens: float | None
    gco2e_per_million_total_tokens: float | None
    kwh_per_million_output_tokens: float | None
    kwh_per_million_total_tokens: float | None


class FleetPlan(_Out):
    name: str
    status: PlanStatus
    message: str
    pools: list[PoolPlan] = Field(default_factory=list)
    totals: Totals | None = None


class ParetoPoint(_Out):
    hourly_cost_usd: float
    carbon_kg_per_hour: float
    monthly_cost_usd: float
    carbon_kgco2e_month: float
    gpus: dict[str, int]
    proven_optimal: bool = True


class CapacityRow(_Out):
    """Why a class can or cannot run on a configuration."""

    traffic_class: str
    configuration: str
    capacity_rps_per_server: float
    level: str | None
    reason: str | None
    behind: bool


class Plan(_Out):
    scenario: str
    model: str
    objective: str
    status: PlanStatus
    message: str
    recommended: FleetPlan
    baselines: list[FleetPlan] = Field(default_factory=list)
    pareto: list[ParetoPoint] = Field(default_factory=list)
    pareto_message: str | None = None
    capacities: list[CapacityRow] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def _objective_weights(scenario: Scenario) -> Weights:
    if scenario.objective == "cost":
        return Weights(usd=1.0, kg=0.0)
    if scenario.objective == "carbon":
        return Weights(usd=0.0, kg=1.0)
    assert isinstance(scenario.objective, CarbonPrice)
    return Weights(usd=1.0, kg=scenario.objective.carbon_price_usd_per_t / 1000.0)


def _objective_label(scenario: Scenario) -> str:
    if isinstance(scenario.objective, CarbonPrice):
        return f"cost with a carbon price of ${scenario.objective.carbon_price_usd_per_t:g}/tCO2e"
    return str(scenario.objective)


def _limits(scenario: Scenario, *, carbon_cap: float | None = None) -> Limits:
    return Limits(
        max_gpus={g.gpu_model: g.max_gpus for g in scenario.gpus if g.max_gpus is not None},
        budget_usd_per_hour=scenario.budget_usd_per_hour,
        carbon_kg_per_hour=carbon_cap
        if carbon_cap is not None
        else scenario.carbon_cap_kg_per_hour,
    )


def _pool_plan(pool: PoolEconomics, servers: int, rate: float) -> PoolPlan:
    level = pool.capacity.level
    assert level is not None
    cost = servers * pool.usd_per_server_hour + rate * pool.usd_per_rps_hour
    power = (
        servers * pool.kw_per_server + rate * pool.kw_per_rps
        if pool.kw_per_server is not None and pool.kw_per_rps is not None
        else None
    )
    embodied = (
        servers * pool.embodied_kg_per_server_hour
        if pool.embodied_kg_per_server_hour is not None
        else None
    )
    total_kg = (
        servers * pool.kg_per_server_hour + rate * pool.kg_per_rps_hour
        if pool.kg_per_server_hour is not None and pool.kg_per_rps_hour is not None
        else None
    )
    operational = total_kg - embodied if total_kg is not None and embodied is not None else None
    out_tokens = level.output_tokens_mean
    in_tokens = level.input_tokens_mean
    measured_capacity = servers * level.request_throughput_rps
    return PoolPlan(
        traffic_class=pool.capacity.traffic_class,
        gpu_model=pool.gpu_model,
        gpus_per_server=pool.gpus_per_server,
        servers=servers,
        gpus=servers * pool.gpus_per_server,
        rate_rps=rate,
        capacity_rps_per_server=pool.capacity.capacity_rps,
        utilization=rate / measured_capacity if measured_capacity else 0.0,
        hourly_cost_usd=cost,
        monthly_cost_usd=cost * HOURS_PER_MONTH,
        power_kw=power,
        energy_kwh_month=power * HOURS_PER_MONTH if power is not None else None,
        operational_kgco2e_month=operational * HOURS_PER_MONTH if operational is not None else None,
        embodied_kgco2e_month=embodied * HOURS_PER_MONTH if embodied is not None else None,
        energy_basis=pool.energy_basis,
        output_tokens_per_s=rate * out_tokens if out_tokens is not None else None,
        total_tokens_per_s=(
            rate * (out_tokens + in_tokens)
            if out_tokens is not None and in_tokens is not None
            else None
        ),
        level_offered_rate_rps=level.offered_rate_rps,
        level_throughput_rps=level.request_throughput_rps,
        level_ttft_p99_ms=level.ttft_p99_ms,
        level_tpot_p99_ms=level.tpot_p99_ms,
        level_source_file=level.source_file,
        behind=level.behind,
    )


def _sum(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(sum(known)) if len(known) == len(values) else None


def _per_million(per_hour: float | None, tokens_per_s: float | None) -> float | None:
    """A quantity per hour, per million tokens served in that hour."""
    if per_hour is None or not tokens_per_s:
        return None
    return per_hour / (tokens_per_s * 3600) * 1e6


def totals_of(pools: Sequence[PoolPlan]) -> Totals:
    hourly = float(sum(p.hourly_cost_usd for p in pools))
    power = _sum([p.power_kw for p in pools])
    operational = _sum([p.operational_kgco2e_month for p in pools])
    embodied = _sum([p.embodied_kgco2e_month for p in pools])
    carbon = operational + embodied if operational is not None and embodied is not None else None
    out_tps = _sum([p.output_tokens_per_s for p in pools])
    total_tps = _sum([p.total_tokens_per_s for p in pools])
    carbon_g_hour = carbon / HOURS_PER_MONTH * 1000 if carbon is not None else None
    gpus: dict[str, int] = {}
    for pool in pools:
        gpus[pool.gpu_model] = gpus.get(pool.gpu_model, 0) + pool.gpus
    return Totals(
        hourly_cost_usd=hourly,
        monthly_cost_usd=hourly * HOURS_PER_MONTH,
        servers=sum(p.servers for p in pools),
        gpus=dict(sorted(gpus.items())),
        power_kw=power,
        energy_kwh_month=power * HOURS_PER_MONTH if power is not None else None,
        operational_kgco2e_month=operational,
        embodied_kgco2e_month=embodied,
        carbon_kgco2e_month=carbon,
        output_tokens_per_s=out_tps,
        total_tokens_per_s=total_tps,
        usd_per_million_output_tokens=_per_million(hourly, out_tps),
        usd_per_million_total_tokens=_per_million(hourly, total_tps),
        gco2e_per_million_output_tokens=_per_million(carbon_g_hour, out_tps),
        gco2e_per_million_total_tokens=_per_million(carbon_g_hour, total_tps),
        kwh_per_million_output_tokens=_per_million(power, out_tps),
        kwh_per_million_total_tokens=_per_million(power, total_tps),
    )


_STATUS = {
    SolveStatus.OPTIMAL: PlanStatus.OPTIMAL,
    SolveStatus.TIME_LIMIT: PlanStatus.TIME_LIMIT,
    SolveStatus.INFEASIBLE: PlanStatus.INFEASIBLE,
}


def _fleet(
    name: str,
    pools: Sequence[PoolEconomics],
    demand: dict[str, float],
    scenario: Scenario,
    weights: Weights,
    limits: Limits,
    *,
    fewest_gpus: bool = True,
    time_limit_s: float | None = None,
) -> FleetPlan:
    solution = solve(
        pools,
        demand,
        weights=weights,
        limits=limits,
        time_limit_s=time_limit_s or scenario.time_limit_s,
        fewest_gpus=fewest_gpus,
    )
    if not solution.has_plan:
        status = _STATUS.get(solution.status, PlanStatus.ERROR)
        return FleetPlan(name=name, status=status, message=solution.message)
    chosen = [
        _pool_plan(pool, servers, rate)
        for pool, servers, rate in zip(pools, solution.servers, solution.rates, strict=True)
        if servers > 0 or rate > 1e-9
    ]
    status = _STATUS[solution.status]
    return FleetPlan(name=name, status=status, message=solution.message, pools=chosen,
                     totals=totals_of(chosen))  # fmt: skip


def _diagnose_classes(caps: Sequence[Capacity], classes: Sequence[TrafficClass]) -> list[str]:
    """For each class no configuration can serve: which target fails where, and the best reached."""
    reasons = []
    for traffic in classes:
        mine = [c for c in caps if c.traffic_class == traffic.name]
        if any(c.capacity_rps > 0 for c in mine):
            continue
        if not mine:
            reasons.append(f"class {traffic.name!r}: no offered GPU configuration has measurements")
            continue
        per_config = "; ".join(f"{c.configuration.label}: {c.reason}" for c in mine)
        ttfts = [(c.best_ttft_p99_ms, c.configuration.label) for c in mine if c.best_ttft_p99_ms]
        best = ""
        if ttfts:
            value, where = min(ttfts)
            best = f". Best P99 TTFT of any configuration: {value:.1f} ms ({where})"
        reasons.append(
            f"class {traffic.name!r} cannot meet its targets anywhere ({per_config}){best}"
        )
    return reasons


def _diagnose_limits(
    pools: Sequence[PoolEconomics], demand: dict[str, float], scenario: Scenario, weights: Weights
) -> str:
    """Which limit makes an otherwise servable scenario infeasible."""
    free = solve(
        pools, demand, weights=Weights(), limits=Limits(), time_limit_s=scenario.time_limit_s
    )
    if not free.has_plan:
        return "no plan exists even without limits"
    needed: dict[str, int] = {}
    cost = 0.0
    for pool, servers, rate in zip(pools, free.servers, free.rates, strict=True):
        needed[pool.gpu_model] = needed.get(pool.gpu_model, 0) + servers * pool.gpus_per_server
        cost += servers * pool.usd_per_server_hour + rate * pool.usd_per_rps_hour
    parts = []
    for gpu in scenario.gpus:
        if gpu.max_gpus is not None and needed.get(gpu.gpu_model, 0) > gpu.max_gpus:
            parts.append(f"max_gpus of {gpu.gpu_model} is {gpu.max_gpus}")
    if scenario.budget_usd_per_hour is not None:
        parts.append(
            f"budget ${scenario.budget_usd_per_hour:g}/h (the cheapest plan without limits costs "
            f"${cost:.2f}/h)"
        )
    if scenario.carbon_cap_kg_per_hour is not None:
        parts.append(f"carbon cap {scenario.carbon_cap_kg_per_hour:g} kgCO2e/h")
    return "the limits cannot all be met: " + ("; ".join(parts) or "see the scenario's limits")


def _needs_carbon(scenario: Scenario) -> bool:
    return scenario.objective != "cost" or scenario.carbon_cap_kg_per_hour is not None


def plan(
    scenario: Scenario,
    points: pd.DataFrame,
    facts: dict[str, GpuFacts] | None = None,
    *,
    baselines: bool = True,
    pareto_points: int = 12,
) -> Plan:
    """Plan a fleet. Bad input raises InputError; an infeasible scenario is a status."""
    facts = facts or {}
    caps = capacities(points, scenario)
    pools = [pool_economics(c, scenario, facts) for c in caps if c.capacity_rps > 0]
    gaps = carbon_gaps(pools, scenario, facts)
    if _needs_carbon(scenario) and gaps:
        raise InputError(
            f"the objective or carbon cap needs carbon for every GPU model, but it is unknown for "
            f"{'; '.join(gaps)}: give idle_w/rated_w/embodied_kgco2e/lifetime_years for them",
            field="gpus",
        )
    demand = {c.name: c.rate_rps for c in scenario.classes}
    weights = _objective_weights(scenario)
    capacity_rows = [
        CapacityRow(
            traffic_class=c.traffic_class, configuration=c.configuration.label,
            capacity_rps_per_server=c.capacity_rps,
            level=c.level.describe() if c.level else None, reason=c.reason,
            behind=bool(c.level and c.level.behind),
        )
        for c in caps
    ]  # fmt: skip
    common = {"scenario": scenario.name, "model": scenario.model,
              "objective": _objective_label(scenario), "capacities": capacity_rows}  # fmt: skip
    unservable = _diagnose_classes(caps, scenario.classes)
    if unservable:
        message = " | ".join(unservable)
        fleet = FleetPlan(name="recommended", status=PlanStatus.INFEASIBLE, message=message)
        return Plan(status=PlanStatus.INFEASIBLE, message=message, recommended=fleet, **common)
    fleet = _fleet("recommended", pools, demand, scenario, weights, _limits(scenario))
    if fleet.status is PlanStatus.INFEASIBLE:
        message = _diagnose_limits(pools, demand, scenario, weights)
        fleet = fleet.model_copy(update={"message": message})
        return Plan(status=PlanStatus.INFEASIBLE, message=message, recommended=fleet, **common)
    notes = _notes(fleet, scenario, gaps)
    result = Plan(status=fleet.status, message=fleet.message, recommended=fleet, notes=notes,
                  **common)  # fmt: skip
    updates: dict[str, object] = {}
    if baselines:
        updates["baselines"] = _baselines(pools, demand, scenario, weights)
    if pareto_points:
        frontier, why = _pareto(pools, demand, scenario, gaps, pareto_points)
        updates |= {"pareto": frontier, "pareto_message": why}
    return result.model_copy(update=updates)


def _notes(fleet: FleetPlan, scenario: Scenario, gaps: list[str]) -> list[str]:
    notes = []
    for pool in fleet.pools:
        if pool.behind:
            offered = (
                "all requests at once"
                if pool.level_offered_rate_rps is None or math.isinf(pool.level_offered_rate_rps)
                else f"{pool.level_offered_rate_rps:g} req/s offered"
            )
            notes.append(
                f"{pool.traffic_class} on {pool.gpus_per_server}x {pool.gpu_model}: its capacity "
                f"comes from a level where the server fell behind ({offered}, "
                f"{pool.level_throughput_rps:.2f} req/s achieved); steady traffic at that rate "
                "may queue"
            )
    if gaps:
        notes.append("carbon unknown for " + "; ".join(gaps))
    if any(g.include_embodied for g in scenario.gpus):
        notes.append("embodied carbon is amortised over the lifetime by calendar hours")
    return notes


def _restricted(
    pools: Sequence[PoolEconomics], keep: Callable[[PoolEconomics], bool]
) -> list[PoolEconomics]:
    return [p for p in pools if keep(p)]


def _baselines(
    pools: Sequence[PoolEconomics], demand: dict[str, float], scenario: Scenario, weights: Weights
) -> list[FleetPlan]:
    offered = {g.gpu_model for g in scenario.gpus}
    realtime = {
        c.name
        for c in scenario.classes
        if c.ttft_p99_ms is not None and c.ttft_p99_ms < PAPER_TTFT_THRESHOLD_MS
    }
    rules = {
        "all-H100": (lambda p: p.gpu_model in H100_MODELS, bool(offered & set(H100_MODELS))),
        "all-RTX-4090": (lambda p: p.gpu_model == "rtx-4090", "rtx-4090" in offered),
        "paper rule (TTFT < 200 ms to H100, rest to 4x RTX 4090)": (
            lambda p: (
                p.gpu_model in H100_MODELS
                if p.capacity.traffic_class in realtime
                else p.gpu_model == "rtx-4090" and p.gpus_per_server == 4
            ),
            "rtx-4090" in offered and bool(offered & set(H100_MODELS)),
        ),
    }
    out = []
    for name, (keep, applicable) in rules.items():
        if not applicable:
            out.append(FleetPlan(name=name, status=PlanStatus.NOT_APPLICABLE,
                                 message="the scenario offers none of these GPUs"))  # fmt: skip
            continue
        subset = _restricted(pools, keep)
        out.append(_fleet(name, subset, demand, scenario, weights, _limits(scenario)))
    return out


def _carbon_kg_h(fleet: FleetPlan) -> float:
    assert fleet.totals is not None and fleet.totals.carbon_kgco2e_month is not None
    return fleet.totals.carbon_kgco2e_month / HOURS_PER_MONTH


def _pareto(
    pools: Sequence[PoolEconomics],
    demand: dict[str, float],
    scenario: Scenario,
    gaps: list[str],
    count: int,
) -> tuple[list[ParetoPoint], str | None]:
    """The cost/carbon frontier, within the scenario's time limit.

    1. The two ends: the cheapest fleet and the cleanest fleet.
    2. Carbon prices between them (minimise cost + price x carbon): each price gives a
       Pareto-optimal fleet, and classes stay separable, so these solves are fast.
    3. Epsilon-constraint: the cheapest fleet under a carbon cap halfway across the widest gaps
       left, until `count` points or the time runs out; these find the points no price reaches.
    """
    if gaps:
        return [], "carbon unknown for " + "; ".join(gaps)
    deadline = time.monotonic() + scenario.time_limit_s
    nudge = 1e-6
    limits = _limits(scenario)
    cheapest = _fleet("min cost", pools, demand, scenario, Weights(usd=1, kg=nudge), limits,
                      fewest_gpus=False)  # fmt: skip
    cleanest = _fleet("min carbon", pools, demand, scenario, Weights(usd=nudge, kg=1), limits,
                      fewest_gpus=False)  # fmt: skip
    if cheapest.totals is None or cleanest.totals is None:
        return [], "no feasible fleet to sweep"
    fleets = [cheapest, cleanest]
    span_cost = cleanest.totals.hourly_cost_usd - cheapest.totals.hourly_cost_usd
    span_carbon = _carbon_kg_h(cheapest) - _carbon_kg_h(cleanest)
    if span_carbon > 1e-9 and span_cost > 0:
        slope = span_cost / span_carbon  # $ per kg at which the two ends cost the same
        for price in slope * np.geomspace(0.02, 50, 16):
            if time.monotonic() >= deadline:
                break
            fleet = _fleet("priced", pools, demand, scenario, Weights(usd=1, kg=float(price)),
                           limits, fewest_gpus=False,
                           time_limit_s=max(deadline - time.monotonic(), 0.01))  # fmt: skip
            if fleet.totals is not None:
                fleets.append(fleet)
    unproven = 0
    frontier = _non_dominated(fleets)
    closed: set[float] = set()  # left ends of gaps known to hold no other frontier point
    while len(frontier) < count and time.monotonic() < deadline:
        open_gaps = [
            (left, right)
            for left, right in itertools.pairwise(frontier)
            if left.carbon_kg_per_hour not in closed
            and left.carbon_kg_per_hour - right.carbon_kg_per_hour > 1e-6 * left.carbon_kg_per_hour
        ]
        if not open_gaps:
            break
        left, _right = max(
            open_gaps, key=lambda g: g[0].carbon_kg_per_hour - g[1].carbon_kg_per_hour
        )
        # The cheapest fleet a little cleaner than `left` is the next point of the frontier.
        cap = left.carbon_kg_per_hour * (1 - 1e-6)
        if scenario.carbon_cap_kg_per_hour is not None:
            cap = min(cap, scenario.carbon_cap_kg_per_hour)
        fleet = _fleet("capped", pools, demand, scenario, Weights(usd=1, kg=nudge),
                       _limits(scenario, carbon_cap=cap), fewest_gpus=False,
                       time_limit_s=max(deadline - time.monotonic(), 0.01))  # fmt: skip
        closed.add(left.carbon_kg_per_hour)
        if fleet.totals is None:
            continue
        unproven += fleet.status is not PlanStatus.OPTIMAL
        fleets.append(fleet)
        frontier = _non_dominated(fleets)
    message = None
    if len(frontier) < count and time.monotonic() >= deadline:
        message = (
            f"{len(frontier)} points found within the time limit of {scenario.time_limit_s:g} s"
        )
    if unproven:
        message = (message + "; " if message else "") + f"{unproven} not proven optimal"
    return frontier, message


def _non_dominated(fleets: Sequence[FleetPlan]) -> list[ParetoPoint]:
    """Fleets no other fleet beats on both cost and carbon, by ascending cost."""
    points = sorted(
        {
            (round(f.totals.hourly_cost_usd, 9), round(_carbon_kg_h(f), 9)): f
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
