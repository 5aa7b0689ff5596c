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
    """Which limit makes an otherwise servable scenario infeasible, naming the scenario's field:
    each limit the best plan without limits breaks (the cheapest for the GPU limits and the
    budget, the cleanest for the carbon cap), else every limit set (they bind together). A day
    scenario's daily budget and carbon cap bind the peak at a 24th of the day (every hour the
    peak hour), which is said."""
    scenario = candidates.scenario
    cheapest = _free(candidates, Weights(usd=1.0, kg=0.0))
    if cheapest is None:
        return "no plan exists even without limits"
    needed, cost, _ = cheapest
    broken, held = [], []
    for gpu in scenario.gpus:
        if gpu.max_gpus is not None:
            used = needed.get(gpu.offer_name, 0)
            line = f"gpus[].max_gpus of {gpu.offer_name} is {gpu.max_gpus}"
            if used > gpu.max_gpus:
                broken.append(f"{line} (the cheapest plan without limits uses {used})")
            else:
                held.append(line)
        if gpu.min_gpus:
            held.append(f"every one of the {gpu.min_gpus} owned GPUs of {gpu.offer_name} is kept")
    budget = _limit(
        scenario.budget_usd_per_hour, scenario.budget_usd_per_day, "budget_usd", "$", "{}/h"
    )
    if budget is not None:
        line, bound = budget
        if cost > bound * (1 + 1e-9):
            broken.append(f"{line} (the cheapest plan without limits costs ${cost:.2f}/h)")
        else:
            held.append(line)
    cap = _limit(
        scenario.carbon_cap_kg_per_hour,
        scenario.carbon_cap_kg_per_day,
        "carbon_cap_kg",
        "",
        "{} kgCO2e/h",
    )
    if cap is not None:
        line, bound = cap
        cleanest = _free(candidates, Weights(usd=0.0, kg=1.0))
        kg = None if cleanest is None else cleanest[2]
        if kg is not None and kg > bound * (1 + 1e-9):
            broken.append(f"{line} (the cleanest plan without limits emits {kg:.4g} kgCO2e/h)")
        else:
            held.append(line)
    if broken:
        return "the limits cannot all be met: " + "; ".join(broken)
    return "the limits cannot all be met together: " + (
        "; ".join(held) or "see the scenario's limits"
    )


def _free(
    candidates: Candidates, weights: Weights
) -> tuple[dict[str, int], float, float | None] | None:
    """The best plan without limits under `weights`: GPUs per offer, $/h and kgCO2e/h (None
    where a pool's carbon is unknown); None where there is none (or its carbon is unknown for
    the carbon weights)."""
    pools = candidates.pools
    if weights.kg and any(p.kg_per_server_hour is None or p.kg_per_rps_hour is None for p in pools):
        return None
    free = solve(
        pools,
        candidates.demand,
        weights=weights,
        limits=Limits(),
        time_limit_s=candidates.scenario.time_limit_s,
    )
    if not free.has_plan:
        return None
    needed: dict[str, int] = {}
    cost = 0.0
    kg: float | None = 0.0
    for pool, servers, rate in zip(pools, free.servers, free.rates, strict=True):
        if not (servers or rate):
            continue
        needed[pool.offer_name] = needed.get(pool.offer_name, 0) + servers * pool.gpus_per_server
        cost += servers * pool.usd_per_server_hour + rate * pool.usd_per_rps_hour
        if (
            kg is not None
            and pool.kg_per_server_hour is not None
            and pool.kg_per_rps_hour is not None
        ):
            kg += servers * pool.kg_per_server_hour + rate * pool.kg_per_rps_hour
        else:
            kg = None
    return needed, cost, kg


def _limit(
    hourly: float | None, daily: float | None, field: str, sign: str, per_hour: str
) -> tuple[str, float] | None:
    """The limit the peak is planned under (`fleets._per_hour`) and its words, naming the field
    it comes from: `{field}_per_hour`, or `{field}_per_day` where a 24th of it is lower."""
    if hourly is None and daily is None:
        return None
    if daily is not None and (hourly is None or daily / 24 < hourly):
        at_peak = per_hour.format(f"{sign}{daily / 24:.4g}")
        return (
            f"{field}_per_day {per_hour.format(f'{sign}{daily:g}').replace('/h', '/day')}, "
            f"at the peak {at_peak} (a 24th of the day: "
            "every hour planned as the peak hour)",
            daily / 24,
        )
    assert hourly is not None
    return f"{field}_per_hour {per_hour.format(f'{sign}{hourly:g}')}", hourly


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
