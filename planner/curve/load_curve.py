"""Latency against load for one configuration and traffic shape, and the capacity it implies.

From a configuration's measured load levels (one GPU model x GPUs per server, one model, one
traffic shape), `fit_curve` builds a `LoadCurve`: P99 TTFT and P99 TPOT as functions of the
request rate, and the saturation rate. How each level is judged (open-loop and closed-loop), the
saturation, and each metric's axis (monotone, PCHIP between the levels, the queue form toward
saturation) are in `fleetplan.planner.curve.levels`. Here:

- The curve runs through the stable levels only (repeats at one rate: their median), leaves out
  a level whose P99 is over twice every P99 at higher stable rates (`outliers`: a cold start, not
  load), and is each metric's `Axis` through the rest: monotone, exact at every measured level,
  below the lowest level that level's value.
- Between the highest stable level and saturation (`extrapolate=True`) the P99s follow the queue
  form, anchored at the highest stable level's value, and never above what the levels measured
  up there show: a level that did not keep up (too short to tell, a burst, fell behind) but
  proves a rate above the highest stable one (`sustained_rps`: a lower bound of the load it
  carried) bounds the P99 at every rate up to it, since latency does not fall as load rises
  (Lindley's recursion W' = max(0, W + S - A) never shortens a wait when arrivals come closer,
  and a continuous-batching server never serves a request faster beside more work). Both are
  upper estimates (the queue form's saturation is a lower bound): the curve takes the lower. The
  bound is the monotone fit (isotonic in log P99) through the stable levels and these, taken
  along the chord between the measured levels either side of the rate: a queue's wait grows as
  rho / (1 - rho), convex in the rate, so the true curve lies under the chord, and the upper
  level's true load is at least the rate it proves. It bounds a run like the one measured: a
  long steady stream near saturation can queue more than a short burst showed, so the planned
  value may reach the saturation, the interval's high end, and the utilisation ceiling is the
  headroom for it. Never at or past saturation. One stable level and a saturation above it
  make a curve of the queue form alone; otherwise a curve needs two.
- A closed loop's levels are also a curve in the concurrency they ran at (`predict_closed_loop`):
  throughput and P99s against log concurrency, monotone, a power law between the levels
  (`planner.curve.in_flight`), the plateau's included. There the P99 is a smooth function of what
  the client set; against throughput it is not (on the plateau throughput stops rising while latency
  climbs, and can even fall back: a vertical, non-monotone curve), so a held-out closed-loop
  level is predicted at its concurrency. By Little's law the two are one curve.

`capacity` is the highest rate whose predicted P99s meet the targets; `interval` the capacity
as an interval with its basis in words: low, what the stable levels prove; the planned value (to
saturation by the queue form where the targets hold at every stable level and a saturation is
known); high, the next stable level that failed the targets, or the saturation. `measured_rule`
is today's rule (the highest achieved throughput of a level meeting the targets), to compare.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property
from typing import Literal

import numpy as np
import pandas as pd

from fleetplan.core.stats import finite_number
from fleetplan.core.tabular import records
from fleetplan.planner.curve.in_flight import in_flight_axes
from fleetplan.planner.curve.levels import (
    CLOSED_LOOP_TTFT_FACTOR,
    Axis,
    CurveLevel,
    EnvelopeRate,
    curve_levels,
    envelope_axes,
    metric_axis,
    saturation_of,
    simulated,
)

MIN_STABLE_LEVELS = 2  # a curve needs two rates the server kept up with
Metric = Literal["ttft", "tpot"]
_EPS = 1e-9


class Basis(StrEnum):
    MEASURED = "measured"  # at a measured level (or below the lowest: its value)
    INTERPOLATED = "interpolated"  # between two measured levels
    EXTRAPOLATED = "extrapolated"  # above the highest stable level, toward saturation
    NONE = "none"  # nothing to predict from


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
    # The interval (`LoadCurve.interval`): what the stable levels prove, and the most the data
    # supports; None where not known. `words`: the basis in a phrase.
    rps_low: float | None = None
    rps_high: float | None = None
    words: str = ""


@dataclass(frozen=True)
class LoadCurve:
    """Latency against offered load for one configuration and traffic shape."""

    levels: tuple[CurveLevel, ...]
    saturation_rps: float | None
    problem: str | None
    _axes: dict[str, Axis | None]
    saturation_basis: str | None = None  # what the saturation rests on, in words
    # Above the highest stable level: the monotone fit through the stable levels and the P99s of
    # the levels measured above them (not stable), whose values bound the queue form (docstring)
    _beyond: dict[str, Axis | None] = field(default_factory=dict)
    # A closed loop's P99s and throughput against log concurrency (`in_flight_axes`)
    _in_flight: dict[str, Axis | None] = field(default_factory=dict)

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

    @cached_property
    def _measured(self) -> str:
        """What the levels are, in words: "simulated" where the serving model computed them all
        (an estimate, `levels.simulated`), else "measured"."""
        return "simulated" if simulated(self.levels) else "measured"

    @cached_property
    def _proving(self) -> str:
        return "showing" if simulated(self.levels) else "proving"

    @cached_property  # read on every prediction; the curve is frozen
    def stable_rates(self) -> list[float]:
        return sorted({level.offered_rps for level in self.levels if level.stable})

    @cached_property
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
            return Prediction(
                rate_rps,
                self._above(rate_rps, "ttft"),
                self._above(rate_rps, "tpot"),
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

    def predict_closed_loop(self, concurrency: float) -> Prediction | None:
        """P99 TTFT and TPOT of a closed loop at `concurrency` (requests in flight), between the
        lowest and highest concurrency measured; None outside them or without closed-loop levels
        (`in_flight.in_flight_axes`). `rate_rps` is the throughput the levels show there."""
        axes = self._in_flight
        if not axes or not math.isfinite(concurrency) or concurrency <= 0:
            return None
        x = math.log(concurrency)
        if not axes["rate"].rates[0] - _EPS <= x <= axes["rate"].rates[-1] + _EPS:
            return None
        values = {m: (axes[m].at(x) if axes.get(m) else None) for m in ("rate", "ttft", "tpot")}
        measured = any(abs(x - r) <= _EPS for r in axes["rate"].rates)
        return Prediction(
            values["rate"],
            values["ttft"],
            values["tpot"],
            Basis.MEASURED if measured else Basis.INTERPOLATED,
        )

    def _above(self, rate: float, metric: str) -> float | None:
        if self._axes[metric] is None:
            return None
        queued = self._axes[metric].beyond(rate, self.saturation_rps)
        above = self._beyond.get(metric)
        if above is None:
            return queued
        # the chord of the monotone fit between the measured levels either side of `rate`: an
        # upper estimate where the P99 is convex in the rate (module docstring)
        at = bisect_left(above.rates, rate - _EPS)
        if at == len(above.rates):
            return queued
        if at == 0 or above.rates[at] - rate <= _EPS:
            return min(queued, above.values[at])
        (r0, r1), (v0, v1) = above.rates[at - 1 : at + 1], above.values[at - 1 : at + 1]
        return min(queued, v0 + (v1 - v0) * (rate - r0) / (r1 - r0))

    def _value(self, metric: str, rate: float) -> float | None:
        axis = self._axes[metric]
        return axis.at(rate) if axis else None

    def _value_at(self, rate: float, metric: str) -> float | None:  # `_above`'s argument order
        return self._value(metric, rate)

    def capacity(
        self,
        *,
        target_ttft_p99_ms: float | None,
        target_tpot_p99_ms: float | None,
        extrapolate: bool = False,
    ) -> CapacityEstimate:
        """The highest rate whose predicted P99s meet the targets (a missing target is no
        constraint; a metric the data lacks never meets a target)."""
        targets = (target_ttft_p99_ms, target_tpot_p99_ms)
        if self.problem:
            return CapacityEstimate(0.0, Basis.NONE, self.problem, None, None)
        top = self.highest_stable_rps
        upper = top
        if extrapolate and self.saturation_rps is not None and self.saturation_rps > top:
            upper = self.saturation_rps * (1 - 1e-6)

        def meets(rate: float) -> bool:  # `predict` and `_meets`, on the targeted metrics alone
            if not math.isfinite(rate) or rate < 0:
                return False
            if rate > top + _EPS:
                saturation = self.saturation_rps
                if not extrapolate or saturation is None or rate >= saturation:
                    return False
                value = self._above
            else:
                value = self._value_at
            for metric, target in zip(("ttft", "tpot"), targets, strict=True):
                if target is not None:
                    predicted = value(rate, metric)
                    if predicted is None or predicted > target:
                        return False
            return True

        lowest = self.stable_rates[0]
        if not meets(lowest):
            return CapacityEstimate(0.0, Basis.NONE, _missed(self, *targets), None, None)
        rate = upper if meets(upper) else _bisect(meets, lowest, upper)
        predicted = self.predict(rate, extrapolate=extrapolate)
        reason = None
        if rate >= upper - _EPS and upper == top:
            reason = (
                f"the targets hold up to the highest rate the server kept up with ({top:g} req/s)"
                f"; beyond it nothing was {self._measured}"
            )
        return CapacityEstimate(
            rate, predicted.basis, reason, predicted.ttft_p99_ms, predicted.tpot_p99_ms
        )

    def interval(
        self, *, target_ttft_p99_ms: float | None, target_tpot_p99_ms: float | None
    ) -> CapacityEstimate:
        """The capacity as an interval (module docstring): `capacity_rps` the planned value,
        `rps_low` what the stable levels prove, `rps_high` the most the data supports (None:
        not known), `words` the basis."""
        targets = dict(target_ttft_p99_ms=target_ttft_p99_ms, target_tpot_p99_ms=target_tpot_p99_ms)
        proven = self.capacity(**targets)
        if self.problem or proven.capacity_rps <= 0:
            return replace(proven, rps_low=0.0, rps_high=0.0, words="none: " + str(proven.reason))
        low, top = proven.capacity_rps, self.highest_stable_rps
        if low < top - _EPS:  # the targets fail at a stable level above
            above = min(rate for rate in self.stable_rates if rate > low + _EPS)
            below = max(rate for rate in self.stable_rates if rate <= low + _EPS)
            words = (
                f"interpolated between kept-up levels at {below:.3g} and {above:.3g} req/s"
                if proven.basis is Basis.INTERPOLATED
                else f"{self._measured}: kept up at {below:.3g} req/s; the targets fail at "
                f"{above:.3g}"
            )
            return replace(proven, rps_low=low, rps_high=above, words=words)
        measured = f"{self._measured}: kept up at {top:.3g} req/s"
        closed = [lv for lv in self.levels if lv.stable and lv.concurrency is not None]
        if closed and abs(max(lv.offered_rps for lv in closed) - top) <= _EPS:
            measured = f"measured: {closed[-1].point_basis} at {top:.3g} req/s (its P99 TTFT "
            measured += f"taken x{CLOSED_LOOP_TTFT_FACTOR:g}, as open-loop arrivals would see it)"
        saturation = self.saturation_rps
        if saturation is None or saturation <= top + _EPS:
            words = f"{measured}; not {self._measured} above"
            if saturation is not None:
                words = f"{measured}; saturates there ({self.saturation_basis})"
            return replace(proven, rps_low=low, rps_high=saturation, words=words)
        if target_ttft_p99_ms is None and target_tpot_p99_ms is None:  # never plan at saturation
            words = f"{measured}; saturation {saturation:.3g} req/s ({self.saturation_basis})"
            return replace(proven, rps_low=low, rps_high=saturation, words=words)
        queued = self.capacity(**targets, extrapolate=True)
        words = (
            f"to saturation (queue form): {measured}, saturation {saturation:.3g} req/s "
            f"({self.saturation_basis})"
        )
        above = {rate for axis in self._beyond.values() if axis for rate in axis.rates}
        above = {rate for rate in above if rate > top + _EPS}
        if above:
            span = f"{min(above):.3g}" if len(above) == 1 else f"{min(above):.3g}-{max(above):.3g}"
            kind = "simulated level" if self._measured == "simulated" else "level"
            count = f"{len(above)} {kind}s" if len(above) > 1 else kind
            words += (
                f"; at most the P99s of the {count} above it that did not keep up "
                f"({self._proving} {span} req/s)"
            )
        return replace(queued, rps_low=low, rps_high=saturation, words=words, reason=None)

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
    closed = next(
        (
            level
            for level in curve.levels
            if level.stable
            and level.concurrency is not None
            and abs(level.offered_rps - first.rate_rps) <= _EPS
        ),
        None,
    )
    parts = []
    for metric, target in (("ttft", ttft), ("tpot", tpot)):
        name, value = f"P99 {metric.upper()}", getattr(first, f"{metric}_p99_ms")
        if target is not None and value is None:
            return str(curve.missing(metric))
        if target is not None and value > target:
            measured = getattr(closed, f"{metric}_p99_ms", None) if closed else None
            if metric == "ttft" and measured is not None and measured != value:
                # a closed loop's P99 TTFT on the rate axis is modelled: say so, and what it
                # measured (levels.CLOSED_LOOP_TTFT_FACTOR)
                parts.append(
                    f"{name} modelled at {value:.0f} ms against {target:g} ms (as open-loop "
                    f"arrivals at its throughput would see it: the {closed.point_basis} "
                    f"measured {measured:.1f} ms, x{CLOSED_LOOP_TTFT_FACTOR:g})"
                )
            else:
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


def fit_curve(
    levels: pd.DataFrame | list[dict], *, envelope: EnvelopeRate | None = None
) -> LoadCurve:
    """The curve of one configuration and traffic shape, from its rows of `benchmark_points` (a
    table, or its rows as `tabular.records` gives them); `envelope`, where known, caps the
    saturation (or stands for it where the data shows none)."""
    measured = curve_levels(levels)
    stable = [level for level in measured if level.stable]
    rates = sorted({level.offered_rps for level in stable})
    saturation, words = saturation_of(measured, rates, envelope)
    # one stable level and a saturation above it: the queue form alone (M/M/1 from that level)
    needed = 1 if rates and saturation is not None and saturation > rates[-1] else MIN_STABLE_LEVELS
    if len(rates) < needed:
        problem = (
            f"too few stable levels ({len(rates)}): a curve needs the server to have kept up at "
            f"{MIN_STABLE_LEVELS} rates at least"
        )
        no_axes = {"ttft": None, "tpot": None}
        return LoadCurve(
            tuple(measured), saturation, problem, no_axes, words, {}, in_flight_axes(measured)
        )
    axes = {metric: metric_axis(stable, metric, rates, needed) for metric in ("ttft", "tpot")}
    beyond = envelope_axes(measured, rates, saturation, needed)
    in_flight = in_flight_axes(measured)
    return LoadCurve(tuple(measured), saturation, None, axes, words, beyond, in_flight)


def measured_rule(
    levels: pd.DataFrame, *, target_ttft_p99_ms: float | None, target_tpot_p99_ms: float | None
) -> float:
    """Today's rule: the highest achieved throughput among complete levels meeting the targets."""
    best = 0.0
    for row in records(levels):
        if not bool(row.get("complete", True)) or (row.get("failed") or 0):
            continue
        ttft, tpot = (finite_number(row.get(f"{metric}_p99_ms")) for metric in ("ttft", "tpot"))
        predicted = Prediction(0.0, ttft, tpot, Basis.MEASURED)
        throughput = finite_number(row.get("request_throughput_rps"))
        if throughput and _meets(predicted, target_ttft_p99_ms, target_tpot_p99_ms):
            best = max(best, throughput)
    return best
