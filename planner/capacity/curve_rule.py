"""The curve rule (`capacity_rule: "model"`, the default; "model" is the latency model): a server's
capacity for a class comes from its configuration's latency-against-load curve
(`load_model.fit_curve`) as an interval (`LoadCurve.interval`): `rps_low`, the highest rate the
stable levels prove within the class's targets (measured or interpolated); `capacity_rps`, the
planned value (the same, or, where the targets hold at every stable level and a saturation is
known, the highest rate whose P99s the queue form predicts within them); `rps_high`, the next
stable level that failed the targets, or the saturation (None: not known). All three times the
utilisation ceiling, as headroom; `basis` says which ("model: measured: kept up at 4 req/s; not
measured above", "model: interpolated between kept-up levels at 1 and 4 req/s", "model: to
saturation (queue form): ...").

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

from fleetplan.core.tabular import records
from fleetplan.planner.capacity.configuration import (
    CONFIG_KEYS,
    CURVE_COLUMNS,
    LEVEL_COLUMNS,
    MEASURED_RULE,
    Capacity,
    Configuration,
    LazyCurve,
    Level,
    estimate_of,
    level_from_row,
    with_servers,
)
from fleetplan.planner.capacity.measured_rule import best_p99s
from fleetplan.planner.curve.load_curve import CapacityEstimate, LoadCurve
from fleetplan.planner.scenario.scenario import TrafficClass

TargetPair = tuple[float | None, float | None]  # P99 TTFT, P99 TPOT (ms); None: no target
Shape = tuple[object, object, object]  # (dataset, input_len, output_len); None where absent
CURVE_RULE = "model"  # the public value of `capacity_rule` for this rule (docs/definitions.md)


@dataclass(frozen=True, slots=True)
class Fitted:
    """One configuration's curve for one traffic shape (fitted on its rows, which also carry
    what a capacity resting on one of them reports), and the capacities asked of it so far (by
    targets), each with the level it rests on."""

    source: LazyCurve  # the curve, fitted on first use
    best: tuple[float | None, float | None]  # lowest P99 TTFT and TPOT measured (for messages)
    answers: dict[TargetPair, tuple[CapacityEstimate, Level | None]] = field(default_factory=dict)
    _rows: dict[tuple[str, int], dict] = field(default_factory=dict)  # its rows by level
    _levels: dict[tuple[str, int], Level] = field(default_factory=dict)

    @property
    def curve(self) -> LoadCurve:
        return self.source.get()

    def capacity(
        self, ttft_p99_ms: float | None, tpot_p99_ms: float | None
    ) -> tuple[CapacityEstimate, Level | None]:
        """The curve's capacity at these targets and the level it rests on (None: no capacity);
        computed once per targets: classes that share them share the answer."""
        key = (ttft_p99_ms, tpot_p99_ms)
        if key not in self.answers:
            estimate = self.curve.interval(
                target_ttft_p99_ms=ttft_p99_ms, target_tpot_p99_ms=tpot_p99_ms
            )
            level = None
            if estimate.capacity_rps > 0 and math.isfinite(estimate.capacity_rps):
                level = self._resting_level(estimate.capacity_rps)
            self.answers[key] = (estimate, level)
        return self.answers[key]

    def _resting_level(self, rate_rps: float) -> Level:
        """The highest stable level at or under `rate_rps`: what a capacity found on the curve
        rests on (its tokens, power and source file)."""
        stable = [
            level
            for level in self.curve.levels
            if level.stable and level.offered_rps <= rate_rps * (1 + 1e-9)
        ]
        top = max(stable, key=lambda level: (level.offered_rps, level.run_id))
        key = (top.run_id, top.level_index)
        if key not in self._levels:  # several targets often rest on one level
            if not self._rows:
                self._rows.update(
                    {(str(row["run_id"]), _level_index(row)): row for row in self.source.rows}
                )
            row = self._rows[key]
            self._levels[key] = level_from_row(row, stable=True, load_reason=top.load_reason)
        return self._levels[key]


class Curves:
    """The curves of one model's configurations, fitted on first use per traffic shape."""

    def __init__(self) -> None:
        self._by_shape: dict[Shape, dict[Configuration, Fitted]] = {}

    def for_points(self, class_points: pd.DataFrame) -> dict[Configuration, Fitted]:
        """The curves of the configurations in `class_points` (one traffic shape)."""
        shape = shape_of(class_points)
        if shape not in self._by_shape:
            class_points = with_servers(class_points)
            best = best_p99s(class_points)
            self._by_shape[shape] = {
                Configuration.of(*key): Fitted(LazyCurve(rows), best.get(key, (None, None)))
                for key, rows in _by_configuration(class_points).items()
            }
        return self._by_shape[shape]


# What a configuration's curve is fitted on, and what a capacity resting on a level reports.
_COLUMNS = tuple(dict.fromkeys((*CURVE_COLUMNS, *LEVEL_COLUMNS, *CONFIG_KEYS)))


def _by_configuration(points: pd.DataFrame) -> dict[tuple, list[dict]]:
    """`_COLUMNS` of `points`, row by row, grouped by configuration (`CONFIG_KEYS`) in one
    conversion: as `groupby(CONFIG_KEYS)` groups them (a row with a key unknown in none)."""
    narrow = points[[c for c in _COLUMNS if c in points]]
    groups: dict[tuple, list[dict]] = {}
    for row in records(narrow):
        key = tuple(row[c] for c in CONFIG_KEYS)
        if not any(v is None or pd.isna(v) for v in key):
            groups.setdefault(key, []).append(row)
    return groups


def _level_index(row: dict) -> int:
    value = row.get("level_index")
    return 0 if value is None or pd.isna(value) else int(value)


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


def curve_capacity(
    traffic: TrafficClass,
    configuration: Configuration,
    fitted: Fitted | None,
    max_utilization: float,
) -> Capacity | None:
    """The model rule's capacity of one configuration for one class; None where the curve
    cannot say (no levels, or `why_not`): the caller falls back to the measured rule."""
    if fitted is None or why_not(fitted.curve, traffic):
        return None
    estimate, level = fitted.capacity(traffic.ttft_p99_ms, traffic.tpot_p99_ms)
    common = {
        "traffic_class": traffic.name,
        "configuration": configuration,
        "reason": estimate.reason,
        "best_ttft_p99_ms": fitted.best[0],
        "best_tpot_p99_ms": fitted.best[1],
        "curve": fitted.source,
    }
    if level is None:
        return Capacity(
            capacity_rps=0.0,
            level=None,
            basis=CURVE_RULE,
            before_ceiling_rps=0.0,
            rps_low=0.0,
            rps_high=0.0,
            **common,
        )
    high = estimate.rps_high
    low = estimate.rps_low or 0.0
    band = estimate_band(level)
    if band is not None:  # an estimate: its interval is the validation's band around it
        low = estimate.capacity_rps / (1 + band[1])
        high = estimate.capacity_rps / max(1 + band[0], 1e-9)
    return Capacity(
        capacity_rps=estimate.capacity_rps * max_utilization,
        level=level,
        basis=f"{CURVE_RULE}: {estimate.words}",
        before_ceiling_rps=estimate.capacity_rps,
        rps_low=low * max_utilization,
        rps_high=None if high is None else high * max_utilization,
        **common,
    )


def estimate_band(level: Level) -> tuple[float, float] | None:
    """An estimated level's band on saturation (predicted / measured - 1, P10 and P90); None
    for a measured level or one without a band."""
    error = estimate_of(level).get("error") or {}
    band = error.get("saturation")
    if not band or len(band) != 2:
        return None
    return float(band[0]), float(band[1])


def fallback(measured: Capacity, fitted: Fitted | None, traffic: TrafficClass) -> Capacity:
    """The measured rule's capacity where the model rule has none, labelled with why."""
    if fitted is None:  # no measured level at all: the measured rule says so
        return measured
    return replace(
        measured,
        basis=f"{MEASURED_RULE}: {why_not(fitted.curve, traffic)}",
        curve=fitted.source,
    )
