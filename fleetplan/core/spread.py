"""Whether a level's P99 meets a target, judged against the P99's own spread.

A level's P99 of n requests is an estimate: on a shared machine one slow request more or less
above it moves it a lot (measured: two 400-request levels at the same rate had P99 TTFT 141 and
316 ms). `judge_percentile` bootstraps the per-request values (resamples of n drawn with
replacement, the percentile of each, numpy's linear interpolation as everywhere in fleetplan)
and compares the target with the central `confidence` interval of those percentiles:

- **meets** when the interval's upper end is at most the target,
- **misses** when its lower end is above the target,
- **cannot tell** when the target lies inside the interval, or when the values are too few to
  show that the level meets it.

With the default `confidence` 0.9 each one-sided call (meets, misses) is wrong at most 5 % of
the time for a level whose values are a fair sample of the server's steady state. The interval
shrinks as 1 / sqrt(n): the caller that cannot tell can measure the level again and judge the
pooled values (`fleetplan collect --find-capacity` does, a bounded number of times).

`MIN_VALUES` = 100: below it a level can miss but never meet. The P99 of fewer than 100 values
is the maximum give or take an interpolation, and no resample exceeds the largest value seen,
so an interval under the target says nothing about how much slower the 1-in-100 request would
be. An interval above the target does say something: its lower end above the target needs
values above the target in nearly every resample, that is a couple of them, already more than
1 % of fewer than 100. With 100 values or more one value lies above the P99 and both calls
stand on the interval.

**Runs of one rate** (`judge_runs`). Requests of one run share its moment: what else the
machine was doing, the server's state, the seed's prompts. Runs of one rate differ by more than
their requests do (measured here, two shared cores, 400 requests a run: vLLM bench's P99 TTFT at
2.67 req/s was 585, 390 and 512 ms in three runs, whose own 90 % intervals, 482-681, 372-432 and
489-575 ms, do not overlap; fleetplan's 382, 386 and 489 ms at 2.07 req/s). Pooling the runs'
requests and resampling them as one sample treats that spread as if it were not there: the
pooled interval at 2.67 req/s was 483-569 ms, which the 390 ms run lies far outside. So runs are
resampled in two stages, the way a clustered sample is: first k runs drawn with replacement from
the k measured, then each drawn run's own requests with replacement; the percentile of the
drawn values together. The first stage carries the spread between runs, the second the spread
within one. (Resampling within a run as well counts its noise a little more than once, so the
interval errs wide: toward "cannot tell", never toward a call the runs do not support.) The same
runs at 2.67 req/s give about 425-585 ms. One run cannot show the spread between runs at all:
`min_runs` (fleetplan's searches use 2) makes a judgement of fewer runs "cannot tell", whatever
its own interval says, so that the caller measures the rate again.

The functions are pure: the same values, target, confidence and seed give the same answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Decision = Literal["meets", "misses", "cannot tell"]
MIN_VALUES = 100  # one value above the P99 (see the module's docstring)
DEFAULT_CONFIDENCE = 0.9  # central interval: each one-sided call at 95 %
DEFAULT_RESAMPLES = 2000
_CHUNK_CELLS = 4_000_000  # resamples x values drawn at once (32 MB of indices)


@dataclass(frozen=True, slots=True)
class PercentileJudgement:
    """A level's percentile against a target, with the interval it was judged on."""

    decision: Decision
    target_ms: float
    value_ms: float | None  # the level's own percentile (None: no values)
    low_ms: float | None  # the bootstrap interval's ends (None: no values)
    high_ms: float | None
    values: int
    confidence: float
    percentile: float = 99.0
    runs: int = 1  # runs of the rate the values came from (`judge_runs`)
    min_runs: int = 1  # fewer runs than this: "cannot tell" (the spread between runs unseen)

    def reason(self, name: str = "TTFT") -> str:
        """The judgement in one clause, for the search's table and the run's metadata."""
        label = f"P{self.percentile:g} {name}"
        if self.value_ms is None:
            return f"{label} unmeasured (no successful request)"
        runs = f" in {self.runs} runs" if self.runs > 1 else ""
        text = (
            f"{label} {self.value_ms:.0f} ms ({self.confidence:.0%} interval "
            f"{self.low_ms:.0f}-{self.high_ms:.0f} ms over {self.values} requests{runs}): "
            f"{self.decision} {self.target_ms:g} ms"
        )
        why = []
        if self.decision == "cannot tell" and self.runs < self.min_runs:
            one = "one run shows" if self.runs == 1 else f"{self.runs} runs show"
            why.append(f"{one} no spread between runs; {self.min_runs} are needed")
        if self.decision == "cannot tell" and self.values < MIN_VALUES:
            why.append(f"fewer than {MIN_VALUES} requests cannot show a P{self.percentile:g} met")
        if why:
            text += f" ({'; '.join(why)})"
        return text


def judge_percentile(
    values_ms: Sequence[float],
    target_ms: float,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    percentile: float = 99.0,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> PercentileJudgement:
    """Meets, misses or cannot tell: the target against the bootstrap interval of the values'
    percentile (see the module's docstring). `values_ms`: one value per successful request of
    one run."""
    return judge_runs(
        [values_ms],
        target_ms,
        confidence=confidence,
        percentile=percentile,
        resamples=resamples,
        seed=seed,
    )


def judge_runs(
    runs_ms: Sequence[Sequence[float]],
    target_ms: float,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    percentile: float = 99.0,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    min_runs: int = 1,
) -> PercentileJudgement:
    """The target against runs of one rate: `runs_ms` one list of per-request values per run
    (a run without values counts as a run). The percentile is the pooled values'; its interval
    the two-stage bootstrap's (see "Runs of one rate" in the module's docstring)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, not {confidence!r}")
    if not math.isfinite(target_ms) or target_ms < 0:
        raise ValueError(f"the target must be a finite number of ms, not {target_ms!r}")
    groups = [np.asarray(run, dtype=float) for run in runs_ms]
    if any(group.size and not np.isfinite(group).all() for group in groups):
        raise ValueError("every value must be a finite number of ms")
    values = np.concatenate(groups) if groups else np.empty(0)
    judged = {"target_ms": float(target_ms), "values": int(values.size), "confidence": confidence}
    judged |= {"percentile": percentile, "runs": len(groups), "min_runs": min_runs}
    if not values.size:
        return PercentileJudgement(
            "cannot tell", value_ms=None, low_ms=None, high_ms=None, **judged
        )
    value = float(np.percentile(values, percentile))
    filled = [group for group in groups if group.size]
    if len(filled) == 1:
        estimates = _bootstrap(filled[0], percentile, resamples, seed)
    else:
        estimates = _clustered(filled, percentile, resamples, seed)
    tail = (1 - confidence) / 2
    low, high = (float(x) for x in np.quantile(estimates, [tail, 1 - tail]))
    decision: Decision = "cannot tell"
    if len(groups) >= min_runs:  # fewer runs show no spread between runs: cannot tell
        if high <= target_ms and values.size >= MIN_VALUES:
            decision = "meets"
        elif low > target_ms:
            decision = "misses"
    return PercentileJudgement(decision, value_ms=value, low_ms=low, high_ms=high, **judged)


def _clustered(
    groups: list[np.ndarray], percentile: float, resamples: int, seed: int
) -> np.ndarray:
    """The percentile of `resamples` two-stage resamples: runs drawn with replacement, then
    each drawn run's values with replacement (the module's docstring), seeded."""
    rng = np.random.default_rng(seed)
    estimates = np.empty(resamples)
    for index in range(resamples):
        picked = rng.integers(0, len(groups), size=len(groups))
        drawn = [groups[i][rng.integers(0, groups[i].size, size=groups[i].size)] for i in picked]
        estimates[index] = np.percentile(np.concatenate(drawn), percentile)
    return estimates


def _bootstrap(values: np.ndarray, percentile: float, resamples: int, seed: int) -> np.ndarray:
    """The percentile of `resamples` resamples of `values` (with replacement), seeded."""
    rng = np.random.default_rng(seed)
    n = values.size
    rows = max(1, _CHUNK_CELLS // n)
    estimates = []
    for start in range(0, resamples, rows):
        count = min(rows, resamples - start)
        drawn = values[rng.integers(0, n, size=(count, n))]
        estimates.append(np.percentile(drawn, percentile, axis=1))
    return np.concatenate(estimates)
