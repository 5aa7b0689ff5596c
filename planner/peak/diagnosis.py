"""Why a plan is what it is, in words a user can act on: the classes no configuration can serve
(which target fails where, and the best reached), the limits that make a servable scenario
infeasible, and the notes a plan carries (levels where the server fell behind, unknown carbon)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from fleetplan.planner.capacity.configuration import MEASURED_RULE, Capacity
from fleetplan.planner.peak.fleets import Candidates
from fleetplan.planner.peak.program import Limits, Weights, solve
from fleetplan.planner.peak.results import FleetPlan
from fleetplan.planner.scenario.scenario import Scenario, TrafficClass


def unservable_classes(caps: Sequence[Capacity], classes: Sequence[TrafficClass]) -> list[str]:
    """For each class no configuration can serve: which target fails where, and the best reached."""
    reasons = []
    by_class: dict[str, list[Capacity]] = {}  # in one pass: a scan per class was quadratic
    for c in caps:
        by_class.setdefault(c.traffic_class, []).append(c)
    for traffic in classes:
        mine = by_class.get(traffic.name, [])
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


def binding_limits(candidates: Candidates) -> str:
    """Which limit makes an otherwise servable scenario infeasible."""
    scenario = candidates.scenario
    pools = candidates.pools
    free = solve(
        pools,
        candidates.demand,
        weights=Weights(),
        limits=Limits(),
        time_limit_s=scenario.time_limit_s,
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
        if gpu.min_gpus:
            parts.append(f"every one of the {gpu.min_gpus} owned GPUs of {gpu.offer_name} is kept")
    if scenario.budget_usd_per_hour is not None:
        parts.append(
            f"budget ${scenario.budget_usd_per_hour:g}/h (the cheapest plan without limits costs "
            f"${cost:.2f}/h)"
        )
    if scenario.carbon_cap_kg_per_hour is not None:
        parts.append(f"carbon cap {scenario.carbon_cap_kg_per_hour:g} kgCO2e/h")
    return "the limits cannot all be met: " + ("; ".join(parts) or "see the scenario's limits")


def plan_notes(fleet: FleetPlan, scenario: Scenario, gaps: list[str]) -> list[str]:
    """What a reader of the recommended fleet should know about the figures it rests on."""
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
        if pool.capacity_basis.startswith(f"{MEASURED_RULE}:"):
            why = pool.capacity_basis.removeprefix(f"{MEASURED_RULE}:").strip()
            notes.append(
                f"{pool.traffic_class} on {pool.gpus_per_server}x {pool.gpu_model}: its capacity "
                f"is today's measured rule, not the latency model, because {why}"
            )
    served = {pool.traffic_class for pool in fleet.pools if pool.servers}
    for traffic in scenario.classes:
        if traffic.rate_rps > 0 and traffic.name not in served:
            notes.append(
                f"{traffic.name}: {traffic.rate_rps:g} req/s rounds to no server at all, so the "
                "plan gives it none (its requests are not served): check its rate"
            )
    if gaps:
        notes.append("carbon unknown for " + "; ".join(gaps))
    if any(g.include_embodied for g in scenario.gpus):
        notes.append("embodied carbon is amortised over the lifetime by calendar hours")
    return notes
