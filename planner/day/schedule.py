"""A day plan (`day_plan.DayPlan`) for a terminal and as the schedule CSV: one row per hour x
offer x configuration x class, the header on the first row (no comment lines), RFC 4180."""

from __future__ import annotations

import csv
import io

from fleetplan.core.tabular import neutralise
from fleetplan.planner.day.results import DayPlan
from fleetplan.planner.report.table import money_text

SCHEDULE_COLUMNS = (
    "hour",
    "offer",
    "commitment",
    "gpu_model",
    "gpus_per_server",
    "class",
    "servers",
    "rate_rps",
    "demand_rps",
    "basis",
    "servers_needed",  # with availability: the servers the rate needs all up (the rest spares)
)


def schedule_rows(day: DayPlan) -> list[dict[str, object]]:
    """One row per hour x offer x configuration x class the plan serves."""
    reserved = {r.offer for r in day.reserved}
    rows = []
    for hour in day.schedule:
        for pool in hour.pools:
            rows.append(
                {
                    "hour": hour.hour,
                    "offer": pool.offer,
                    "commitment": "reserved" if pool.offer in reserved else "on_demand",
                    "gpu_model": pool.gpu_model,
                    "gpus_per_server": pool.gpus_per_server,
                    "class": pool.traffic_class,
                    "servers": pool.servers,
                    "rate_rps": round(pool.rate_rps, 6),
                    "demand_rps": round(hour.demand_rps.get(pool.traffic_class, 0.0), 6),
                    "basis": pool.basis,
                    "servers_needed": pool.servers_needed,
                }
            )
    return rows


def schedule_csv(day: DayPlan) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=SCHEDULE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in schedule_rows(day):
        writer.writerow({k: neutralise(v) if isinstance(v, str) else v for k, v in row.items()})
    return buffer.getvalue()


def _spares(servers: int, needed: int | None) -> str:
    if needed is None or servers <= needed:
        return ""
    return f" (+{servers - needed} spare)"


def _kg(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.1f} kgCO2e"


def day_summary(day: DayPlan) -> str:
    """The day plan as text: reserved fleet, the hours, totals, the comparison."""
    lines = [
        "",
        f"The day (hours of {day.timezone}): {day.status.value}"
        + ("" if day.message == "optimal" else f" ({day.message})"),
    ]
    if day.cost_usd is None:
        lines += [f"  no day plan: {day.message}"]
    else:
        reserved = ", ".join(
            f"{r.servers} x {r.gpus_per_server}x {r.gpu_model} ({r.offer})" for r in day.reserved
        )
        lines.append(f"  Reserved (paid every hour): {reserved or 'none'}")
        lines.append("  hour  servers serving each class (offer: servers x GPUs/server)      $/h")
        for hour in day.schedule:
            parts = [
                f"{p.traffic_class} {p.servers}x{p.gpus_per_server} {p.offer} "
                f"{p.rate_rps:.2f} req/s" + _spares(p.servers, p.servers_needed)
                for p in hour.pools
            ]
            idle = (
                f"; {hour.idle_reserved_servers} reserved idle"
                if hour.idle_reserved_servers
                else ""
            )
            lines.append(
                f"  {hour.hour:02d}h  {'; '.join(parts) or '-'}{idle}  {hour.cost_usd:.2f}"
            )
        lines += [
            f"  Day: {money_text(day.cost_usd)}, {_kg(day.kgco2e)}, "
            f"{'unknown' if day.energy_kwh is None else f'{day.energy_kwh:,.1f}'} kWh with PUE; "
            f"month (30.4 days): {money_text(day.monthly_cost_usd)}, {_kg(day.monthly_kgco2e)}",
        ]
    if day.attainment:
        lines.append(
            "  Attainment (servers up independently, each at its offer's availability; the "
            "lowest hour):"
        )
        for a in day.attainment:
            target = (
                "no target" if a.attainment_target is None else f"target {a.attainment_target:g}"
            )
            together = ", its pools together (fallback)" if a.fallback else ""
            lines.append(
                f"    {a.traffic_class}: {a.attainment:.6f} at {a.lowest_hour:02d}h ({target}"
                f"{together})"
            )
    lines.append("  Compared (per day):")
    for other in day.compared:
        if other.cost_usd is None:
            lines.append(f"    {other.name}: {other.status.value}: {other.message}")
        else:
            lines.append(f"    {other.name}: {money_text(other.cost_usd)}, {_kg(other.kgco2e)}")
    if day.saving_vs_peak_usd is not None:
        kg = day.saving_vs_peak_kgco2e
        lines.append(
            f"  Saving against the peak plan: {money_text(day.saving_vs_peak_usd)} a day "
            f"({money_text(day.saving_vs_peak_usd * 730 / 24)} a month), "
            f"{'unknown' if kg is None else f'{kg:,.1f}'} kgCO2e a day"
        )
    return "\n".join(lines) + "\n"
