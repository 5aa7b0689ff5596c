"""The model rule (`capacity_rule: "model"`, the default): a server's capacity for a class is the
highest rate whose P99 TTFT and P99 TPOT its configuration's latency-against-load curve
(`load_model.fit_curve`, stable levels only, no extrapolation) predicts within the class's
targets; for a class without targets, the highest rate the server kept up with. Times the
utilisation ceiling, as headroom.

Where the curve cannot say (too few stable levels, or no curve for a metric the class targets),
the capacity is today's measured rule, and its basis says so and why ("measured rule: too few
stable levels (1): ..."): never silently.

Curves are fitted once per (configuration, traffic shape) and capacities computed once per
(configuration, traffic shape, targets): classes that share a shape and targets share the work.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import pandas as pd

from fleetplan.planner.levels import Capacity, Configuration, Level, level_from_row
from fleetplan.planner.load_model import Basis, CapacityEstimate, LoadCurve, fit_curve
from fleetplan.planner.scenario import TrafficClass

Shape = tuple[object, object, object]  # (dataset, input_len, output_len); None where absent
MODEL = "model"
MODEL_BASIS = {Basis.MEASURED: "at a measured level", Basis.INTERPOLATED: "interpolated"}


@dataclass(frozen=True, slots=True)
class Fitted:
    """One configuration's curve for one traffic shape, the rows it was fitted on, and the
    capacities asked of it so far (by targets)."""

    curve: LoadCurve
    rows: pd.DataFrame
    estimates: dict[tuple[float | None, float | None], CapacityEstimate] = field(
        default_factory=dict
    )

    def estimate(self, ttft_p99_ms: float | None, tpot_p99_ms: float | None) -> CapacityEstimate:
        key = (ttft_p99_ms, tpot_p99_ms)
        if key not in self.estimates:
            self.estimates[key] = self.curve.capacity(
                ttft_p99_ms=ttft_p99_ms, tpot_p99_ms=tpot_p99_ms
            )
        return self.estimates[key]

    def resting_level(self, rate_rps: float) -> Level:
        """The highest stable level at or under `rate_rps`: what a capacity found on the curve
        rests on (its tokens, power and source file)."""
        stable = [
            level
            for level in self.curve.levels
            if level.stable and level.offered_rps <= rate_rps * (1 + 1e-9)
        ]
        top = max(stable, key=lambda level: (level.offered_rps, level.run_id))
        rows = self.rows[
            (self.rows["run_id"].astype(str) == top.run_id)
            & (self.rows["level_index"].fillna(0).astype(int) == top.level_index)
        ]
        return level_from_row(rows.iloc[0].to_dict(), stable=True, load_reason=top.load_reason)


class Curves:
    """The curves of one model's configurations, fitted on first use per traffic shape."""

    def __init__(self) -> None:
        self._by_shape: dict[Shape, dict[Configuration, Fitted]] = {}

    def for_points(self, class_points: pd.DataFrame) -> dict[Configuration, Fitted]:
        """The curves of the configurations in `class_points` (one traffic shape)."""
        shape = shape_of(class_points)
        if shape not in self._by_shape:
            self._by_shape[shape] = {
                Configuration(str(gpu), int(count)): Fitted(fit_curve(rows), rows)
                for (gpu, count), rows in class_points.groupby(["gpu_model", "gpu_count"])
            }
        return self._by_shape[shape]


def shape_of(points: pd.DataFrame) -> Shape:
    """The traffic shape of points of one shape (`capacity.points_for_class` makes sure)."""
    if points.empty:
        return (None, None, None)
    first = points.iloc[0]
    values = [first.get(name) for name in ("dataset", "input_len", "output_len")]
    return tuple(None if v is None or pd.isna(v) else v for v in values)  # type: ignore[return-value]


def why_not(curve: LoadCurve, traffic: TrafficClass) -> str | None:
    """Why the curve cannot give this class a capacity (None when it can)."""
    if curve.problem:
        return curve.problem
    for metric, target in (("ttft", traffic.ttft_p99_ms), ("tpot", traffic.tpot_p99_ms)):
        if target is not None and curve.missing(metric):
            return curve.missing(metric)
    return None


def model_capacity(
    measured: Capacity, fitted: Fitted | None, traffic: TrafficClass, max_utilization: float
) -> Capacity:
    """The model rule's capacity, from the measured rule's (its fallback) and the curve."""
    if fitted is None:  # no measured level at all: the measured rule says so
        return measured
    curve = fitted.curve
    problem = why_not(curve, traffic)
    if problem:
        return replace(measured, basis=f"measured rule: {problem}", curve=curve)
    estimate = fitted.estimate(traffic.ttft_p99_ms, traffic.tpot_p99_ms)
    if not estimate.capacity_rps > 0 or not math.isfinite(estimate.capacity_rps):
        return replace(
            measured,
            capacity_rps=0.0,
            level=None,
            reason=estimate.reason,
            basis=MODEL,
            before_ceiling_rps=0.0,
            curve=curve,
        )
    return replace(
        measured,
        capacity_rps=estimate.capacity_rps * max_utilization,
        level=fitted.resting_level(estimate.capacity_rps),
        reason=estimate.reason,
        basis=f"{MODEL}: {MODEL_BASIS.get(estimate.basis, estimate.basis.value)}",
        before_ceiling_rps=estimate.capacity_rps,
        curve=curve,
    )
