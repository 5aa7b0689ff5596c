"""A day plan (`Plan.day`) as the Plan page shows it: the servers of each configuration in each
hour (reserved and on demand apart), each class's demand and each site's grid through the day,
the schedule (the rows of the schedule CSV, `planner.day.schedule.schedule_rows`), each hour's
figures and the comparison with the peak plan and reserved-only. Plain tables; no Streamlit."""

from __future__ import annotations

import pandas as pd

from fleetplan.planner.day.results import DayPlan, Servers
from fleetplan.planner.day.schedule import SCHEDULE_COLUMNS, schedule_rows

SCHEDULE_LABELS = {
    "hour": "Hour",
    "offer": "Offer",
    "commitment": "Commitment",
    "gpu_model": "GPU",
    "gpus_per_server": "GPUs / server",
    "class": "Class",
    "servers": "Servers",
    "rate_rps": "Rate served (req/s)",
    "demand_rps": "Class demand (req/s)",
    "basis": "Basis",
    "servers_needed": "Needed (all up)",
}
MONTH_DAYS = 730 / 24  # the month of the plan's monthly figures (730 h)


def server_label(servers: Servers) -> str:
    """A configuration under an offer: "2x rtx-4090 (4090 cloud), on demand" (the offer named
    where it is not the GPU's name)."""
    commitment = "reserved" if servers.commitment == "reserved" else "on demand"
    offer = "" if servers.offer == servers.gpu_model else f" ({servers.offer})"
    return f"{servers.gpus_per_server}x {servers.gpu_model}{offer}, {commitment}"


def _serving(hour, servers: Servers) -> int:
    return sum(
        p.servers
        for p in hour.pools
        if (p.offer, p.gpu_model, p.gpus_per_server)
        == (servers.offer, servers.gpu_model, servers.gpus_per_server)
    )


def servers_through_the_day(day: DayPlan) -> pd.DataFrame:
    """One row per hour, configuration under an offer and state: a reserved configuration's
    servers serving that hour and those idle (paid all the same), an on-demand one's servers
    rented that hour."""
    rows = []
    for hour in day.schedule:
        for servers in [*day.reserved, *hour.on_demand]:
            serving = _serving(hour, servers)
            states = [("serving", serving)]
            if servers.commitment == "reserved":
                states.append(("idle", servers.servers - serving))
            for state, count in states:
                rows.append(
                    {
                        "hour": hour.hour,
                        "series": server_label(servers),
                        "state": state,
                        "commitment": servers.commitment,
                        "gpu_model": servers.gpu_model,
                        "servers": count,
                    }
                )
    columns = ["hour", "series", "state", "commitment", "gpu_model", "servers"]
    return pd.DataFrame(rows, columns=columns)


def _hourly(day: DayPlan, field: str, key: str, value: str) -> pd.DataFrame:
    """One row per hour and entry of the schedule's `field` (a mapping per hour)."""
    rows = [
        {"hour": h.hour, key: name, value: amount}
        for h in day.schedule
        for name, amount in getattr(h, field).items()
    ]
    return pd.DataFrame(rows, columns=["hour", key, value])


def demand_through_the_day(day: DayPlan) -> pd.DataFrame:
    """Each class's rate in each hour (a volume class: what the plan serves that hour)."""
    return _hourly(day, "demand_rps", "class", "rps")


def grid_through_the_day(day: DayPlan) -> pd.DataFrame:
    """Each site's grid intensity in each hour (the sites the plan's offers are in)."""
    return _hourly(day, "grid_gco2_per_kwh", "site", "gco2_per_kwh")


def schedule_view(day: DayPlan) -> pd.DataFrame:
    """The schedule CSV's rows (hour x offer x configuration x class), in the page's words."""
    table = pd.DataFrame(schedule_rows(day), columns=list(SCHEDULE_COLUMNS))
    return table.rename(columns=SCHEDULE_LABELS)


def hours_view(day: DayPlan) -> pd.DataFrame:
    """Each hour's figures: servers serving, reserved idle, on-demand GPUs, cost, energy, carbon."""
    rows = []
    for h in day.schedule:
        rows.append(
            {
                "Hour": h.hour,
                "Servers serving": sum(p.servers for p in h.pools),
                "Reserved idle": h.idle_reserved_servers,
                "On-demand GPUs": sum(s.gpus for s in h.on_demand),
                "Cost ($)": h.cost_usd,
                "Energy x PUE (kWh)": h.energy_kwh,
                "Carbon (kgCO2e)": h.kgco2e,
            }
        )
    return pd.DataFrame(rows)


def attainment_view(day: DayPlan) -> pd.DataFrame:
    """Each class's chance of being served at its targets: its target, its lowest hour, and
    every hour it has traffic (a day with availability; empty otherwise)."""
    rows = []
    for a in day.attainment:
        row = {
            "Class": a.traffic_class,
            "Target": a.attainment_target,
            "Lowest": a.attainment,
            "Lowest at": f"{a.lowest_hour:02d}h",
            "Pools together (fallback)": a.fallback,
        }
        row |= {f"{h:02d}h": v for h, v in enumerate(a.by_hour)}
        rows.append(row)
    return pd.DataFrame(rows)


def comparison_view(day: DayPlan) -> pd.DataFrame:
    """The day plan, the same scenario planned at its peak and reserved-only, per day and month;
    a figure the plan cannot know stays empty (unknown), a fleet without a plan says why."""
    rows = [
        {
            "Fleet": "this day plan",
            "Status": day.status.value,
            "$ / day": day.cost_usd,
            "kgCO2e / day": day.kgco2e,
            "$ / month": day.monthly_cost_usd,
            "kgCO2e / month": day.monthly_kgco2e,
            "GPU-hours / day": day.gpu_hours,
        }
    ]
    for other in day.compared:
        rows.append(
            {
                "Fleet": other.name,
                "Status": other.status.value
                + ("" if other.message in ("", "optimal") else f": {other.message}"),
                "$ / day": other.cost_usd,
                "kgCO2e / day": other.kgco2e,
                "$ / month": other.monthly_cost_usd,
                "kgCO2e / month": other.monthly_kgco2e,
                "GPU-hours / day": other.gpu_hours,
            }
        )
    return pd.DataFrame(rows)


def saving_sentence(day: DayPlan) -> str | None:
    """The saving against the peak plan in words, None where there is no peak plan to beat."""
    usd, kg = day.saving_vs_peak_usd, day.saving_vs_peak_kgco2e
    if usd is None:
        return None
    if kg is None:
        carbon = "an unknown carbon difference"
    else:
        carbon = f"{abs(kg):,.1f} kgCO2e a day {'less' if kg >= 0 else 'more'}"
    saves = "saves" if usd >= 0 else "costs more by"
    return (
        f"Against the same scenario planned at its peak, this day {saves} ${abs(usd):,.2f} a "
        f"day (${abs(usd) * MONTH_DAYS:,.0f} a month), with {carbon}."
    )
