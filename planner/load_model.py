"""Latency against load for one configuration and traffic shape, and the capacity it implies.

From a configuration's measured load levels (one GPU model x GPUs per server, one model, one
traffic shape), `fit_curve` builds a `LoadCurve`: P99 TTFT and P99 TPOT as functions of the
request rate, and the saturation rate. The form:

- Each open-loop level (a rate) is judged first (`fleetplan.core.load`): the rate it sustained
  or proves, and whether the server kept up (stable), fell behind, or could not tell. Rows of
  `benchmark_points` carry that judgement already; other rows are judged here against the
  quickest level.
- Closed-loop levels (a concurrency, no rate: AIPerf, GenAI-Perf, LLMPerf, InferenceX, ML.ENERGY)
  join the curve as (throughput, P99) points, their basis said ("closed-loop: concurrency 16").
  By Little's law a closed loop's throughput is concurrency / time in the system: below the knee
  the time barely grows and throughput rises with concurrency; past it the server is saturated
  and only the time grows. A step whose throughput rose by under `PLATEAU_EFFICIENCY` (a quarter)
  of the concurrency's rise is on the plateau: that level and those above it are not on the
  curve, and the sweep's highest throughput is its saturation. (A closed loop sends no bursts: at
  the same rate its P99s are at most a Poisson stream's; the curve says which basis each point
  has.)
- The curve runs through the stable levels only (repeats at one rate: their median), leaves out
  a level whose P99 is over twice every P99 at higher stable rates (`outliers`: a cold start, not
  load), is made monotone (isotonic regression of log P99), and is interpolated between them by
  a monotone cubic (PCHIP) in (rate, log P99): exact at every measured level. Below the lowest
  level it is that level's value.
- Saturation, from what the data shows: the most any level that did not keep up proves the
  server completes per second (a server that fell behind, or a burst, worked at its limit: the
  rate it proves is a lower bound of its saturation, `fleetplan.core.load`), the throughput
  plateau of a closed-loop sweep, else an optional physical bound given by the caller (labelled
  as such, e.g. "bounded by KV cache"); never below the highest rate it kept up with. A bound
  lower than what the data shows caps it (and says so).
- Between the highest stable level and saturation (`extrapolate=True`) the P99s follow a queue's
  form, P99(rate) = a + b x rho / (1 - rho) with rho = rate / saturation: the waiting time of a
  single-server queue grows as rho / (1 - rho) (M/M/1; M/G/1 by Pollaczek-Khinchine, the same
  shape with another constant), and a P99 is a fixed quantile of it plus the service part a.
  a, b >= 0 are fitted by least squares to the stable levels (two at least). With one, or a fit
  with no growth, b = `ONE_LEVEL_SLOPE` x a = a / 4: in a continuous-batching server most of a
  P99 is service (prefill, decode), not waiting, so the pure M/M/1 form (b = a, the whole P99 a
  queue's) overshoots; 1/4 was chosen on the held-out levels of benchmarks/capacity_model.py
  (io.net and InferenceX: b = a hit 19 of 36 io.net levels within 25 %, a / 4 23), the same
  data as its table, so that table is no independent check of it. The form is anchored at the
  highest stable level's value (continuous there). Where levels too short to tell were measured
  between the highest stable level and saturation, their P99s (measured, not proven steady) join
  the curve there first, and the queue form starts from the highest of them. Never at or past
  saturation. One stable level
  and a saturation above it make a curve of the queue form alone; otherwise a curve needs two.

`capacity` is the highest rate whose predicted P99s meet the targets; `interval` gives the
capacity as an interval with its basis in words: low, what the stable levels prove (measured or
interpolated); the planned value (to saturation by the queue form where the targets hold at
every stable level and a saturation is known); high, the next stable level that failed the
targets, or the saturation itself. `measured_rule` is today's rule (the highest achieved
throughput among levels that meet the targets), for comparison.
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass, field, replace
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
PLATEAU_EFFICIENCY = 0.25  # a closed-loop step that gained under 1/4 of its concurrency's rise
ONE_LEVEL_SLOPE = 0.25  # b = a / 4 where the stable levels cannot fit b (module docstring)
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
    concurrency: int | None = None  # a closed-loop level: offered_rps is its throughput

    @property
    def point_basis(self) -> str:
        """How the level sits on the curve, in words."""
        if self.concurrency is not None:
            return f"closed-loop: concurrency {self.concurrency}"
        return f"open-loop: {self.offered_rps:g} req/s offered"


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


class _Axis:
    """One metric's monotone curve through the stable levels (isotonic in log P99), and its
    queue form above the highest of them (module docstring)."""

    def __init__(self, rates: list[float], values: list[float]):
        self.rates = rates
        logs = isotonic([math.log(value) for value in values])
        self.values = [math.exp(log) for log in logs]
        self._spline = Pchip(rates, logs) if len(rates) > 1 else None
        self._slopes: dict[float, float] = {}

    def at(self, rate: float) -> float:
        if rate <= self.rates[0] or self._spline is None:
            return self.values[0]
        if rate >= self.rates[-1]:
            return self.values[-1]
        return math.exp(self._spline(rate))

    def beyond(self, rate: float, saturation: float) -> float:
        """The queue form above the highest stable rate, anchored at its value."""
        slope = self.slope(saturation)
        return self.values[-1] + slope * (
            _load(rate, saturation) - _load(self.rates[-1], saturation)
        )

    def slope(self, saturation: float) -> float:
        """b of P99 = a + b rho / (1 - rho), fitted to the stable levels (a, b >= 0); b =
        `ONE_LEVEL_SLOPE` x a where one level, or a fit without growth, cannot say."""
        if saturation not in self._slopes:
            kept = [(r, v) for r, v in zip(self.rates, self.values, strict=True) if r < saturation]
            loads = np.array([_load(r, saturation) for r, _ in kept])
            values = np.array([v for _, v in kept])
            slope = 0.0
            if len(kept) >= 2 and np.ptp(loads) > 0:
                slope, intercept = np.polyfit(loads, values, 1)
                if intercept < 0:  # a >= 0: the line through the origin
                    slope = float(loads @ values / (loads @ loads))
            if slope <= 0:
                top = self.rates[-1]
                a = self.values[-1] * (1 - min(top / saturation, 1 - 1e-9))
                slope = ONE_LEVEL_SLOPE * a
            self._slopes[saturation] = float(slope)
        return self._slopes[saturation]


def _load(rate: float, saturation: float) -> float:
    """rho / (1 - rho): a queue's waiting time in units of its service time."""
    rho = min(rate / saturation, 1 - 1e-9)
    return rho / (1 - rho)


@dataclass(frozen=True)
class LoadCurve:
    """Latency against offered load for one configuration and traffic shape."""

    levels: tuple[CurveLevel, ...]
    saturation_rps: float | None
    problem: str | None
    _axes: dict[str, _Axis | None]
    saturation_basis: str | None = None  # what the saturation rests on, in words
    # Above the highest stable level: the curve through the stable levels and the measured P99s
    # of levels too short to tell, under the saturation; then the queue form (module docstring)
    _beyond: dict[str, _Axis | None] = field(default_factory=dict)

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

    def _above(self, rate: float, metric: str) -> float | None:
        if self._axes[metric] is None:
            return None
        axis = self._beyond.get(metric) or self._axes[metric]
        if rate <= axis.rates[-1]:
            return axis.at(rate)
        return axis.beyond(rate, self.saturation_rps)

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

    def interval(self, *, ttft_p99_ms: float | None, tpot_p99_ms: float | None) -> CapacityEstimate:
        """The capacity as an interval (module docstring): `capacity_rps` the planned value,
        `rps_low` what the stable levels prove, `rps_high` the most the data supports (None:
        not known), `words` the basis."""
        proven = self.capacity(ttft_p99_ms=ttft_p99_ms, tpot_p99_ms=tpot_p99_ms)
        if self.problem or proven.capacity_rps <= 0:
            return replace(proven, rps_low=0.0, rps_high=0.0, words="none: " + str(proven.reason))
        low, top = proven.capacity_rps, self.highest_stable_rps
        if low < top - _EPS:  # the targets fail at a stable level above
            above = min(rate for rate in self.stable_rates if rate > low + _EPS)
            below = max(rate for rate in self.stable_rates if rate <= low + _EPS)
            words = (
                f"interpolated between kept-up levels at {below:.3g} and {above:.3g} req/s"
                if proven.basis is Basis.INTERPOLATED
                else f"measured: kept up at {below:.3g} req/s; the targets fail at {above:.3g}"
            )
            return replace(proven, rps_low=low, rps_high=above, words=words)
        measured = f"measured: kept up at {top:.3g} req/s"
        closed = [lv for lv in self.levels if lv.stable and lv.concurrency is not None]
        if closed and abs(max(lv.offered_rps for lv in closed) - top) <= _EPS:
            measured = f"measured: {closed[-1].point_basis} at {top:.3g} req/s"
        saturation = self.saturation_rps
        if saturation is None or saturation <= top + _EPS:
            words = f"{measured}; not measured above"
            if saturation is not None:
                words = f"{measured}; saturates there ({self.saturation_basis})"
            return replace(proven, rps_low=low, rps_high=saturation, words=words)
        if ttft_p99_ms is None and tpot_p99_ms is None:  # no targets: never plan at saturation
            words = f"{measured}; saturation {saturation:.3g} req/s ({self.saturation_basis})"
            return replace(proven, rps_low=low, rps_high=saturation, words=words)
        queued = self.capacity(ttft_p99_ms=ttft_p99_ms, tpot_p99_ms=tpot_p99_ms, extrapolate=True)
        words = (
            f"to saturation (queue form): {measured}, saturation {saturation:.3g} req/s "
            f"({self.saturation_basis})"
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
    usable = [
        row
        for row in records(frame)
        if bool(row.get("complete", True)) and not (row.get("failed") or 0)
    ]
    rows = [row for row in usable if finite_number(row.get("offered_rate_rps"))]
    reference = reference_of(rows)
    levels = []
    for row in rows:
        load = _stored(row) or judge_row(row, reference=reference)
        levels.append(_curve_level(row, float(row["offered_rate_rps"]), load))
    levels += _closed_loop_levels([row for row in usable if _closed_loop(row)])
    return sorted(levels, key=lambda level: (level.offered_rps, level.run_id))


def _curve_level(
    row: dict, rate: float, load: LevelLoad, concurrency: int | None = None
) -> CurveLevel:
    return CurveLevel(
        run_id=str(row.get("run_id", "")),
        level_index=int(row.get("level_index") or 0),
        source_file=str(row.get("source_file", "")),
        offered_rps=rate,
        sustained_rps=load.sustained_rps,
        stable=load.stable,
        ttft_p99_ms=finite_number(row.get("ttft_p99_ms")),
        tpot_p99_ms=finite_number(row.get("tpot_p99_ms")),
        load_reason=load.reason,
        concurrency=concurrency,
    )


def _closed_loop(row: dict) -> bool:
    """A closed-loop level: a concurrency, no rate, and a throughput to place it on the curve."""
    rate = row.get("offered_rate_rps")
    open_loop = rate is not None and not pd.isna(rate)
    return (
        not open_loop
        and (finite_number(row.get("max_concurrency")) or 0) > 0
        and (finite_number(row.get("request_throughput_rps")) or 0) > 0
    )


def _closed_loop_levels(rows: list[dict]) -> list[CurveLevel]:
    """Closed-loop levels as (throughput, P99) points: on the curve while throughput still rises
    with concurrency, not past the plateau (module docstring)."""
    by_concurrency: dict[int, list[float]] = {}
    for row in rows:
        by_concurrency.setdefault(int(row["max_concurrency"]), []).append(
            float(row["request_throughput_rps"])
        )
    medians = {c: statistics.median(x) for c, x in sorted(by_concurrency.items())}
    plateau = None  # the lowest concurrency on the plateau
    steps = list(medians.items())
    for (before, x_before), (after, x_after) in itertools.pairwise(steps):
        if (x_after / x_before - 1) < PLATEAU_EFFICIENCY * (after / before - 1):
            plateau = after
            break
    best = max(medians.values(), default=0.0)
    levels = []
    for row in rows:
        concurrency = int(row["max_concurrency"])
        throughput = float(row["request_throughput_rps"])
        rising = plateau is None or concurrency < plateau
        reason = (
            f"closed-loop: concurrency {concurrency}, {throughput:.3g} req/s: throughput still "
            "rising with concurrency"
            if rising
            else f"closed-loop: concurrency {concurrency}, {throughput:.3g} req/s: on the "
            f"throughput plateau (at most {best:.3g} req/s): saturated"
        )
        load = LevelLoad(throughput, True if rising else None, LoadBasis.CONCURRENCY, reason)
        levels.append(_curve_level(row, throughput, load, concurrency))
    return levels


def saturation_of(
    levels: list[CurveLevel], rates: list[float], bound: Bound | None = None
) -> tuple[float | None, str | None]:
    """The saturation rate and what it rests on (module docstring)."""
    evidence = [
        (level.sustained_rps, f"at least the {level.sustained_rps:.3g} req/s a level at "
         f"{level.offered_rps:g} req/s offered proves")
        for level in levels
        if level.concurrency is None and not level.stable and level.sustained_rps
    ]  # fmt: skip
    evidence += [
        (level.offered_rps, f"the throughput plateau of the closed-loop sweep, {level.point_basis}")
        for level in levels
        if level.concurrency is not None and level.stable is None
    ]
    saturation, words = max(evidence) if evidence else (None, None)
    if bound is not None and bound.rps > 0:
        if saturation is None:
            saturation, words = bound.rps, f"bounded by {bound.label}"
        elif bound.rps < saturation:
            saturation, words = bound.rps, f"bounded by {bound.label}, below what a level shows"
    if saturation is not None and rates and saturation < rates[-1]:
        saturation, words = rates[-1], f"{words}, raised to the highest rate it kept up with"
    return saturation, words


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


@dataclass(frozen=True, slots=True)
class Bound:
    """A physical bound on the sustainable rate (KV cache, decode bandwidth), with its name."""

    rps: float
    label: str  # "KV cache": "bounded by KV cache"


def fit_curve(levels: pd.DataFrame, *, bound: Bound | None = None) -> LoadCurve:
    """The curve of one configuration and traffic shape, from its rows of `benchmark_points`;
    `bound`, where known, caps the saturation (or stands for it where the data shows none)."""
    measured = _curve_levels(levels)
    stable = [level for level in measured if level.stable]
    rates = sorted({level.offered_rps for level in stable})
    saturation, words = saturation_of(measured, rates, bound)
    # one stable level and a saturation above it: the queue form alone (M/M/1 from that level)
    needed = 1 if rates and saturation is not None and saturation > rates[-1] else MIN_STABLE_LEVELS
    if len(rates) < needed:
        problem = (
            f"too few stable levels ({len(rates)}): a curve needs the server to have kept up at "
            f"{MIN_STABLE_LEVELS} rates at least"
        )
        return LoadCurve(tuple(measured), saturation, problem, {"ttft": None, "tpot": None}, words)
    axes = {metric: _axis(stable, metric, rates, needed) for metric in ("ttft", "tpot")}
    short = [
        level
        for level in measured
        if level.stable is None
        and level.concurrency is None
        and saturation is not None
        and rates[-1] < level.offered_rps < saturation
    ]
    beyond = {}
    if short:
        upper = sorted({*rates, *(level.offered_rps for level in short)})
        beyond = {m: _axis([*stable, *short], m, upper, needed) for m in ("ttft", "tpot")}
    return LoadCurve(tuple(measured), saturation, None, axes, words, beyond)


def _axis(
    stable: list[CurveLevel], metric: str, rates: list[float], needed: int = MIN_STABLE_LEVELS
) -> _Axis | None:
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
    if len(kept) < needed:
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
