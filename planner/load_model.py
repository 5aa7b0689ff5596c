"""Latency against load for one configuration and traffic shape, and the capacity it implies.

From a configuration's measured load levels (one GPU model x GPUs per server, one model, one
traffic shape), `fit_curve` builds a `LoadCurve`: P99 TTFT and P99 TPOT as functions of the
offered request rate, and the saturation rate. The form:

- Each level is judged first (`fleetplan.core.load`): the rate it sustained with the drain left
  out, and whether the server kept up (stable), fell behind, or could not tell (a burst too short
  for a steady state). Rows of `benchmark_points` carry that judgement already (estimates made in
  the context of their configuration); other rows are judged here against the quickest level.
- The curve runs through the stable levels only (repeats at one rate: their median), leaves out
  a level whose P99 is over twice every P99 at higher stable rates (`outliers`: a cold start, not
  load), is made monotone (a P99 never falls as load rises: isotonic regression of log P99), and
  is interpolated between
  them by a monotone cubic (PCHIP) in (rate, log P99): exact at every measured level, never
  overshooting between them. Below the lowest level it is that level's value (latency does not
  rise as load falls). Above the highest stable level it predicts nothing unless asked.
- The saturation rate is the highest rate a level that fell behind sustained (a server that fell
  behind worked at its limit), and never below the highest rate it kept up with; None when no
  level fell behind (saturation was not reached in the data).
- Asked to extrapolate (`extrapolate=True`), between the highest stable level and the saturation
  rate the P99s grow like a queue's waiting time, as 1 / (saturation - rate) from that level's
  values; never at or past the saturation rate.

`capacity` is the highest rate whose predicted P99s meet the targets, `measured_rule` today's rule
(the highest achieved throughput among levels that meet the targets) for comparison.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

import numpy as np
import pandas as pd

from fleetplan.core.load import LevelLoad, LoadBasis, judge_row, reference_of
from fleetplan.core.stats import finite_number
from fleetplan.core.tabular import records
from fleetplan.planner.monotone import Pchip, isotonic

MIN_STABLE_LEVELS = 2  # a curve needs two rates the server kept up with
OUTLIER_FACTOR = 2.0  # a P99 over twice every P99 at higher stable rates: not load
Metric = Literal["ttft", "tpot"]
_EPS = 1e-9


class Basis(StrEnum):
    MEASURED = "measured"  # at a measured level (or below the lowest: its value)
    INTERPOLATED = "interpolated"  # between two measured levels
    EXTRAPOLATED = "extrapolated"  # above the highest stable level, toward saturation
    NONE = "none"  # nothing to predict from


@dataclass(frozen=True, slots=True)
class CurveLevel:
    """One measured level of the configuration, as the curve sees it."""

    run_id: str
    level_index: int
    source_file: str
    offered_rps: float
    sustained_rps: float | None
    stable: bool | None
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    load_reason: str


@dataclass(frozen=True, slots=True)
class Prediction:
    rate_rps: float
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    basis: Basis


@dataclass(frozen=True, slots=True)
class CapacityEstimate:
    capacity_rps: float  # 0.0 when no rate meets the targets
    basis: Basis  # NONE when no rate meets the targets or the curve cannot be fit
    reason: str | None  # why none, or what limits it
    ttft_p99_ms: float | None  # predicted at capacity_rps
    tpot_p99_ms: float | None


class _Axis:
    """One metric's monotone curve through the stable levels (isotonic in log P99)."""

    def __init__(self, rates: list[float], values: list[float]):
        self.rates = rates
        logs = isotonic([math.log(value) for value in values])
        self.values = [math.exp(log) for log in logs]
        self._spline = Pchip(rates, logs) if len(rates) > 1 else None

    def at(self, rate: float) -> float:
        if rate <= self.rates[0] or self._spline is None:
            return self.values[0]
        if rate >= self.rates[-1]:
            return self.values[-1]
        return math.exp(self._spline(rate))


@dataclass(frozen=True)
class LoadCurve:
    """Latency against offered load for one configuration and traffic shape."""

    levels: tuple[CurveLevel, ...]
    saturation_rps: float | None
    problem: str | None
    _axes: dict[str, _Axis | None]

    def missing(self, metric: Metric) -> str | None:
        """Why the curve has nothing for `metric`, or None when it has."""
        if self.problem:
            return self.problem
        if self._axes[metric] is not None:
            return None
        return (
            f"P99 {metric.upper()} is missing at a stable level, or too few stable levels are "
            "left once outliers (a P99 over twice those at higher rates) are set aside"
        )

    @property
    def stable_rates(self) -> list[float]:
        return sorted({level.offered_rps for level in self.levels if level.stable})

    @property
    def highest_stable_rps(self) -> float | None:
        rates = self.stable_rates
        return rates[-1] if rates else None

    def predict(self, rate_rps: float, *, extrapolate: bool = False) -> Prediction | None:
        """P99 TTFT and TPOT at `rate_rps`; None where the curve says nothing (above the highest
        stable level unless `extrapolate`, and never at or past saturation)."""
        if self.problem or not math.isfinite(rate_rps) or rate_rps < 0:
            return None
        top = self.highest_stable_rps
        past_saturation = self.saturation_rps is not None and rate_rps >= self.saturation_rps
        if past_saturation and rate_rps > top + _EPS:
            return None
        if rate_rps > top + _EPS:
            if not extrapolate or self.saturation_rps is None:
                return None
            grow = (self.saturation_rps - top) / (self.saturation_rps - rate_rps)
            return Prediction(
                rate_rps,
                *(self._value(m, top) * grow if self._axes[m] else None for m in ("ttft", "tpot")),
                Basis.EXTRAPOLATED,
            )
        measured = any(abs(rate_rps - r) <= _EPS for r in self.stable_rates)
        measured = measured or rate_rps <= self.stable_rates[0]
        return Prediction(
            rate_rps,
            self._value("ttft", rate_rps),
            self._value("tpot", rate_rps),
            Basis.MEASURED if measured else Basis.INTERPOLATED,
        )

    def _value(self, metric: str, rate: float) -> float | None:
        axis = self._axes[metric]
        return axis.at(rate) if axis else None

    def capacity(
        self,
        *,
        ttft_p99_ms: float | None,
        tpot_p99_ms: float | None,
        extrapolate: bool = False,
    ) -> CapacityEstimate:
        """The highest rate whose predicted P99s meet the targets (a missing target is no
        constraint; a metric the data lacks never meets a target)."""
        if self.problem:
            return CapacityEstimate(0.0, Basis.NONE, self.problem, None, None)
        top = self.highest_stable_rps
        upper = top
        if extrapolate and self.saturation_rps is not None and self.saturation_rps > top:
            upper = self.saturation_rps * (1 - 1e-6)

        def meets(rate: float) -> bool:
            predicted = self.predict(rate, extrapolate=extrapolate)
            return predicted is not None and _meets(predicted, ttft_p99_ms, tpot_p99_ms)

        lowest = self.stable_rates[0]
        if not meets(lowest):
            return CapacityEstimate(
                0.0, Basis.NONE, _missed(self, ttft_p99_ms, tpot_p99_ms), None, None
            )
        rate = upper if meets(upper) else _bisect(meets, lowest, upper)
        predicted = self.predict(rate, extrapolate=extrapolate)
        reason = None
        if rate >= upper - _EPS and upper == top:
            reason = (
                f"the targets hold up to the highest rate the server kept up with ({top:g} req/s)"
                "; beyond it nothing was measured"
            )
        return CapacityEstimate(
            rate, predicted.basis, reason, predicted.ttft_p99_ms, predicted.tpot_p99_ms
        )

    def sample(
        self, metric: Metric, *, points: int = 60, extrapolate: bool = False
    ) -> list[tuple[float, float]]:
        """(rate, P99 ms) along the curve, for plots."""
        if self.problem or self._axes[metric] is None:
            return []
        low = self.stable_rates[0]
        high = self.highest_stable_rps
        if extrapolate and self.saturation_rps is not None and self.saturation_rps > high:
            high = high + (self.saturation_rps - high) * 0.95
        out = []
        for rate in np.linspace(low, high, points):
            predicted = self.predict(float(rate), extrapolate=extrapolate)
            value = None if predicted is None else getattr(predicted, f"{metric}_p99_ms")
            if value is not None:
                out.append((float(rate), float(value)))
        return out


def _meets(predicted: Prediction, ttft: float | None, tpot: float | None) -> bool:
    for target, value in ((ttft, predicted.ttft_p99_ms), (tpot, predicted.tpot_p99_ms)):
        if target is not None and (value is None or value > target):
            return False
    return True


def _missed(curve: LoadCurve, ttft: float | None, tpot: float | None) -> str:
    first = curve.predict(curve.stable_rates[0])
    parts = []
    for metric, target, value in (
        ("ttft", ttft, first.ttft_p99_ms),
        ("tpot", tpot, first.tpot_p99_ms),
    ):
        name = f"P99 {metric.upper()}"
        if target is not None and value is None:
            return str(curve.missing(metric))
        if target is not None and value > target:
            parts.append(f"{name} is {value:.0f} ms against {target:g} ms")
    return f"even at its lowest stable level ({first.rate_rps:g} req/s): " + "; ".join(parts)


def _bisect(meets, low: float, high: float) -> float:
    """The highest rate in [low, high] that meets the targets (meets(low) is True)."""
    for _ in range(60):
        middle = (low + high) / 2
        low, high = (middle, high) if meets(middle) else (low, middle)
        if high - low <= 1e-6 * max(high, 1.0):
            break
    return low


def _curve_levels(frame: pd.DataFrame) -> list[CurveLevel]:
    rows = [
        row
        for row in records(frame)
        if finite_number(row.get("offered_rate_rps"))
        and bool(row.get("complete", True))
        and not (row.get("failed") or 0)
    ]
    reference = reference_of(rows)
    levels = []
    for row in rows:
        load = _stored(row) or judge_row(row, reference=reference)
        levels.append(
            CurveLevel(
                run_id=str(row.get("run_id", "")),
                level_index=int(row.get("level_index") or 0),
                source_file=str(row.get("source_file", "")),
                offered_rps=float(row["offered_rate_rps"]),
                sustained_rps=load.sustained_rps,
                stable=load.stable,
                ttft_p99_ms=finite_number(row.get("ttft_p99_ms")),
                tpot_p99_ms=finite_number(row.get("tpot_p99_ms")),
                load_reason=load.reason,
            )
        )
    return sorted(levels, key=lambda level: (level.offered_rps, level.run_id))


def _stored(row: dict) -> LevelLoad | None:
    """The judgement the row already carries (`benchmark_points` judges every level, estimates
    in the context of their configuration), so that the table and the curve agree; None for rows
    without one, which are judged here."""
    basis = row.get("load_basis")
    if not isinstance(basis, str) or basis not in set(LoadBasis):
        return None
    stable = row.get("stable")
    return LevelLoad(
        finite_number(row.get("sustained_rps")),
        None if stable is None or pd.isna(stable) else bool(stable),
        LoadBasis(basis),
        str(row.get("load_reason") or ""),
    )


def fit_curve(levels: pd.DataFrame) -> LoadCurve:
    """The curve of one configuration and traffic shape, from its rows of `benchmark_points`."""
    measured = _curve_levels(levels)
    stable = [level for level in measured if level.stable]
    fell_behind = [level for level in measured if level.stable is False and level.sustained_rps]
    rates = sorted({level.offered_rps for level in stable})
    saturation = None
    if fell_behind:
        saturation = max(level.sustained_rps for level in fell_behind)
        saturation = max(saturation, rates[-1] if rates else 0.0)
    if len(rates) < MIN_STABLE_LEVELS:
        problem = (
            f"too few stable levels ({len(rates)}): a curve needs the server to have kept up at "
            f"{MIN_STABLE_LEVELS} rates at least"
        )
        return LoadCurve(tuple(measured), saturation, problem, {"ttft": None, "tpot": None})
    axes = {metric: _axis(stable, metric, rates) for metric in ("ttft", "tpot")}
    return LoadCurve(tuple(measured), saturation, None, axes)


def _axis(stable: list[CurveLevel], metric: str, rates: list[float]) -> _Axis | None:
    values = []
    for rate in rates:
        at_rate = [
            getattr(level, f"{metric}_p99_ms")
            for level in stable
            if level.offered_rps == rate and getattr(level, f"{metric}_p99_ms")
        ]
        if not at_rate:
            return None  # a gap in a metric: no curve for it rather than a guess
        values.append(float(statistics.median(at_rate)))
    kept = [i for i in range(len(rates)) if i not in outliers(values)]
    if len(kept) < MIN_STABLE_LEVELS:
        return None  # what is left after the outliers is too little for a curve
    return _Axis([rates[i] for i in kept], [values[i] for i in kept])


def outliers(values: list[float]) -> set[int]:
    """Levels whose P99 is over `OUTLIER_FACTOR` times every P99 at a higher stable rate: latency
    does not fall as load rises, so such a level measured something else (a cold start, a
    hiccup), and the curve leaves it out rather than carry it to every rate."""
    found = set()
    for i, value in enumerate(values[:-1]):
        if value > OUTLIER_FACTOR * max(values[i + 1 :]):
            found.add(i)
    return found


def measured_rule(
    levels: pd.DataFrame, *, ttft_p99_ms: float | None, tpot_p99_ms: float | None
) -> float:
    """Today's rule: the highest achieved throughput among complete levels meeting the targets."""
    best = 0.0
    for row in records(levels):
        if not bool(row.get("complete", True)) or (row.get("failed") or 0):
            continue
        predicted = Prediction(
            0.0,
            finite_number(row.get("ttft_p99_ms")),
            finite_number(row.get("tpot_p99_ms")),
            Basis.MEASURED,
        )
        throughput = finite_number(row.get("request_throughput_rps"))
        if throughput and _meets(predicted, ttft_p99_ms, tpot_p99_ms):
            best = max(best, throughput)
    return best
