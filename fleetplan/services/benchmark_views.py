"""What the dashboard's Benchmarks page shows, computed without Streamlit: the filter choices for a
model, the points those filters keep, each level priced per million tokens with its Pareto flag,
tokens per kWh where energy was measured, and notes on the load curve. The page only draws these.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from fleetplan.planner.unit_costs import pareto_efficient, server_unit_costs, tokens_per_kwh
from fleetplan.warehouse.queries import configurations

UNNAMED_DATASET = "(unnamed)"  # how a point without a dataset name is listed and filtered
PARETO_LABELS = {True: "Pareto-efficient", False: "dominated"}


@dataclass(frozen=True, slots=True)
class PointFilters:
    """What the points of one model can be filtered by, each sorted."""

    configurations: list[str]
    datasets: list[str]
    sources: list[str]  # the imported files the points came from


def _datasets(points: pd.DataFrame) -> pd.Series:
    return points["dataset"].fillna(UNNAMED_DATASET)


def filter_choices(points: pd.DataFrame, model: str) -> PointFilters:
    mine = points[points["model"] == model]
    return PointFilters(
        configurations=sorted(set(configurations(mine))),
        datasets=sorted(_datasets(mine).unique()),
        sources=sorted(mine["imported_from"].unique()),
    )


def select_points(
    points: pd.DataFrame,
    *,
    model: str,
    configurations_shown: list[str],
    datasets: list[str],
    sources: list[str],
) -> pd.DataFrame:
    """The points of `model` the filters keep, with their `configuration` label (e.g. "2x
    rtx-4090") as a column; empty when nothing matches."""
    mine = points[points["model"] == model]
    kept = mine[
        configurations(mine).isin(configurations_shown)
        & _datasets(mine).isin(datasets)
        & mine["imported_from"].isin(sources)
    ]
    return kept.assign(configuration=configurations(kept))


def levels_meeting_ttft(points: pd.DataFrame, target_ms: float) -> int:
    """How many levels have a P99 TTFT at or under the target (unmeasured ones do not)."""
    return int((points["ttft_p99_ms"] <= target_ms).sum())


def priced_points(points: pd.DataFrame, usd_per_gpu_hour: dict[str, float]) -> pd.DataFrame:
    """Each level's $ per million tokens on one fully loaded server at these prices, with
    `pareto` (no other level is both cheaper and faster) and its label in `point`."""
    costs = server_unit_costs(points, usd_per_gpu_hour)
    costs["pareto"] = pareto_efficient(costs["usd_per_million_total_tokens"], costs["ttft_p99_ms"])
    costs["point"] = costs["pareto"].map(PARETO_LABELS)
    return costs


def measured_energy(points: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """The levels with measured energy, with `tokens_per_kwh`; and how many have none."""
    energy = points.assign(tokens_per_kwh=tokens_per_kwh(points))
    measured = energy[energy["tokens_per_kwh"].notna()]
    return measured, len(energy) - len(measured)


def load_curve_notes(curve: pd.DataFrame) -> str | None:
    """What the load curve (`queries.load_curve`) leaves out or averages, as one caption."""
    notes = []
    if curve.attrs.get("saturation_levels"):
        count = curve.attrs["saturation_levels"]
        notes.append(f"{count} saturation level(s) (all requests at once) are in the table only")
    if (curve["repeats"] > 1).any():
        notes.append("levels measured more than once show the mean of the repeats")
    return "; ".join(notes) + "." if notes else None
