"""A plan for people: one table row per pool (the CSV export) and a readable summary."""

from __future__ import annotations

import pandas as pd

from fleetplan.planner.results import FleetPlan, Plan, PlanStatus, PoolPlan

# The CSV's columns, in order: where the pool is, what it carries, what it costs and emits, the
# measured level its capacity rests on, and the basis of that capacity with the P99s the
# configuration's curve predicts at the pool's load per server.
POOL_COLUMNS: tuple[str, ...] = (
    "scenario",
    "fleet",
    "class",
    "gpu_model",
    "gpus_per_server",
    "servers",
    "gpus",
    "rate_rps",
    "capacity_rps_per_server",
    "utilization",
    "hourly_cost_usd",
    "monthly_cost_usd",
    "power_kw",
    "energy_kwh_month",
    "operational_kgco2e_month",
    "embodied_kgco2e_month",
    "energy_basis",
    "output_tokens_per_s",
    "total_tokens_per_s",
    "level_offered_rate_rps",
    "level_throughput_rps",
    "level_ttft_p99_ms",
    "level_tpot_p99_ms",
    "level_behind",
    "level_source_file",
    "capacity_basis",
    "predicted_ttft_p99_ms",
    "predicted_tpot_p99_ms",
)


def pool_table(plan: Plan, *, include_baselines: bool = True) -> pd.DataFrame:
    """One row per pool of the recommended fleet (and of each baseline, marked in `fleet`)."""
    fleets: list[FleetPlan] = [plan.recommended]
    if include_baselines:
        fleets += plan.baselines
    rows = []
    for fleet in fleets:
        for pool in fleet.pools:
            row = pool.model_dump()
            rows.append(
                {
                    "scenario": plan.scenario,
                    "fleet": fleet.name,
                    "class": row.pop("traffic_class"),
                    "level_behind": row.pop("behind"),
                    **row,
                    "energy_basis": pool.energy_basis.value,
                }
            )
    return pd.DataFrame(rows, columns=list(POOL_COLUMNS))


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.2f}"


def _number(value: float | None, unit: str, digits: int = 1) -> str:
    return "unknown" if value is None else f"{value:,.{digits}f} {unit}"


def _ms(value: float | None) -> str:
    return "not predicted" if value is None else f"{value:,.1f} ms"


def _capacity_line(pool: PoolPlan) -> str:
    """A pool's capacity, its basis, and the P99s predicted at its load per server."""
    load = f"P99 at {pool.rate_per_server_rps:.2f} req/s per server: "
    if pool.predicted_ttft_p99_ms is None and pool.predicted_tpot_p99_ms is None:
        load += "not predicted (no curve, or above the highest level the server kept up with)"
    else:
        load += f"TTFT {_ms(pool.predicted_ttft_p99_ms)}, TPOT {_ms(pool.predicted_tpot_p99_ms)}"
    capacity = f"capacity {pool.capacity_rps_per_server:.2f} req/s per server"
    return f"{capacity} ({pool.capacity_basis}); {load}"


def summary(plan: Plan) -> str:
    """The plan as text for a terminal."""
    lines = [
        f"Scenario: {plan.scenario}   model: {plan.model}   objective: {plan.objective}   "
        f"capacity rule: {plan.capacity_rule}",
        f"Status: {plan.status.value}"
        + ("" if plan.message == "optimal" else f" ({plan.message})"),
    ]
    fleet = plan.recommended
    if fleet.totals is not None:
        lines += ["", "Recommended fleet:"]
        for pool in fleet.pools:
            lines.append(
                f"  {pool.traffic_class:<16} {pool.servers:>4} x {pool.gpus_per_server}x "
                f"{pool.gpu_model:<10} {pool.rate_rps:8.2f} req/s  util {pool.utilization:5.0%}  "
                f"{_money(pool.hourly_cost_usd)}/h  energy {pool.energy_basis.value}"
            )
            lines.append(f"      {_capacity_line(pool)}")
        t = fleet.totals
        gpus = ", ".join(f"{n} x {g}" for g, n in t.gpus.items())
        lines += [
            f"  GPUs: {gpus}",
            f"  Cost: {_money(t.hourly_cost_usd)}/h, {_money(t.monthly_cost_usd)}/month; "
            f"{_money(t.usd_per_million_output_tokens)} per million output tokens, "
            f"{_money(t.usd_per_million_total_tokens)} per million total tokens",
            f"  Energy: {_number(t.energy_kwh_month, 'kWh/month', 0)}; carbon (kgCO2e/month): "
            f"operational {_number(t.operational_kgco2e_month, '', 0)}, "
            f"embodied {_number(t.embodied_kgco2e_month, '', 0)}",
        ]
    if plan.baselines:
        lines += ["", "Compared with simpler fleets:"]
        for base in plan.baselines:
            if base.totals is None:
                lines.append(f"  {base.name:<58} {base.status.value}: {base.message}")
            else:
                lines.append(
                    f"  {base.name:<58} {_money(base.totals.hourly_cost_usd)}/h, "
                    f"{_number(base.totals.carbon_kgco2e_month, 'kgCO2e/month', 0)}"
                )
    if plan.pareto:
        lines += ["", "Cost / carbon frontier ($/h, kgCO2e/h):"]
        lines += [
            f"  {p.hourly_cost_usd:10.2f}  {p.carbon_kg_per_hour:10.3f}  "
            + ", ".join(f"{n} x {g}" for g, n in p.gpus.items())
            for p in plan.pareto
        ]
    elif plan.pareto_message and plan.status is not PlanStatus.INFEASIBLE:
        lines += ["", f"Cost / carbon frontier: not computed ({plan.pareto_message})"]
    if plan.notes:
        lines += ["", "Notes:"] + [f"  - {note}" for note in plan.notes]
    return "\n".join(lines) + "\n"
