"""A plan with availability, in words: per pool the servers needed and planned, the chance it
carries its load and what one host lost does; per class its attainment against the target; and
what the redundancy costs beside the all-datacenter (all-H100) fleet."""

from __future__ import annotations

from fleetplan.planner.availability.plan_available import spare_cost
from fleetplan.planner.availability.probability import one_host_lost
from fleetplan.planner.peak.results import FleetPlan, Plan, PoolPlan

DATACENTER_BASELINE = "all-H100"


def has_availability(plan: Plan) -> bool:
    return plan.recommended.classes is not None


def pool_sentence(pool: PoolPlan) -> str:
    lost = one_host_lost(pool.servers, pool.rate_rps, pool.capacity_rps_per_server)
    availability = "unknown" if pool.availability is None else f"{pool.availability:g}"
    probability = "unknown" if pool.probability is None else f"{pool.probability:.6f}"
    return (
        f"{pool.servers_needed} needed, {pool.servers} planned (hosts up {availability}); "
        f"carries its load with probability {probability}; one host lost: {lost.sentence()}"
    )


def redundancy_sentence(plan: Plan) -> str | None:
    """What the spare servers cost, and the fleet beside the all-datacenter one."""
    fleet = plan.recommended
    if fleet.totals is None:
        return None
    spare = spare_cost(fleet)
    total = fleet.totals.hourly_cost_usd
    text = f"spare servers cost ${spare:,.2f}/h of the fleet's ${total:,.2f}/h"
    datacenter = _baseline(plan, DATACENTER_BASELINE)
    if datacenter is not None and datacenter.totals is not None:
        other = datacenter.totals.hourly_cost_usd
        theirs = spare_cost(datacenter)
        if abs(other - total) < 0.005:
            verdict = "costs the same"
        else:
            word = "saves" if other > total else "costs"
            verdict = f"{word} ${abs(other - total):,.2f}/h"
        text += (
            f"; the all-H100 fleet at the same attainment costs ${other:,.2f}/h (its spares "
            f"${theirs:,.2f}/h), so this fleet with its redundancy {verdict}"
        )
        if verdict != "costs the same" and word == "costs":
            text += " more"
    return text


def _baseline(plan: Plan, name: str) -> FleetPlan | None:
    return next((b for b in plan.baselines if b.name == name), None)


def availability_lines(plan: Plan) -> list[str]:
    """The availability part of `fleetplan plan`'s text (empty without availability)."""
    fleet = plan.recommended
    if not has_availability(plan) or fleet.totals is None:
        return []
    lines = ["", "Availability (servers failing independently):"]
    for pool in fleet.pools:
        lines.append(
            f"  {pool.traffic_class:<16} {pool.gpus_per_server}x {pool.gpu_model:<10} "
            f"{pool_sentence(pool)}"
        )
    for c in fleet.classes or []:
        target = "none asked" if c.attainment_target is None else f"{c.attainment_target:g}"
        how = "pools together (fallback)" if c.fallback else "each pool its share"
        lines.append(
            f"  class {c.traffic_class}: attainment {c.attainment:.6f} (target {target}; {how})"
        )
    redundancy = redundancy_sentence(plan)
    if redundancy:
        lines.append(f"  Redundancy: {redundancy}")
    return lines
