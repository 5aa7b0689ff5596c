"""A plan as a table and as text: the CSV's schema (one row per pool, its columns and the digits
each is rounded to), short labels for GPUs and rates, and the summary a terminal shows. The
dashboard's readable tables are `fleetplan.services.plan_tables`."""

from __future__ import annotations

import math

import pandas as pd

from fleetplan.planner.peak.results import FleetPlan, Plan, PlanStatus, PoolPlan

# What a pool costs, draws and emits, in the CSV's order: the figures a fleet's totals carry too
# (`results.Totals` has each: the fleet CSV's TOTAL row).
FLEET_FIGURES: tuple[str, ...] = (
    "hourly_cost_usd",
    "monthly_cost_usd",
    "power_kw",
    "gpu_energy_kwh_month",
    "facility_energy_kwh_month",
    "operational_kgco2e_month",
    "embodied_kgco2e_month",
    "host_embodied_kgco2e_month",
)

# The CSV's columns, in order: where the pool is, what it carries (the planned capacity after the
# utilisation ceiling; the full capacity before it, which `utilization` is measured against), what
# it costs and emits (power and GPU energy before PUE, facility energy after it, which cost and
# carbon use; embodied carbon of GPUs and hosts, with the hosts' part), the
# measured level its capacity rests on (with the server's measured power there, where measured),
# the basis of that capacity with the P99s the configuration's curve predicts at the pool's load
# per server, and notes on the pool's figures. A capacity is an interval: its low and high ends
# (after the ceiling) and which end the plan rests on (`capacity_at`, the scenario's).
POOL_COLUMNS: tuple[str, ...] = (
    "scenario",
    "fleet",
    "class",
    "gpu_model",
    "gpus_per_server",
    "server",
    "servers",
    "gpus",
    "rate_rps",
    "capacity_rps_per_server",
    "full_capacity_rps_per_server",
    "utilization",
    "capacity_low_rps_per_server",
    "capacity_high_rps_per_server",
    "capacity_at",
    *FLEET_FIGURES,
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
    "basis",
    "estimate_error",
    "predicted_ttft_p99_ms",
    "predicted_tpot_p99_ms",
    "level_power_w",
    "notes",
)

# Decimal places each number column of the CSV is rounded to: enough to recompute a row's cost,
# power and carbon from the inputs exported with it (to these digits), none of the float noise
# (0.8000000000000002). Rates to 0.0001 req/s (a pool may carry 0.02 req/s); the measured
# throughput a pool's power is computed from to 1e-6 req/s; money to 0.0001 $/h and 0.01 $/month;
# power to 0.1 W; energy to 0.01 kWh; carbon to 1 g; latencies to 0.01 ms.
CSV_DIGITS: dict[str, int] = {
    "rate_rps": 4,
    "capacity_rps_per_server": 4,
    "full_capacity_rps_per_server": 4,
    "capacity_low_rps_per_server": 4,
    "capacity_high_rps_per_server": 4,
    "utilization": 4,
    "hourly_cost_usd": 4,
    "monthly_cost_usd": 2,
    "power_kw": 4,
    "gpu_energy_kwh_month": 2,
    "facility_energy_kwh_month": 2,
    "operational_kgco2e_month": 3,
    "embodied_kgco2e_month": 3,
    "host_embodied_kgco2e_month": 3,
    "carbon_kgco2e_month": 3,  # operational + embodied: the fleet CSV's column
    "output_tokens_per_s": 2,
    "total_tokens_per_s": 2,
    "level_offered_rate_rps": 4,
    "level_throughput_rps": 6,
    "level_ttft_p99_ms": 2,
    "level_tpot_p99_ms": 2,
    "predicted_ttft_p99_ms": 2,
    "predicted_tpot_p99_ms": 2,
    "level_power_w": 1,
}


def pool_table(plan: Plan, *, include_baselines: bool = True) -> pd.DataFrame:
    """One row per pool of the recommended fleet (and of each baseline, marked in `fleet`);
    unrounded (`rounded` gives the CSV's digits)."""
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
                    "capacity_at": plan.capacity_at,
                    "class": row.pop("traffic_class"),
                    "level_behind": row.pop("behind"),
                    **row,
                    "energy_basis": pool.energy_basis.value,
                    "basis": pool.basis,
                    "estimate_error": estimate_words(pool),
                    "notes": "; ".join(pool.notes),
                }
            )
    return pd.DataFrame(rows, columns=list(POOL_COLUMNS))


def rounded(table: pd.DataFrame) -> pd.DataFrame:
    """The pool table with each number column rounded to its `CSV_DIGITS` (inf stays inf)."""
    out = table.copy()
    for column in CSV_DIGITS:
        if column in out.columns:
            out[column] = out[column].map(lambda v, c=column: round_figure(c, v))
    return out


def round_figure(column: str, value: object) -> object:
    """`value` rounded to the CSV's digits for `column` (`CSV_DIGITS`); a column without digits,
    a missing value, a text or an infinity as it is."""
    digits = CSV_DIGITS.get(column)
    if digits is None or value is None or not isinstance(value, int | float):
        return value
    if not math.isfinite(value):
        return value
    return round(float(value), digits)


# -- labels for people --------------------------------------------------------------------------

_GPU_WORDS = {"pcie": "PCIe", "ti": "Ti", "super": "Super", "ada": "Ada", "nvl": "NVL"}


def gpu_label(gpu_model: str) -> str:
    """A canonical GPU id as people write it: `h100-pcie` -> "H100 PCIe", `rtx-4090` ->
    "RTX 4090"."""
    return " ".join(_GPU_WORDS.get(word, word.upper()) for word in gpu_model.split("-"))


def gpus_text(gpus: dict[str, int]) -> str:
    """A fleet's GPUs in words: "3 x H100 PCIe + 4 x RTX 4090"."""
    return " + ".join(f"{n} x {gpu_label(g)}" for g, n in gpus.items()) or "no GPUs"


def rate_text(rps: float) -> str:
    """A rate with enough significant digits to be true: 12, 5.98, 0.0213 (never "0.0")."""
    if rps == 0 or not math.isfinite(rps):
        return f"{rps:g}"
    if abs(rps) >= 100:
        return f"{rps:,.0f}"
    return f"{rps:.3g}"


def share_text(share: float) -> str:
    """A share as a percentage; below 1 % with one significant digit (never a false "0%")."""
    if 0 < share < 0.01:
        return f"{share * 100:.1g}%"
    return f"{share:.0%}"


def interval_text(low: float | None, high: float | None) -> str:
    """A capacity interval in words: "12.8" where its ends agree, "12.8 to 19.1" where not,
    "" where unknown."""
    if low is None or high is None:
        return ""
    if abs(high - low) <= 1e-9 * max(abs(high), 1.0):
        return rate_text(low)
    return f"{rate_text(low)} to {rate_text(high)}"


def money_text(value: float | None) -> str:
    """Dollars with cents, or "unknown" (the terminal texts of the peak plan and the day)."""
    return "unknown" if value is None else f"${value:,.2f}"


def _number(value: float | None, unit: str = "", digits: int = 1) -> str:
    if value is None:
        return "unknown"
    return f"{value:,.{digits}f} {unit}".rstrip()


def _ms(value: float | None) -> str:
    return "not predicted" if value is None else f"{value:,.1f} ms"


def band_text(pair: object) -> str:
    """An error band (predicted / measured - 1, P10 to P90) in words: "-15% to +148%"; an end
    of ten times the measurement or more as a multiple ("4,500x"), not a percentage of six
    digits; "unknown" where there is no band."""
    if not isinstance(pair, list | tuple) or len(pair) != 2:
        return "unknown"
    return f"{_band_end(pair[0])} to {_band_end(pair[1])}"


def _band_end(error: float) -> str:
    return f"{1 + error:,.0f}x" if error >= 9 else f"{error:+.0%}"


def estimate_words(pool: PoolPlan) -> str:
    """What an estimated pool rests on, in words ("" for a measured one): its error band (the
    validation's, predicted / measured - 1) and the GPU its coefficients come from."""
    error = pool.estimate_error or {}
    if pool.basis == "identical architecture":
        return f"measured on an identical architecture ({error.get('lender', '?')})"
    if pool.basis != "estimated":
        return ""
    kind = error.get("kind")
    band = f"error band ({kind} estimates): {band_words(error)}" if kind else "error band unknown"
    return f"{band}; {error.get('borrowed', '')}".rstrip("; ")


def band_words(error: dict) -> str:
    """An estimate's band in words: saturation, P99 TTFT and P99 TPOT, P10 to P90."""
    return (
        f"saturation {band_text(error.get('saturation'))}, "
        f"P99 TTFT {band_text(error.get('ttft_p99'))}, "
        f"P99 TPOT {band_text(error.get('tpot_p99'))}"
    )


def _capacity_line(pool: PoolPlan) -> str:
    """A pool's capacity, its basis, and the P99s predicted at its load per server."""
    load = f"P99 at {pool.rate_per_server_rps:.2f} req/s per server: "
    if pool.predicted_ttft_p99_ms is None and pool.predicted_tpot_p99_ms is None:
        load += "not predicted (no curve, or above the highest level the server kept up with)"
    else:
        load += f"TTFT {_ms(pool.predicted_ttft_p99_ms)}, TPOT {_ms(pool.predicted_tpot_p99_ms)}"
    capacity = f"capacity {pool.capacity_rps_per_server:.2f} req/s per server"
    low, high = pool.capacity_low_rps_per_server, pool.capacity_high_rps_per_server
    if low is not None and high is not None and high - low > 1e-9 * max(high, 1.0):
        capacity += f" (interval {interval_text(low, high)})"
    server = f"server {pool.server}; " if pool.server else ""
    line = f"{server}{capacity} ({pool.capacity_basis}); {load}"
    if pool.basis == "estimated":
        return f"ESTIMATED, not measured: {estimate_words(pool)}. {line}"
    if pool.basis == "identical architecture":
        return f"{estimate_words(pool).capitalize()}. {line}"
    return line


PEAK_HEADING = (
    "At its peak (every class at its peak rate all day, every server paid all day): the "
    "comparison for the day's plan"
)


def summary_head(plan: Plan) -> str:
    """The scenario and the status, the first lines of the plan's text."""
    return (
        f"Scenario: {plan.scenario}   model: {plan.model}   objective: {plan.objective}   "
        f"capacity rule: {plan.capacity_rule}   planned on each capacity's {plan.capacity_at} end\n"
        f"Status: {plan.status.value}"
        + ("" if plan.message == "optimal" else f" ({plan.message})")
        + "\n"
    )


def summary(plan: Plan) -> str:
    """The plan as text for a terminal."""
    return summary_head(plan) + summary_body(plan)


def summary_body(plan: Plan) -> str:
    """The recommended fleet (a day plan's peak plan, headed as the comparison it is), the
    simpler fleets, the frontier and the notes."""
    lines: list[str] = []
    fleet = plan.recommended
    if fleet.totals is not None:
        lines += ["", "Recommended fleet:" if plan.day is None else f"{PEAK_HEADING}:"]
        for pool in fleet.pools:
            lines.append(
                f"  {pool.traffic_class:<16} {pool.servers:>4} x {pool.gpus_per_server}x "
                f"{pool.gpu_model:<10} {rate_text(pool.rate_rps):>8} req/s  "
                f"util {share_text(pool.utilization):>5}  "
                f"{money_text(pool.hourly_cost_usd)}/h  energy {pool.energy_basis.value}"
            )
            lines.append(f"      {_capacity_line(pool)}")
        estimated = [p for p in fleet.pools if p.basis != "measured"]
        if estimated:
            lines.append(
                f"  {len(estimated)} of {len(fleet.pools)} pools rest on estimates, not on runs "
                "of their own configuration: measure them before you buy (fleetplan collect "
                "--find-capacity)"
            )
        t = fleet.totals
        gpus = ", ".join(f"{n} x {g}" for g, n in t.gpus.items())
        lines += [
            f"  GPUs: {gpus}",
            f"  Cost: {money_text(t.hourly_cost_usd)}/h, {money_text(t.monthly_cost_usd)}/month; "
            f"{money_text(t.usd_per_million_output_tokens)} per million output tokens, "
            f"{money_text(t.usd_per_million_total_tokens)} per million total tokens",
            f"  Energy (kWh/month): GPUs {_number(t.gpu_energy_kwh_month, '', 0)} before PUE, "
            f"{_number(t.facility_energy_kwh_month, '', 0)} with PUE (what energy cost and "
            "operational carbon use)",
            f"  Carbon (kgCO2e/month): operational {_number(t.operational_kgco2e_month, '', 0)}, "
            f"embodied {_number(t.embodied_kgco2e_month, '', 0)} "
            f"(of which host servers {_number(t.host_embodied_kgco2e_month, '', 0)})",
        ]
    if plan.baselines:
        lines += ["", "Compared with simpler fleets" + (" (at the peak):" if plan.day else ":")]
        for base in plan.baselines:
            if base.totals is None:
                lines.append(f"  {base.name:<58} {base.status.value}: {base.message}")
            else:
                lines.append(
                    f"  {base.name:<58} {money_text(base.totals.hourly_cost_usd)}/h, "
                    f"{_number(base.totals.carbon_kgco2e_month, 'kgCO2e/month', 0)}"
                )
    if plan.pareto:
        at = " at the peak" if plan.day is not None else ""
        lines += ["", f"Cost / carbon frontier{at} ($/h, kgCO2e/h):"]
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
