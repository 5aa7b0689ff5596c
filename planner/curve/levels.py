"""The levels a load curve rests on, and what they show: each level as the curve sees it, the
saturation, and each metric's axis with its queue form toward saturation (`load_curve` builds the
`LoadCurve` from them).

- Each open-loop level (a rate) is judged first (`fleetplan.core.load`): the rate it sustained
  or proves, and whether the server kept up (stable), fell behind, or could not tell. Rows of
  `benchmark_points` carry that judgement already; other rows are judged here against the
  quickest level (`curve_levels`).
- Closed-loop levels (a concurrency, no rate: AIPerf, GenAI-Perf, LLMPerf, InferenceX, ML.ENERGY)
  join the curve as (throughput, P99) points, their basis said ("closed-loop: concurrency 16").
  By Little's law a closed loop's throughput is concurrency / time in the system: below the knee
  the time barely grows and throughput rises with concurrency; past it the server is saturated
  and only the time grows. A step whose throughput rose by under `PLATEAU_EFFICIENCY` (a quarter)
  of the concurrency's rise is on the plateau: that level and those above it are not on the
  curve, and the sweep's highest throughput is its saturation. (A closed loop sends no bursts: at
  the same rate its P99s are at most a Poisson stream's; the curve says which basis each point
  has.)
- A closed loop's own axes, against log concurrency: `planner.curve.in_flight`.
- Saturation (`saturation_of`), from what the data shows: the most any level that did not keep up
  proves the server completes per second (a server that fell behind, or a burst, worked at its
  limit: the rate it proves is a lower bound of its saturation, `fleetplan.core.load`), the
  throughput plateau of a closed-loop sweep, else an optional physical bound given by the caller
  (a `EnvelopeRate`, labelled as such, e.g. "bounded by KV cache"); never below the highest rate it
  kept up with. A bound lower than what the data shows caps it (and says so).
  **But where a level above those kept up fell behind, the lowest such level's sustained rate is
  the saturation** (unless a higher rate had a lower P99 TTFT: a stall), however much more a burst
  completed: a continuous-batching server's service rate grows with its batch, so a deep queue's
  throughput is not where its latency turns up; a level that fell behind shows where waits start
  to grow. Live (benchmarks/RESULTS.md, capacity_live): fell behind at 3.92 req/s (3.75
  sustained), a burst completed 8.15; the queue form to 8.15 put the P99 TTFT at 466 ms at 5.64
  req/s, where two runs measured 831 and 1,552 ms.
- An `Axis` is one metric's curve through the stable levels: made monotone (isotonic regression
  of log P99) and interpolated between them by a monotone cubic (PCHIP) in (rate, log P99):
  exact at every measured level (a closed loop's own axes: straight pieces,
  `planner.curve.in_flight`). Below the lowest level it is that level's value.
- Between the highest stable level and saturation the P99s follow a queue's form,
  P99(rate) = a + b x rho / (1 - rho) with rho = rate / saturation: the waiting time of a
  single-server queue grows as rho / (1 - rho) (M/M/1; M/G/1 by Pollaczek-Khinchine, the same
  shape with another constant), and a P99 is a fixed quantile of it plus the service part a.
  a, b >= 0 are fitted by least squares to the stable levels (two at least). With one, or a fit
  with no growth, b = `ONE_LEVEL_SLOPE` x a = a / 4: in a continuous-batching server most of a
  P99 is service (prefill, decode), not waiting, so the pure M/M/1 form (b = a, the whole P99 a
  queue's) overshoots; 1/4 was chosen on the held-out levels of benchmarks/capacity_curve.py
  (io.net and InferenceX: b = a hit 19 of 36 io.net levels within 25 %, a / 4 23; with the
  bound of the levels measured above, `load_model`, 25 and 27), the same data as its table, so
  that table is no independent check of it. The form is anchored at the
  axis's highest level's value (continuous there).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from fleetplan.core.load import LevelLoad, LoadBasis, judge_row, reference_of
from fleetplan.core.stats import finite_number
from fleetplan.core.tabular import records
from fleetplan.planner.curve.envelope_flags import beyond_envelope, envelope_flag
from fleetplan.planner.curve.monotone import Pchip, isotonic

OUTLIER_FACTOR = 2.0  # a P99 over twice every P99 at higher stable rates: not load
PLATEAU_EFFICIENCY = 0.25  # a closed-loop step that gained under 1/4 of its concurrency's rise
ONE_LEVEL_SLOPE = 0.25  # b = a / 4 where the stable levels cannot fit b (module docstring)
# A closed-loop level's P99 TTFT on the rate axis, as Poisson arrivals at its throughput would
# see it: at least 1.43 times the closed loop's. Measured live, one vLLM CPU server, 128/16
# tokens, 200 requests a level, the machine quiet (benchmarks/RESULTS.md, 2026-12-01): at the
# throughput of concurrency 1, 2 and 4 a Poisson sweep's P99 TTFT was +166 %, +43 % and +77 %
# above the closed loop's (+173 % at concurrency 1 in a second run); the smallest is taken, so
# the closed loop's optimism is corrected at least by what was seen everywhere. P99 TPOT is not
# corrected (not compared). The held-out closed-loop levels are predicted in concurrency, on
# the closed loop's own P99s (`in_flight_axes`), not with this factor.
CLOSED_LOOP_TTFT_FACTOR = 1.43


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
    # A level the serving model simulated (`fleetplan.services.fill`: its `estimate` says basis
    # "estimated"), not measured: the curve's words say "simulated" for it.
    simulated: bool = False

    @property
    def point_basis(self) -> str:
        """How the level sits on the curve, in words."""
        if self.concurrency is not None:
            return f"closed-loop: concurrency {self.concurrency}"
        return f"open-loop: {self.offered_rps:g} req/s offered"

    def on_the_rate_axis(self, metric: str) -> float | None:
        """The level's P99 of `metric` ("ttft", "tpot") as the rate axis takes it: a closed
        loop's P99 TTFT as open-loop arrivals at its throughput would see it
        (`CLOSED_LOOP_TTFT_FACTOR`)."""
        value = getattr(self, f"{metric}_p99_ms")
        if value and metric == "ttft" and self.concurrency is not None:
            return value * CLOSED_LOOP_TTFT_FACTOR
        return value


class Axis:
    """One metric's monotone curve through the stable levels (isotonic in log P99), and its
    queue form above the highest of them (module docstring)."""

    def __init__(self, rates: list[float], values: list[float], *, cubic: bool = True):
        self.rates = rates
        logs = isotonic([math.log(value) for value in values])
        self.values = [math.exp(log) for log in logs]
        # `cubic=False`: straight pieces in (rate, log P99) (callers clamp to the levels' range)
        straight = functools.partial(np.interp, xp=rates, fp=logs)
        self._spline = (Pchip(rates, logs) if cubic else straight) if len(rates) > 1 else None
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


def curve_levels(frame: pd.DataFrame | list[dict]) -> list[CurveLevel]:
    """A configuration's levels on the curve, from its rows of `benchmark_points` (a table, or
    its rows as `tabular.records` gives them)."""
    usable = [
        row
        for row in (frame if isinstance(frame, list) else records(frame))
        if bool(row.get("complete", True)) and not (row.get("failed") or 0)
    ]
    rows = [row for row in usable if finite_number(row.get("offered_rate_rps"))]
    reference = reference_of(rows)
    levels = []
    for row in rows:
        load = beyond_envelope(row, _stored(row) or judge_row(row, reference=reference))
        levels.append(_curve_level(row, float(row["offered_rate_rps"]), load))
    closed = [row for row in usable if _closed_loop(row) and not envelope_flag(row)]
    levels += _closed_loop_levels(closed)
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
        simulated=_simulated(row),
    )


ESTIMATE_RUN = "estimate:"  # the run ids `fleetplan.services.fill` gives simulated levels


def _simulated(row: dict) -> bool:
    """A row the serving model simulated: its `estimate` JSON says basis "estimated", or, where
    the rows carry no `estimate` (a plan's curves are fitted from `CURVE_COLUMNS` alone), its
    run id is one fill gives a simulated level. A lent measurement of an identical architecture
    was measured, and is not one."""
    told = row.get("estimate")
    if not isinstance(told, str) or not told:
        return "estimate" not in row and str(row.get("run_id", "")).startswith(ESTIMATE_RUN)
    try:
        account = json.loads(told)
    except ValueError:
        return False
    return isinstance(account, dict) and account.get("basis") == "estimated"


def simulated(levels: Iterable[CurveLevel]) -> bool:
    """Every one of the levels simulated, none measured (`CurveLevel.simulated`): the words
    about them say "simulated" where they say "measured" of measured ones."""
    levels = list(levels)
    return bool(levels) and all(level.simulated for level in levels)


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
    levels: list[CurveLevel], rates: list[float], envelope: EnvelopeRate | None = None
) -> tuple[float | None, str | None]:
    """The saturation rate and what it rests on (module docstring)."""
    # a simulated level shows what the serving model computes; a measured one proves it
    kind, shows = ("simulated level", "shows") if simulated(levels) else ("level", "proves")
    evidence = [
        (
            level.sustained_rps,
            f"at least the {level.sustained_rps:.3g} req/s a {kind} at {level.offered_rps:g} "
            f"req/s offered {shows}",
        )
        for level in levels
        if level.concurrency is None and not level.stable and level.sustained_rps
    ]
    evidence += [
        (level.offered_rps, f"the throughput plateau of the closed-loop sweep, {level.point_basis}")
        for level in levels
        if level.concurrency is not None and level.stable is None
    ]
    saturation, words = max(evidence) if evidence else (None, None)
    # the lowest rate above those kept up at which a level fell behind: the knee (docstring)
    top = rates[-1] if rates else math.inf  # none kept up: no knee to place
    fell = [lv for lv in levels if lv.concurrency is None and lv.stable is False]
    fell = [lv for lv in fell if lv.sustained_rps and lv.offered_rps > top]
    fell = [lv for lv in fell if not _quicker_above(lv, levels)]
    if fell and saturation is not None:
        knee = min(fell, key=lambda level: level.offered_rps)
        if knee.sustained_rps < saturation:
            saturation = knee.sustained_rps
            words = (
                f"the {knee.sustained_rps:.3g} req/s a {kind} that fell behind at "
                f"{knee.offered_rps:.3g} req/s offered sustained (the lowest rate it fell behind "
                f"at; {words})"
            )
    if envelope is not None and envelope.rps > 0:
        if saturation is None:
            saturation, words = envelope.rps, f"bounded by {envelope.label}"
        elif envelope.rps < saturation:
            saturation, words = (
                envelope.rps,
                f"bounded by {envelope.label}, below what a level shows",
            )
    if saturation is not None and rates and saturation < rates[-1]:
        saturation, words = rates[-1], f"{words}, raised to the highest rate it kept up with"
    return saturation, words


def _quicker_above(level: CurveLevel, levels: list[CurveLevel]) -> bool:
    """A higher rate with a lower P99 TTFT: `level` fell on a stall, not at a knee."""
    p99 = level.ttft_p99_ms
    return p99 is not None and any(
        o.concurrency is None and o.offered_rps > level.offered_rps and (o.ttft_p99_ms or p99) < p99
        for o in levels
    )


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
class EnvelopeRate:
    """A physical bound on the sustainable rate (KV cache, decode bandwidth), with its name."""

    rps: float
    label: str  # "KV cache": "bounded by KV cache"


def metric_axis(
    levels: list[CurveLevel], metric: str, rates: list[float], needed: int
) -> Axis | None:
    """One metric's `Axis` through `levels` at `rates` (repeats at one rate: their median),
    outliers left out; None where a rate lacks the metric or fewer than `needed` rates are left."""
    values = []
    for rate in rates:
        at_rate = [
            level.on_the_rate_axis(metric)
            for level in levels
            if level.offered_rps == rate and getattr(level, f"{metric}_p99_ms")
        ]
        if not at_rate:
            return None  # a gap in a metric: no curve for it rather than a guess
        values.append(float(statistics.median(at_rate)))
    kept = [i for i in range(len(rates)) if i not in outliers(values)]
    if len(kept) < needed:
        return None  # what is left after the outliers is too little for a curve
    return Axis([rates[i] for i in kept], [values[i] for i in kept])


def outliers(values: list[float]) -> set[int]:
    """Levels whose P99 is over `OUTLIER_FACTOR` times every P99 at a higher stable rate: latency
    does not fall as load rises, so such a level measured something else (a cold start, a
    hiccup), and the curve leaves it out rather than carry it to every rate."""
    found = set()
    for i, value in enumerate(values[:-1]):
        if value > OUTLIER_FACTOR * max(values[i + 1 :]):
            found.add(i)
    return found


def envelope_axes(
    levels: list[CurveLevel], rates: list[float], saturation: float | None, needed: int
) -> dict[str, Axis | None]:
    """Per metric, the monotone fit through the stable levels and the open-loop levels that did
    not keep up but prove more than the highest stable rate, each placed at the rate it proves:
    their P99s bound the queue form from above (`load_model`'s docstring). Empty where there are
    none or no saturation."""
    stable = [level for level in levels if level.stable]
    above = [
        replace(level, offered_rps=level.sustained_rps)
        for level in levels
        if not level.stable and level.concurrency is None and (level.sustained_rps or 0) > rates[-1]
    ]
    axes: dict[str, Axis | None] = {}
    if not above or saturation is None:
        return axes
    for metric in ("ttft", "tpot"):
        known = [level for level in above if getattr(level, f"{metric}_p99_ms")]
        if known:
            upper = sorted({*rates, *(level.offered_rps for level in known)})
            axes[metric] = metric_axis([*stable, *known], metric, upper, needed)
    return axes
