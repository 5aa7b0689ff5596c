"""What the dashboard's Benchmarks page shows, computed without Streamlit: the filter choices for a
model, the points those filters keep, whose points they are (published, or the user's own runs:
never averaged together), each level priced per million tokens with its Pareto flag, tokens per
kWh where energy was measured, notes on the load curve, and the points table with whether each
level kept up in words and why a reader should question it. The page only draws these.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from fleetplan.planner.paper.unit_costs import pareto_efficient, server_unit_costs, tokens_per_kwh
from fleetplan.services.outliers import outlier_reasons
from fleetplan.warehouse.queries import configurations

UNNAMED_DATASET = "(unnamed)"  # how a point without a dataset name is listed and filtered
PARETO_LABELS = {True: "Pareto-efficient", False: "dominated"}
# The table's "kept up" column: the stored judgement (`stable`) in words, and why it is unknown.
KEPT_UP_LABELS = {True: "yes", False: "no"}
BURST_LABEL = "burst: cannot tell"  # too short for a steady state, or all requests at once
CLOSED_LOOP_LABEL = "closed loop: cannot tell"  # a concurrency level offers no rate
UNKNOWN_LABEL = "cannot tell"  # too few requests, or no latency statistics
# Whose points: the bundled sample data (public results) or the user's own imports and uploads.
PUBLISHED = "published"
YOURS = "your runs"
_KIND_OF_ORIGIN = {"sample_data": PUBLISHED, "upload": YOURS, "cli": YOURS}


@dataclass(frozen=True, slots=True)
class PointFilters:
    """What the points of one model can be filtered by, each sorted."""

    configurations: list[str]
    datasets: list[str]
    sources: list[str]  # the imported files the points came from


def with_source_kind(points: pd.DataFrame, origins: dict[str, str]) -> pd.DataFrame:
    """The points with `source_kind`: PUBLISHED for the bundled sample data, YOURS for what the
    user imported (`fleetplan ingest`) or uploaded; `origins` maps run ids to their source's
    origin (`queries.run_origins`). A run of unknown origin counts as the user's."""
    kinds = [_KIND_OF_ORIGIN.get(origins.get(str(run), ""), YOURS) for run in points["run_id"]]
    return points.assign(source_kind=pd.Series(kinds, index=points.index, dtype=object))


def series_label(configuration: str, source_kind: object = PUBLISHED) -> str:
    """A chart series: a configuration, marked when the points are the user's own."""
    return configuration if source_kind != YOURS else f"{configuration} ({YOURS})"


def series_labels(points: pd.DataFrame) -> pd.Series:
    """The series of each point (needs `configuration`; `source_kind` where known)."""
    kinds = points["source_kind"] if "source_kind" in points.columns else None
    labels = [
        series_label(c, PUBLISHED if kinds is None else kinds[i])
        for i, c in zip(points.index, points["configuration"], strict=True)
    ]
    return pd.Series(labels, index=points.index, dtype=object)


def series_gpus(points: pd.DataFrame) -> dict[str, str]:
    """The series of these points with their GPU model, in one order for every chart (GPU
    model, GPUs per server, published before the user's runs), so that each series keeps its
    colour from tab to tab."""
    kinds = points["source_kind"] if "source_kind" in points.columns else PUBLISHED
    frame = pd.DataFrame(
        {
            "gpu_model": points["gpu_model"],
            "gpu_count": points["gpu_count"],
            "yours": pd.Series(kinds, index=points.index) == YOURS,
            "series": series_labels(points.assign(configuration=configurations(points))),
        }
    ).drop_duplicates("series")
    ordered = frame.sort_values(["gpu_model", "gpu_count", "yours"])
    return dict(zip(ordered["series"], ordered["gpu_model"], strict=True))


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
        notes.append(
            "levels measured more than once show the mean of the repeats (of one kind of source: "
            "your runs are never averaged with published ones)"
        )
    return "; ".join(notes) + "." if notes else None


def _kept_up(stable: object, basis: object, reason: object) -> str:
    if stable is True or stable is False:
        return KEPT_UP_LABELS[stable]
    if basis == "concurrency":
        return CLOSED_LOOP_LABEL
    return BURST_LABEL if "burst" in str(reason or "") else UNKNOWN_LABEL


def points_table(points: pd.DataFrame, catalog: pd.DataFrame | None = None) -> pd.DataFrame:
    """The points as the page's table lists them: with `kept_up`, the level's stored judgement
    (`stable`, see `fleetplan.warehouse.load`) in words: yes, no, or why it cannot tell; and
    `question`, why a reader should question the level (`services.outliers`; with the GPU
    catalog, its physical bounds too), or empty."""
    stable = [None if pd.isna(value) else bool(value) for value in points["stable"]]
    labels = [
        _kept_up(*row)
        for row in zip(stable, points["load_basis"], points["load_reason"], strict=True)
    ]
    return points.assign(
        kept_up=pd.Series(labels, index=points.index, dtype=object),
        question=outlier_reasons(points, catalog),
    )
