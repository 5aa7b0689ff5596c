"""Today's capacity rule, kept as `capacity_rule: "measured"` and as the latency model's
fallback: the highest achieved request throughput among a configuration's measured levels whose
P99 TTFT and P99 TPOT meet the class's targets (a missing target is no constraint; a missing
measurement never passes a target), times the utilisation ceiling. No extrapolation beyond
measured levels; 0 when no level passes. Levels marked incomplete (cut short, or with failed
requests) are not used, nor levels over a physical bound (`envelope_flags`).
"""

from __future__ import annotations

import math

import pandas as pd

from fleetplan.planner.capacity.configuration import (
    CONFIG_KEYS,
    MEASURED_RULE,
    Capacity,
    Configuration,
    level_from_row,
    with_servers,
)
from fleetplan.planner.curve.envelope_flags import flagged
from fleetplan.planner.scenario.scenario import TrafficClass


def _numeric(frame: pd.DataFrame, column: str) -> pd.Series:
    return (
        pd.to_numeric(frame[column], errors="coerce")
        if column in frame
        else pd.Series(float("nan"), index=frame.index)
    )


def _usable(points: pd.DataFrame) -> pd.DataFrame:
    """Levels that show what the server sustains (not cut short, none failed, some completed),
    with their P99s as numbers (`_ttft`, `_tpot`)."""
    complete = points["complete"].fillna(True).astype(bool) if "complete" in points else True
    usable = points[
        (points["completed"] > 0)
        & points["request_throughput_rps"].notna()
        & complete
        & ~flagged(points)  # over a physical bound: it measured something else (envelope_flags)
    ].copy()
    usable["_ttft"] = _numeric(usable, "ttft_p99_ms")
    usable["_tpot"] = _numeric(usable, "tpot_p99_ms")
    return usable


def best_p99s(
    points: pd.DataFrame,
) -> dict[tuple[str, int, str], tuple[float | None, float | None]]:
    """Each configuration's best (lowest) P99 TTFT and TPOT among its usable levels, for the
    messages of a class no configuration can serve; by (GPU model, GPU count, server)."""
    grouped = _usable(with_servers(points)).groupby(CONFIG_KEYS)
    ttft, tpot = grouped["_ttft"].min().to_dict(), grouped["_tpot"].min().to_dict()
    return {key: (_finite(ttft[key]), _finite(tpot.get(key))) for key in ttft}


def measured_capacities(
    points: pd.DataFrame,
    traffic: TrafficClass,
    configs: list[Configuration],
    max_utilization: float,
) -> list[Capacity]:
    """Capacities of many configurations for one class, in one vectorised pass."""
    keys = CONFIG_KEYS
    usable = _usable(with_servers(points))
    ok = pd.Series(True, index=usable.index)
    if traffic.ttft_p99_ms is not None:
        ok &= usable["_ttft"].le(traffic.ttft_p99_ms)  # an unmeasured value never passes
    if traffic.tpot_p99_ms is not None:
        ok &= usable["_tpot"].le(traffic.tpot_p99_ms)
    grouped = usable.groupby(keys)
    best_ttft = grouped["_ttft"].min().to_dict()
    best_tpot = grouped["_tpot"].min().to_dict()
    winners = (
        usable[ok]
        .sort_values(["request_throughput_rps", "run_id"], kind="stable")
        .groupby(keys)
        .tail(1)
    )
    winner_rows = {tuple(row[k] for k in keys): row for row in winners.to_dict("records")}
    result = []
    for config in configs:
        key = (config.gpu_model, config.gpus_per_server, config.server)
        ttft, tpot = _finite(best_ttft.get(key)), _finite(best_tpot.get(key))
        common = {
            "traffic_class": traffic.name,
            "configuration": config,
            "best_ttft_p99_ms": ttft,
            "best_tpot_p99_ms": tpot,
        }
        row = winner_rows.get(key)
        if row is None:
            reason = _why(key in best_ttft, traffic, ttft, tpot)
            result.append(Capacity(capacity_rps=0.0, level=None, reason=reason, **common))
        else:
            level = level_from_row(row)
            capacity = level.request_throughput_rps * max_utilization
            basis = MEASURED_RULE
            if level.offered_rate_rps is None and level.max_concurrency is not None:
                # a closed loop's throughput, not a rate it was offered: a Poisson stream at that
                # rate queues more (its bursts), so the P99s met there are optimistic
                basis = f"{MEASURED_RULE}: closed-loop: concurrency {level.max_concurrency}"
            result.append(
                Capacity(
                    capacity_rps=capacity,
                    level=level,
                    basis=basis,
                    rps_low=capacity,
                    rps_high=capacity,
                    **common,
                )
            )
    return result


def _passes(value: float | None, target: float | None) -> bool:
    return target is None or (value is not None and not math.isnan(value) and value <= target)


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _why(
    measured: bool, traffic: TrafficClass, best_ttft: float | None, best_tpot: float | None
) -> str:
    if not measured:
        return "no measured level"
    parts = []
    if traffic.ttft_p99_ms is not None:
        best = "not measured" if best_ttft is None else f"best {best_ttft:.1f} ms"
        parts.append(f"P99 TTFT target {traffic.ttft_p99_ms:g} ms, {best}")
    if traffic.tpot_p99_ms is not None:
        best = "not measured" if best_tpot is None else f"best {best_tpot:.1f} ms"
        parts.append(f"P99 TPOT target {traffic.tpot_p99_ms:g} ms, {best}")
    if (
        len(parts) == 2
        and _passes(best_ttft, traffic.ttft_p99_ms)
        and _passes(best_tpot, traffic.tpot_p99_ms)
    ):
        parts.append("no single level meets both")
    return "; ".join(parts)
