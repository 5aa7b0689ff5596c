"""`fleetplan collect --find-capacity`: the highest request rate a server carries while it keeps
up and its P99 TTFT (and TPOT) meet the targets.

The search, per token shape:
1. **A coarse ladder**: the suite's finite rates in increasing order (the standard 1..32 req/s,
   or `--rates`), then doubling the highest while every level passes (`--rates 8`: 8, 16, 32...;
   at most `MAX_DOUBLINGS` times). It stops at the first level that fails. When the lowest rate
   already fails there is no capacity (`SearchOutcome.infeasible`).
2. **Bisection** between the highest passing rate (`low`) and the lowest failing one (`high`):
   the next level runs at their geometric mean, and replaces `low` if it passes, else `high`,
   until (high - low) / high <= the tolerance. The geometric mean halves the bracket's ratio at
   every step, so the number of steps is known once the bracket is (`bisection_steps`).
   Every passing level lies below every failing one, by construction: the capacity found is
   `low`, a rate the server was measured to carry.

A level **passes** when no request failed, the client sent on schedule (the measuring side says
when it could not: `Measured.problem`), the server kept up (`fleetplan.core.load.judge_point`,
from the level's own send times: completions kept pace with arrivals in the steady window, and
late requests did not wait longer than early ones), and its P99 TTFT (and P99 TPOT, when given)
meets the target **against the P99's own spread** (`fleetplan.core.spread.judge_percentile`: a
seeded bootstrap of the level's per-request values; meets when the 90 % interval of the P99 lies
under the target, misses when it lies above). A level the judgement cannot call (stable None: a
burst) does not pass.

**Repeated levels.** Every rate whose P99 decides is measured at least `MIN_RUNS` (2) times
(`--min-runs`), and up to `MAX_RUNS` (3) while the spread cannot decide; the targets are judged
on its runs together (`fleetplan.core.spread.judge_runs`: a two-stage bootstrap, runs then their
requests, so the interval holds the spread between runs as well as within one). Runs of one
rate on two shared cores differ by more than one run's interval shows (benchmarks/RESULTS.md,
capacity_live: 400-request P99 TTFTs of 390, 512 and 585 ms at one rate, whose own intervals do
not overlap), so a single run cannot decide a bracket of +-15 %, however clear it looks. Every
run must also keep up on its own; a level that fell behind or lost requests fails at once (that
judgement is not a percentile's). Still undecided after `MAX_RUNS`, the rate does not pass
("cannot tell"): the capacity found is a rate measured to meet the targets, never one that only
may. Each run is a level of the run file (`search_level_NNN` says "run 2 of the rate").

**How long a level is** (`level_requests`): requests = max(`min_requests`, rate x
`SPAN_TYPICALS` x the typical request time), for the ladder too (a short level that passes by
luck would anchor the bracket). The typical request time is the median E2EL at the highest
level that passed so far (the warm-up's before that).
- At least `SEARCH_MIN_REQUESTS` (400) requests: the P99 of n requests is the value that n / 100
  requests exceed, so 400 leave four requests above it (one request more or less above it moves
  the estimate between the true P98.75 and P99.25); fewer and the P99 is the level's maximum
  give or take a request, which one slow request decides.
- Arrivals over at least `SPAN_TYPICALS` = 2 x `STEADY_SPANS` typical request times: the judgement
  needs `STEADY_SPANS` (3) to see a steady state at all, and the first typical request time is the
  pipeline filling (fewer requests in flight, quicker ones). Over six, those quick requests are at
  most a sixth of the level: they are hardly ever among its slowest, so the level's P99 is the
  steady state's P98.8 or higher; and a server past its capacity has five request times for its
  queue to grow, which the judgement sees as late requests waiting longer.
The levels adapt to the rate: at low rates the count rules (a level of 400 requests at 4 req/s
lasts 100 s), at high rates on slow requests the span does.

How close to a knee it resolves: at (1 + e) times the capacity the queue grows by e x capacity
requests a second, so over a level of T seconds the last requests wait about e x T longer than
the first. The judgement calls the level fallen behind once late requests take `QUEUE_GROWTH`
(1.5) times as long as early ones with a rising trend through the level (`TREND_Z`: a queue
grows steadily), from e of about the typical request time / T, and the TTFT
target is missed once e x T exceeds its margin over the unloaded TTFT. Longer levels resolve
closer.

Every level goes into the run file in the order measured; the run's metadata says which phase
each level belongs to and why it passed or failed (`SearchOutcome.metadata`):
`search_level_003` = "bisect; passed; kept up: ...", with the targets, tolerance, capacity and
bracket under `search_*` keys.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from fleetplan.core.contract import Point
from fleetplan.core.load import STEADY_SPANS, judge_point
from fleetplan.core.spread import DEFAULT_CONFIDENCE, PercentileJudgement, judge_runs

SEARCH_MIN_REQUESTS = 400  # four requests above the P99 (see the module's docstring)
SPAN_TYPICALS = 2 * STEADY_SPANS  # arrivals over at least six typical request times
DEFAULT_TOLERANCE = 0.05
MAX_DOUBLINGS = 10  # past the ladder: up to 1024 times its highest rate
MAX_REQUESTS = 1_000_000  # a Suite's own bound on the requests of a level
MAX_RUNS = 3  # runs of one rate whose P99 the spread cannot decide (see the module's docstring)
MIN_RUNS = 2  # runs of a rate before its P99 decides: one shows no spread between runs
Phase = Literal["ladder", "bisect"]


@dataclass(frozen=True, slots=True)
class SearchPlan:
    """What the search looks for, and how long its levels are at the least."""

    ttft_p99_ms: float | None
    tpot_p99_ms: float | None = None
    tolerance: float = DEFAULT_TOLERANCE
    min_requests: int = SEARCH_MIN_REQUESTS
    confidence: float = DEFAULT_CONFIDENCE  # of the P99's bootstrap interval
    max_runs: int = MAX_RUNS
    min_runs: int = MIN_RUNS

    def __post_init__(self) -> None:
        if not 1 <= self.min_runs <= max(1, self.max_runs):
            raise ValueError(f"min_runs must be 1 to {self.max_runs}, not {self.min_runs}")

    def targets(self) -> str:
        parts = [
            f"P99 {name} <= {value:g} ms"
            for name, value in (("TTFT", self.ttft_p99_ms), ("TPOT", self.tpot_p99_ms))
            if value is not None
        ]
        return ", ".join(parts) or "no latency target"


@dataclass(frozen=True, slots=True)
class Measured:
    """One level as the measuring side saw it."""

    point: Point
    stopped: bool = False  # interrupted, or the server went away: the search ends here
    problem: str | None = None  # why the level cannot pass whatever it measured


@dataclass(frozen=True, slots=True)
class SearchLevel:
    phase: Phase
    rate_rps: float
    requests: int
    passed: bool
    verdict: str  # a few words for the table ("passed", "fell behind", "misses TTFT")
    reason: str  # the whole judgement, in a sentence or two
    point: Point
    run: int = 1  # which run of this rate (a rate the spread cannot decide is measured again)


@dataclass
class SearchOutcome:
    """The levels tried, in order, and the bracket they leave."""

    plan: SearchPlan
    levels: list[SearchLevel] = field(default_factory=list)
    low: float | None = None  # the highest rate that passed
    high: float | None = None  # the lowest rate that failed
    stopped: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def capacity_rps(self) -> float | None:
        return self.low

    @property
    def infeasible(self) -> bool:
        """Even the lowest rate failed (and the search was not cut short)."""
        return self.low is None and self.high is not None and not self.stopped

    @property
    def width(self) -> float | None:
        """The bracket's relative width, (high - low) / high."""
        if self.low is None or self.high is None:
            return None
        return (self.high - self.low) / self.high

    def summary(self) -> str:
        """The result in one sentence."""
        if self.stopped:
            found = f"at least {self.low:g} req/s" if self.low is not None else "none yet"
            return f"search cut short: capacity {found}"
        if self.low is None:
            return f"no capacity: even {self.high:g} req/s misses ({self.levels[0].reason})"
        if self.high is None:
            return f"capacity at least {self.low:g} req/s: every rate tried passed"
        return (
            f"capacity {self.low:.4g} req/s (bracket {self.low:.4g}-{self.high:.4g} req/s, "
            f"{self.width:.1%} wide for a tolerance of {self.plan.tolerance:.1%})"
        )

    def metadata(self) -> dict[str, str]:
        """What the run records about the search (`Run.metadata`), level by level."""
        meta = {
            "search_targets": self.plan.targets(),
            "search_tolerance": f"{self.plan.tolerance:g}",
            "search_capacity_rps": "none" if self.low is None else repr(self.low),
            "search_bracket_rps": ",".join(
                "" if rate is None else repr(rate) for rate in (self.low, self.high)
            ),
            "search_result": self.summary()[:2000],
        }
        for index, level in enumerate(self.levels):
            outcome = "passed" if level.passed else "failed"
            run = f"run {level.run} of the rate; " if level.run > 1 else ""
            text = f"{level.phase}; {outcome}; {run}{level.reason}"
            meta[f"search_level_{index:03d}"] = text[:2000]
        return meta

    def table(self, shape: str) -> str:
        """The levels tried, for the terminal, and the result."""
        lines = [
            f"capacity search, {shape}: {self.plan.targets()}",
            f"{'level':>5}  {'phase':<7}{'req/s':>9}{'requests':>10}{'p99 TTFT':>11}"
            f"{'p99 TPOT':>11}  verdict",
        ]
        for index, level in enumerate(self.levels):
            lines.append(
                f"{index:>5}  {level.phase:<7}{level.rate_rps:>9.4g}{level.requests:>10}"
                f"{_ms(level.point.ttft_p99_ms):>11}{_ms(level.point.tpot_p99_ms):>11}  "
                f"{level.verdict}"
            )
        lines.append(self.summary())
        return "\n".join(lines)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}ms"


def level_requests(rate_rps: float, typical_s: float | None, minimum: int) -> int:
    """How many requests a level at `rate_rps` needs (see the module's docstring)."""
    spanned = math.ceil(rate_rps * SPAN_TYPICALS * typical_s) if typical_s else 0
    return min(max(minimum, spanned), MAX_REQUESTS)


def bisection_steps(low: float, high: float, tolerance: float) -> int:
    """Levels a geometric bisection of [low, high] needs until (high - low) / high <= tolerance:
    after k steps the bracket's ratio is (high / low) ** (1 / 2**k)."""
    ratio = math.log(high / low) / -math.log(1 - tolerance)
    return max(math.ceil(math.log2(ratio) - 1e-12), 0) if ratio > 1 else 0


@dataclass(frozen=True, slots=True)
class LevelVerdict:
    passed: bool
    verdict: str  # a few words ("passed", "fell behind", "misses TTFT", "cannot tell")
    reason: str
    undecided: bool = False  # the targets' spread could not decide: another run may


def per_request_ms(
    points: Sequence[Point], metric: Literal["ttft", "tpot"]
) -> list[list[float]] | None:
    """Each point's (run's) successful requests' TTFT, or TPOT ((E2EL - TTFT) / (output tokens
    - 1), requests of two tokens or more), in ms; None when a point has no per-request log."""
    runs: list[list[float]] = []
    for point in points:
        log = point.requests
        if log is None:
            return None
        values: list[float] = []
        for i in log.succeeded:
            ttft, e2el, tokens = log.ttft_s[i], log.e2el_s[i], log.output_tokens[i]
            if metric == "ttft":
                values.append(1000 * ttft)
            elif tokens > 1:
                values.append(1000 * (e2el - ttft) / (tokens - 1))
        runs.append(values)
    return runs


def _target(points: Sequence[Point], plan: SearchPlan, name: str, target: float) -> tuple[str, str]:
    """One target against the rate's runs: (meets | misses | cannot tell, the clause saying so)."""
    metric = "ttft" if name == "TTFT" else "tpot"
    runs = per_request_ms(points, metric)
    if runs is None:  # a point from a tool without per-request times: its P99 alone
        value = getattr(points[-1], f"{metric}_p99_ms")
        if value is None:
            return "misses", f"P99 {name} unmeasured > {target:g} ms"
        sign, decision = ("<=", "meets") if value <= target else (">", "misses")
        return decision, f"P99 {name} {value:.0f} ms {sign} {target:g} ms (no per-request times)"
    seed = sum(point.requests_sent or 0 for point in points)
    judged: PercentileJudgement = judge_runs(
        runs, target, confidence=plan.confidence, seed=seed, min_runs=plan.min_runs
    )
    return judged.decision, judged.reason(name)


def judge(
    points: Point | Sequence[Point], plan: SearchPlan, problem: str | None = None
) -> LevelVerdict:
    """Whether a rate passes, from its runs so far (the last one measured last)."""
    runs = [points] if isinstance(points, Point) else list(points)
    point = runs[-1]
    if problem:
        return LevelVerdict(False, "not judged", problem)
    if point.failed or not point.complete:
        failed = f"{point.failed or 0} of {point.requests_sent} requests failed"
        return LevelVerdict(
            False, "requests failed", failed if point.failed else "the level was cut short"
        )
    load = judge_point(point)
    if load.stable is None:
        return LevelVerdict(False, "cannot tell", load.reason)
    if not load.stable:
        return LevelVerdict(False, "fell behind", load.reason)
    decisions, clauses = {}, [load.reason]
    for name, target in (("TTFT", plan.ttft_p99_ms), ("TPOT", plan.tpot_p99_ms)):
        if target is not None:
            decisions[name], clause = _target(runs, plan, name, target)
            clauses.append(clause)
    reason = "; ".join(clauses)
    misses = [name for name, decision in decisions.items() if decision == "misses"]
    if misses:
        return LevelVerdict(False, "misses " + ", ".join(misses), reason)
    undecided = [name for name, decision in decisions.items() if decision == "cannot tell"]
    if undecided:
        return LevelVerdict(False, "cannot tell " + ", ".join(undecided), reason, undecided=True)
    return LevelVerdict(True, "passed", reason)


# (rate, requests, levels expected in all) -> the level measured
Measure = Callable[[float, int, int], Measured]


def ladder_rates(rates: Sequence[float]) -> Iterator[float]:
    """The suite's finite rates in increasing order, then the highest doubled, again and again."""
    finite = sorted({rate for rate in rates if math.isfinite(rate)})
    yield from finite
    for power in range(1, MAX_DOUBLINGS + 1):
        yield finite[-1] * 2**power


class _Search:
    def __init__(self, measure: Measure, plan: SearchPlan, typical_s: float | None):
        self.measure, self.plan, self.typical_s = measure, plan, typical_s
        self.outcome = SearchOutcome(plan)

    def level(self, phase: Phase, rate: float, expected: int) -> bool | None:
        """Measure one rate, again while its targets' spread cannot decide (at most
        `plan.max_runs` runs); whether it passed (None: the search stops)."""
        runs: list[Point] = []
        for run in range(1, max(1, self.plan.max_runs) + 1):
            requests = level_requests(rate, self.typical_s, self.plan.min_requests)
            measured = self.measure(rate, requests, expected + run - 1)
            runs.append(measured.point)
            verdict = judge(runs, self.plan, measured.problem)
            again = verdict.undecided and run < self.plan.max_runs and not measured.stopped
            shown = verdict.verdict + ("; measuring again" if again else "")
            if verdict.undecided and not again:
                shown += f" after {run} run(s): not passed"
            self.outcome.levels.append(
                SearchLevel(
                    phase,
                    rate,
                    requests,
                    verdict.passed,
                    shown,
                    verdict.reason,
                    measured.point,
                    run,
                )
            )
            if measured.problem:
                self.outcome.problems.append(measured.problem)
            if measured.stopped:
                self.outcome.stopped = True
                return None
            if not again:
                break
        if verdict.passed:
            self.outcome.low = rate
            if measured.point.e2el_p50_ms:
                self.typical_s = measured.point.e2el_p50_ms / 1000
        else:
            self.outcome.high = rate
        return verdict.passed

    def ladder(self, rates: Sequence[float]) -> bool:
        """Up the ladder to the first failing level; whether the search goes on."""
        planned = len({rate for rate in rates if math.isfinite(rate)})
        for index, rate in enumerate(ladder_rates(rates)):
            # the levels so far (repeats included) and the planned rates left, this one at least
            expected = len(self.outcome.levels) + max(1, planned - index)
            passed = self.level("ladder", rate, expected)
            if passed is None:
                return False
            if not passed:
                return self.outcome.low is not None
        return False  # every rate passed: the bracket stays open

    def bisect(self) -> None:
        outcome, tolerance = self.outcome, self.plan.tolerance
        while outcome.width > tolerance:
            middle = math.sqrt(outcome.low * outcome.high)
            expected = len(outcome.levels) + bisection_steps(outcome.low, outcome.high, tolerance)
            if self.level("bisect", middle, expected) is None:
                return


def find_capacity(
    measure: Measure, rates: Sequence[float], plan: SearchPlan, *, typical_s: float | None = None
) -> SearchOutcome:
    """Ladder, then bisection (see the module's docstring). `measure` runs one level; `rates`
    are the ladder's (the suite's); `typical_s`, a request's time in the system unloaded (the
    warm-up's median E2EL), sizes the first level."""
    if not any(math.isfinite(rate) for rate in rates):
        raise ValueError("the capacity search needs a finite rate to start its ladder")
    search = _Search(measure, plan, typical_s)
    if search.ladder(rates):
        search.bisect()
    return search.outcome
