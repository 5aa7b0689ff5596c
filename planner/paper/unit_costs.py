"""What one fully loaded server costs per million tokens at a measured level (the paper's view).

$ per million tokens = (GPUs x price per GPU-hour) / (tokens per second x 3,600) x 10^6, with the
level's measured throughput; no headroom, no energy on top (rented capacity).
"""

from __future__ import annotations

import pandas as pd


def server_unit_costs(points: pd.DataFrame, usd_per_gpu_hour: dict[str, float]) -> pd.DataFrame:
    """Adds `server_usd_per_hour`, `usd_per_million_total_tokens` and
    `usd_per_million_output_tokens` to each point whose GPU has a price (others get null)."""
    out = points.copy()
    price = out["gpu_model"].map(usd_per_gpu_hour)
    out["server_usd_per_hour"] = price * out["gpu_count"]
    for kind in ("total", "output"):
        tokens_per_hour = out[f"{kind}_throughput_tps"] * 3600
        out[f"usd_per_million_{kind}_tokens"] = (
            out["server_usd_per_hour"] / tokens_per_hour.where(tokens_per_hour > 0) * 1e6
        )
    return out


def pareto_efficient(cost: pd.Series, latency: pd.Series) -> pd.Series:
    """True where no other point is at least as cheap and as fast, and better in one of them."""
    frame = pd.DataFrame({"cost": cost, "latency": latency}).dropna()
    efficient = pd.Series(False, index=cost.index)
    best = float("inf")
    for index, row in frame.sort_values(["cost", "latency"]).iterrows():
        if row["latency"] < best:
            efficient[index] = True
            best = row["latency"]
    return efficient


def tokens_per_kwh(points: pd.DataFrame) -> pd.Series:
    """Total (input + output) tokens per kWh of GPU energy; null where energy was not measured."""
    tokens = points["total_throughput_tps"] * points["duration_s"]
    kwh = points["gpu_energy_j"] / 3.6e6
    return (tokens / kwh.where(kwh > 0)).astype(float)
