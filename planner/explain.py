"""Why the plan looks the way it does, in plain language: for each class, where it runs and what
the alternatives would have cost; which limits bind."""

from __future__ import annotations

from fleetplan.planner.results import Plan
from fleetplan.planner.scenario import Scenario


def explain(plan: Plan, scenario: Scenario) -> list[str]:
    if plan.recommended.totals is None:
        return [plan.message]
    lines = []
    price = {g.gpu_model: g.usd_per_gpu_hour() for g in scenario.gpus}
    for traffic in scenario.classes:
        pools = [p for p in plan.recommended.pools if p.traffic_class == traffic.name]
        targets = []
        if traffic.ttft_p99_ms is not None:
            targets.append(f"P99 TTFT <= {traffic.ttft_p99_ms:g} ms")
        if traffic.tpot_p99_ms is not None:
            targets.append(f"P99 TPOT <= {traffic.tpot_p99_ms:g} ms")
        where = " and ".join(
            f"{p.servers} x {p.gpus_per_server}x {p.gpu_model} ({p.rate_rps:.1f} req/s, "
            f"{p.utilization:.0%} of its capacity, {p.capacity_basis})"
            for p in pools
        )
        options, excluded = [], []
        for row in plan.capacities:
            if row.traffic_class != traffic.name:
                continue
            gpus, gpu_model = row.configuration.split("x ", 1)
            if row.capacity_rps_per_server > 0:
                per_rps = int(gpus) * price[gpu_model] / row.capacity_rps_per_server
                options.append((per_rps, row.configuration))
            else:
                excluded.append(f"{row.configuration} ({row.reason})")
        options.sort()
        ranking = ", ".join(f"{label} ${cost:.3f}" for cost, label in options[:4])
        line = (
            f"{traffic.name} ({traffic.rate_rps:g} req/s"
            + (f"; {', '.join(targets)}" if targets else "; no latency target")
            + f") runs on {where}."
        )
        if ranking:
            line += f" GPU cost per req/s-hour where its targets hold: {ranking}."
        if excluded:
            line += f" Excluded: {'; '.join(excluded)}."
        lines.append(line)
    used = plan.recommended.totals.gpus
    for offer in scenario.gpus:
        if offer.max_gpus is not None and used.get(offer.gpu_model, 0) >= offer.max_gpus:
            limit = f"{offer.max_gpus} {offer.gpu_model} GPUs"
            lines.append(f"The limit of {limit} binds: the plan uses all of them.")
    totals = plan.recommended.totals
    if scenario.budget_usd_per_hour is not None:
        lines.append(
            f"Budget: ${totals.hourly_cost_usd:.2f}/h used of ${scenario.budget_usd_per_hour:g}/h."
        )
    return lines
