"""The Plan page's readable tables of a plan: the recommended fleet's pools, their energy and
carbon, the measured level behind each, and why each class can or cannot run on each
configuration, with labels in words and units and figures rounded for people (the CSV's schema
and digits are `planner.report.table`'s; the terminal summary is `planner.report.table.summary`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import pandas as pd

from fleetplan.planner.capacity.configuration import carried_text
from fleetplan.planner.peak.results import Plan, PoolPlan
from fleetplan.planner.report.table import (
    band_words,
    estimate_words,
    gpu_label,
    interval_text,
    rate_text,
)


def _sig(value: float | None, digits: int = 3) -> float | None:
    """`value` to `digits` significant digits (5.98271 -> 5.98; 0.021345 -> 0.0213)."""
    if value is None or value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


def _fixed(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def configuration_label(pool: PoolPlan) -> str:
    """A pool's configuration as people write it: "2x H100 PCIe"."""
    return f"{pool.gpus_per_server}x {gpu_label(pool.gpu_model)}"


NOT_STATED = "not stated"  # a server whose runs name no engine, dtype, TP or variant


def level_text(pool: PoolPlan) -> str:
    """The measured level a pool's capacity rests on, and whether the server kept up there."""
    offered = pool.level_offered_rate_rps
    load = (
        "all requests at once"
        if offered is not None and math.isinf(offered)
        else f"{rate_text(offered)} req/s offered"
        if offered is not None
        else "a fixed concurrency"
    )
    carried = carried_text(offered, pool.level_sustained_rps, pool.level_throughput_rps, rate_text)
    # an estimated pool's level is the serving model's, not a measurement: said so
    simulated = "simulated, not measured: " if pool.basis == "estimated" else ""
    return f"{simulated}{load}, {carried}"


KEPT_UP = "kept up"
FELL_BEHIND = "fell behind: its queue grew at that level, so steady traffic at this rate may queue"


def basis_text(pool: PoolPlan) -> str:
    """What a pool's levels are: "measured", or ESTIMATED with its band, or whose identical
    architecture's measurement it uses."""
    if pool.basis == "measured":
        return "measured"
    if pool.basis != "estimated":
        return estimate_words(pool)
    error = pool.estimate_error or {}
    if not error.get("kind"):
        return f"ESTIMATED: error band unknown; {error.get('borrowed', '')}".rstrip("; ")
    # the band first: the cell is narrow, whose fit it is stands in the text and the CSV
    return f"ESTIMATED: {band_words(error)} ({error['kind']} estimates)"


def fleet_view(plan: Plan) -> pd.DataFrame:
    """The recommended fleet's pools as the dashboard shows them: labels with units, rounded."""
    rows = [
        {
            "Class": p.traffic_class,
            "Server": configuration_label(p),
            "Engine / variant": p.server or NOT_STATED,
            "Basis": basis_text(p),
            "Servers": p.servers,
            "GPUs": p.gpus,
            "Rate (req/s)": _sig(p.rate_rps),
            # utilisation is the rate over the servers' full capacity (docs/plan.md, "One basis per
            # figure"): that capacity beside it, the planned one (after the ceiling) apart
            "Full capacity/server (req/s)": _sig(p.full_capacity_rps_per_server),
            "Utilisation (%)": _fixed(p.utilization * 100, 1),
            "Planned capacity/server (req/s)": _sig(p.capacity_rps_per_server),
            "Capacity interval (req/s)": interval_text(
                p.capacity_low_rps_per_server, p.capacity_high_rps_per_server
            ),
            "Cost ($/h)": _fixed(p.hourly_cost_usd, 2),
            "Cost ($/month)": _fixed(p.monthly_cost_usd, 0),
            "Capacity from": p.capacity_basis,
        }
        for p in plan.recommended.pools
    ]
    return pd.DataFrame(rows)


def energy_view(plan: Plan) -> pd.DataFrame:
    """Each pool's power, energy and carbon, what its power rests on, and notes on them."""
    rows = [
        {
            "Class": p.traffic_class,
            "Server": configuration_label(p),
            "Power (kW)": _fixed(p.power_kw, 2),
            "GPU energy before PUE (kWh/month)": _fixed(p.gpu_energy_kwh_month, 0),
            "Facility energy x PUE (kWh/month)": _fixed(p.facility_energy_kwh_month, 0),
            "Operational (kgCO2e/month)": _fixed(p.operational_kgco2e_month, 1),
            "Embodied, GPUs + hosts (kgCO2e/month)": _fixed(p.embodied_kgco2e_month, 1),
            "of which hosts (kgCO2e/month)": _fixed(p.host_embodied_kgco2e_month, 1),
            "Power from": p.energy_basis.value,
            "Notes": "; ".join(p.notes) or "",
        }
        for p in plan.recommended.pools
    ]
    return pd.DataFrame(rows)


def levels_view(plan: Plan, traffic: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The measured level behind each pool's capacity, the traffic it was measured with (by
    class, where given: `capacity.traffic_measured`), whether the server kept up there, and the
    P99s its curve predicts at the pool's load per server."""
    rows = [
        {
            "Class": p.traffic_class,
            "Server": configuration_label(p),
            **({"Traffic measured": traffic.get(p.traffic_class, "")} if traffic else {}),
            "Measured level": level_text(p),
            "The server at that level": FELL_BEHIND if p.behind else KEPT_UP,
            "Load per server (req/s)": _sig(p.rate_per_server_rps),
            "Predicted P99 TTFT (ms)": _fixed(p.predicted_ttft_p99_ms, 1),
            "Predicted P99 TPOT (ms)": _fixed(p.predicted_tpot_p99_ms, 1),
            "Measured in": p.level_source_file,
        }
        for p in plan.recommended.pools
    ]
    return pd.DataFrame(rows)


def capacities_view(plan: Plan) -> pd.DataFrame:
    """Why each class can or cannot run on each configuration, for people."""
    rows = []
    for row in plan.capacities:
        count, gpu_model = row.configuration.split("x ", 1)
        serves = row.capacity_rps_per_server > 0
        rows.append(
            {
                "Class": row.traffic_class,
                "Server": f"{count}x {gpu_label(gpu_model)}",
                "Engine / variant": row.server or NOT_STATED,
                "Capacity/server (req/s)": _sig(row.capacity_rps_per_server),
                "Capacity interval (req/s)": interval_text(
                    row.capacity_low_rps_per_server, row.capacity_high_rps_per_server
                ),
                "Overlaps with": "; ".join(row.overlaps),
                "Meets the targets": "yes" if serves else "no",
                "Why not": "" if serves else (row.reason or "no level meets the targets"),
                "Capacity from": row.basis,
                "Measured level": row.level or "",
                "The server at that level": (FELL_BEHIND if row.behind else KEPT_UP)
                if row.level
                else "",
            }
        )
    return pd.DataFrame(rows)


def pool_notes(plan: Plan) -> list[str]:
    """The pools' notes on their figures (e.g. idle power unknown), once per server and note."""
    seen: dict[str, None] = {}
    for pool in plan.recommended.pools:
        for note in pool.notes:
            seen.setdefault(f"{configuration_label(pool)} ({pool.traffic_class}): {note}", None)
    return list(seen)
