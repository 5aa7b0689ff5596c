"""What the dashboard draws of the latency-against-load model, computed without Streamlit:

- the Benchmarks page: for one model and traffic shape, each configuration's fitted P99 TTFT and
  P99 TPOT curve (`LoadCurve.sample`), its measured levels (kept up, fell behind, or a burst that
  cannot tell; outliers with the reason the curve sets them aside), and its capacity at the page's
  targets (`ConfigurationCurve`); a user's own runs make a curve of their own, never pooled with
  the published levels;
- the Plan page: each pool of the recommended fleet on its configuration's curve, at its planned
  load per server (`PoolOperatingPoint`), so a reader sees how close to the knee a plan runs.

The pages only draw these (app/charts.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from fleetplan.planner.capacity.configuration import SERVER, with_servers
from fleetplan.planner.capacity.rules import points_for_class, points_for_model
from fleetplan.planner.curve.load_curve import LoadCurve, Metric, fit_curve
from fleetplan.planner.peak.results import Plan
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.services.benchmark_tables import series_label
from fleetplan.services.capacity import LatencyTargets, describe_shape
from fleetplan.services.outliers import level_outliers
from fleetplan.warehouse.queries import configuration_label

KEPT_UP = "kept up"
FELL_BEHIND = "fell behind"
CANNOT_TELL = "burst / cannot tell"
STATUSES = (KEPT_UP, FELL_BEHIND, CANNOT_TELL)


@dataclass(frozen=True, slots=True)
class MeasuredLevel:
    offered_rps: float
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    status: str  # one of STATUSES
    sustained_rps: float | None
    reason: str
    source_file: str
    outlier: str | None = None  # why a reader should question this level (the curve left it out)


@dataclass(frozen=True, slots=True)
class ConfigurationCurve:
    """One configuration's curve for one traffic shape, and its capacity at the targets."""

    configuration: str  # "1x h100-pcie", or "1x h100-pcie (your runs)"
    gpu_model: str
    ttft: list[tuple[float, float]]  # (offered req/s, P99 ms) along the curve
    tpot: list[tuple[float, float]]
    levels: list[MeasuredLevel]
    capacity_rps: float  # 0.0: no rate meets the targets (`note` says why)
    capacity_ttft_p99_ms: float | None  # predicted at capacity
    capacity_tpot_p99_ms: float | None
    saturation_rps: float | None
    note: str | None  # why no curve or no capacity, or what limits it
    # the highest rate the server kept up with: the curve is fitted to it, and past it predicted
    # by the queue form to the saturation the data shows (None: no stable level)
    measured_to_rps: float | None = None

    def parts(self, metric: Metric) -> tuple[list, list]:
        """The curve's samples up to the highest kept-up level, and past it (predicted)."""
        samples = self.samples(metric)
        if self.measured_to_rps is None:
            return samples, []
        edge = self.measured_to_rps * (1 + 1e-9)
        inside = [s for s in samples if s[0] <= edge]
        beyond = [s for s in samples if s[0] > edge]
        return inside, (inside[-1:] + beyond) if beyond else []

    def samples(self, metric: Metric) -> list[tuple[float, float]]:
        return self.ttft if metric == "ttft" else self.tpot


def _status(stable: bool | None) -> str:
    return {True: KEPT_UP, False: FELL_BEHIND}.get(stable, CANNOT_TELL)


def traffic_shapes(points: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The points of each traffic shape, by its description ("sharegpt", "512/128 tokens")."""
    groups = points.groupby(["dataset", "input_len", "output_len"], dropna=False, sort=True)
    return {describe_shape(rows): rows for _, rows in groups}


def configuration_curve(
    rows: pd.DataFrame,
    *,
    targets: LatencyTargets,
    curve: LoadCurve | None = None,
    server: str = "",
) -> ConfigurationCurve:
    """The curve of one configuration's rows (one traffic shape) and its capacity; `server`
    joins its label where the GPUs were measured with several servers."""
    curve = curve or fit_curve(rows)
    # the planner's capacity (`LoadCurve.interval`: to saturation by the queue form where the
    # targets hold at every stable level), so that the page and the plan agree
    estimate = curve.interval(
        target_ttft_p99_ms=targets.ttft_p99_ms, target_tpot_p99_ms=targets.tpot_p99_ms
    )
    first = rows.iloc[0]
    questioned = level_outliers(curve.levels)
    label = configuration_label(first["gpu_model"], first["gpu_count"])
    return ConfigurationCurve(
        configuration=series_label(
            f"{label} ({server})" if server else label, first.get("source_kind")
        ),
        gpu_model=str(first["gpu_model"]),
        ttft=curve.sample("ttft", extrapolate=True),
        tpot=curve.sample("tpot", extrapolate=True),
        levels=[
            MeasuredLevel(
                offered_rps=level.offered_rps,
                ttft_p99_ms=level.ttft_p99_ms,
                tpot_p99_ms=level.tpot_p99_ms,
                status=_status(level.stable),
                sustained_rps=level.sustained_rps,
                reason=level.load_reason,
                source_file=level.source_file,
                outlier=questioned.get((level.run_id, level.level_index)),
            )
            for level in curve.levels
        ],
        capacity_rps=estimate.capacity_rps,
        capacity_ttft_p99_ms=estimate.ttft_p99_ms,
        capacity_tpot_p99_ms=estimate.tpot_p99_ms,
        saturation_rps=curve.saturation_rps,
        note=estimate.words if estimate.capacity_rps > 0 else estimate.reason,
        measured_to_rps=None if curve.problem else curve.highest_stable_rps,
    )


def benchmark_curves(points: pd.DataFrame, *, targets: LatencyTargets) -> list[ConfigurationCurve]:
    """Each configuration's curve, from points of one model and one traffic shape; a user's own
    runs (`source_kind`) make a curve apart from the published ones."""
    apart = ["source_kind"] if "source_kind" in points.columns else []
    points = with_servers(points)
    servers = points.groupby(["gpu_model", "gpu_count"])[SERVER].nunique()
    return [
        configuration_curve(
            rows,
            targets=targets,
            server=str(server) if servers[(gpu, count)] > 1 else "",
        )
        for (gpu, count, server, *_), rows in points.groupby(
            ["gpu_model", "gpu_count", SERVER, *apart], sort=True
        )
    ]


def curve_notes(curves: list[ConfigurationCurve]) -> list[str]:
    """One line per configuration: its capacity at the targets and what limits it, or why none."""
    lines = []
    for curve in curves:
        if curve.capacity_rps > 0:
            line = f"{curve.configuration}: capacity {curve.capacity_rps:.2f} req/s per server"
            line += f" ({curve.note})" if curve.note else ""
        else:
            line = f"{curve.configuration}: no capacity ({curve.note})"
        if curve.saturation_rps is not None:
            line += f"; saturates at {curve.saturation_rps:.2f} req/s"
        lines.append(line)
    return lines


@dataclass(frozen=True, slots=True)
class PoolOperatingPoint:
    """A pool of the recommended fleet on its configuration's curve."""

    traffic_class: str
    configuration: str
    curve: ConfigurationCurve  # capacity at the class's targets, before the ceiling
    load_rps: float  # the pool's planned load per server
    predicted_ttft_p99_ms: float | None  # there (None: the curve says nothing there)
    predicted_tpot_p99_ms: float | None
    targets: dict[str, float | None] = field(default_factory=dict)  # "ttft"/"tpot" -> ms

    @property
    def label(self) -> str:
        return f"{self.traffic_class} on {self.configuration}"


def operating_points(
    plan: Plan, scenario: Scenario, points: pd.DataFrame
) -> list[PoolOperatingPoint]:
    """Each pool of the plan's recommended fleet at its load per server on its curve."""
    classes = {c.name: c for c in scenario.classes}
    out = []
    for pool in plan.recommended.pools:
        traffic = classes[pool.traffic_class]
        # each class on its own model's runs (a class may name its own)
        model_points = points_for_model(points, scenario.model_of(traffic))
        shape = with_servers(points_for_class(model_points, traffic))
        same_gpus = shape[
            (shape["gpu_model"] == pool.gpu_model) & (shape["gpu_count"] == pool.gpus_per_server)
        ]
        rows = same_gpus[same_gpus[SERVER] == pool.server]
        several = same_gpus[SERVER].nunique() > 1
        curve = configuration_curve(
            rows,
            targets=LatencyTargets.of(traffic),
            server=pool.server if several else "",
        )
        out.append(
            PoolOperatingPoint(
                traffic_class=pool.traffic_class,
                configuration=curve.configuration,
                curve=curve,
                load_rps=pool.rate_per_server_rps,
                predicted_ttft_p99_ms=pool.predicted_ttft_p99_ms,
                predicted_tpot_p99_ms=pool.predicted_tpot_p99_ms,
                targets={"ttft": traffic.ttft_p99_ms, "tpot": traffic.tpot_p99_ms},
            )
        )
    return out
