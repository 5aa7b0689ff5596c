"""The one solver kernel under every program of the planner (the peak's, the day's, the
availability's): a mixed-integer program in scipy's terms, its solve by HiGHS (scipy's `milp`)
within a deadline, the fewest-GPU second solve among the optimal answers, and one map from
scipy's status to the planner's.

- `Program`: objective, constraint rows, integrality and variable bounds, and `fewest`: what
  the tie-break minimises (GPUs, or GPU-hours) among the answers no worse than the optimum.
- `run`: the HiGHS call, the only one (a time limit, a relative gap of 1e-9; a `cutoff` where
  only an answer better than a known one is wanted: `improves` reads its answer), without the
  debug line HiGHS 1.12 prints on standard output (`without_stray_lines`).
- `solve`: `run`, then `tie_break` while time is left: a second, lexicographic solve (a small
  weight in one objective would be lost in the solver's tolerances).
- `outcome`: scipy's answer as a status, a message and the values, for every program alike.
- `LimitRow`: one limit, defined once: the solver's row, and the check of an answer found
  without it (each program solves its classes one by one first where they meet only in the
  limits, and keeps the union where every `LimitRow` holds).
- `Deadline`: the time left of a solve's limit, shared by its steps.
- `plan_clock`: one time limit for everything a plan solves (its recommended fleet, its day,
  its comparisons): every `Deadline` and every `run` within it ends by the plan's end, and
  `said` gives messages the plan's limit rather than the sliver of it one step was left.

How to add a constraint family (a power cap in kW, say): a family is rows over a program's
columns. 1. Give the scenario the limit (validated, its unit in its name; None = no limit) and
the program's limits their field (`peak.program.Limits`, `day.hourly_pools.DayLimits`). 2. Write
its rows where the program writes its others, from the pools' coefficients (`PoolEconomics`'
`kw_per_server` and `kw_per_rps`), as `LimitRow`s in the program's own (`peak_limit_rows`,
`day_limit_rows`): the solver then gets them as rows and the per-class answers are checked against
them, with nothing else to change. 3. Say why a plan is infeasible under it in
`peak.diagnosis.binding_limits`. tests/test_solve_kernel.py adds a power cap to the peak program
this way, without touching the kernel, and checks that the answer meets it.
"""

from __future__ import annotations

import math
import os
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, milp

from fleetplan.planner.solve.rows import Rows

MIP_REL_GAP = 1e-9  # HiGHS stops when its answer is proven within this share of the optimum
# A proof (`run(..., proof=True)`): HiGHS's primal heuristics look for answers, and where the
# answer to beat is known (the cutoff) their time is spent on answers the cutoff prunes anyway;
# its branching still finds a better one where there is one (exact either way). Feasibility jump
# stays on: off, the 50 x 100 benchmark day's proof took twice as long (its answers prune
# nodes); the rest off took that proof from 4.0 to 2.9 s (benchmarks/RESULTS.md).
PROOF_OPTIONS = {
    "mip_heuristic_effort": 0.0,
    "mip_heuristic_run_rins": False,
    "mip_heuristic_run_rens": False,
    "mip_heuristic_run_root_reduced_cost": False,
}


class SolveStatus(StrEnum):
    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"  # stopped at the time limit; an answer may still be there
    INFEASIBLE = "infeasible"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Program:
    """A mixed-integer program: minimise objective . v subject to the constraint rows, the
    integrality (1: integer) and the variable bounds; `fewest` (of the same length as v, or
    None): what the tie-break minimises among the answers no worse than the optimum."""

    objective: np.ndarray
    constraints: list[LinearConstraint]
    integrality: np.ndarray
    bounds: Bounds
    fewest: np.ndarray | None = None

    def with_rows(self, rows: Rows) -> Program:
        """The program with more rows (`rows` over the same columns)."""
        return replace(self, constraints=[*self.constraints, rows.constraint()])


@dataclass(frozen=True, slots=True)
class LimitRow:
    """One limit: sum of coefficient x column <= upper over a program's columns."""

    name: str
    entries: tuple[tuple[int, float], ...]
    upper: float

    def value(self, vector: np.ndarray) -> float:
        return float(sum(coef * vector[col] for col, coef in self.entries))

    def holds(self, vector: np.ndarray, tolerance: float = 1e-9) -> bool:
        return self.value(vector) <= self.upper + tolerance


def add_limit_rows(rows: Rows, limits: Sequence[LimitRow]) -> None:
    for limit in limits:
        rows.add(list(limit.entries), -np.inf, limit.upper)


class Deadline:
    """The end of a solve's time limit, shared by its steps; never later than the end of the
    plan's clock (`plan_clock`) where one runs."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        clock = _CLOCK.get()
        if clock is not None:
            self.end = min(self.end, clock.end)

    def left(self) -> float:
        return self.end - time.monotonic()

    def left_at_least(self, seconds: float = 0.001) -> float:
        """The time left, at least `seconds` (a last step always gets a try)."""
        return max(self.left(), seconds)


_CLOCK: ContextVar[Deadline | None] = ContextVar("fleetplan_plan_clock", default=None)


@contextmanager
def plan_clock(seconds: float) -> Iterator[Deadline]:
    """Within the block every solve shares one time limit of `seconds` (within an outer
    clock's, where one runs): a plan of many solves (the recommended fleet, the day, the
    baselines, the frontier) is bounded as a whole, not solve by solve. A thread started
    within it sees it only through `contextvars.copy_context`."""
    clock = Deadline(seconds)
    token = _CLOCK.set(clock)
    try:
        yield clock
    finally:
        _CLOCK.reset(token)


def clipped(time_limit_s: float) -> float:
    """`time_limit_s`, or the plan's time left where that is less."""
    clock = _CLOCK.get()
    return time_limit_s if clock is None else min(time_limit_s, clock.left())


def said(time_limit_s: float) -> float:
    """The time limit a message names: the plan's, where a plan clock runs (a step's own
    limit is what the plan had left, 0.001 s at the end, which is not what the user set)."""
    clock = _CLOCK.get()
    return time_limit_s if clock is None else clock.seconds


def spent() -> bool:
    """Whether the plan's clock (if one runs) has run out."""
    clock = _CLOCK.get()
    return clock is not None and clock.left() <= 0


def slack(best: float) -> float:
    """How much worse than `best` an answer may be and still be as good (the solver's
    tolerances): the tie-break's margin."""
    return max(1e-9, 1e-7 * abs(best))


def no_worse(objective: np.ndarray, best: float) -> LinearConstraint:
    """The row keeping an answer's objective within `slack` of `best`."""
    return LinearConstraint(objective, -np.inf, best + slack(best))


def run(
    program: Program,
    time_limit_s: float,
    *,
    objective: np.ndarray | None = None,
    extra: Sequence[LinearConstraint] = (),
    bounds: Bounds | None = None,
    cutoff: float | None = None,
    proof: bool = False,
) -> OptimizeResult:
    """The program solved once by HiGHS (with another objective, more rows or tighter bounds
    where given): the only call of scipy's `milp` in the planner. `cutoff`: only answers of
    objective below it are of interest (HiGHS's `objective_bound`: it prunes every branch that
    cannot go below it, so it need not prove what is known already); read the answer with
    `improves`. `proof`: with a cutoff, the search is mostly a proof that nothing beats it
    (`PROOF_OPTIONS`)."""
    options = {"time_limit": max(clipped(time_limit_s), 1e-3), "mip_rel_gap": MIP_REL_GAP}
    if cutoff is not None:
        options["objective_bound"] = cutoff
        if proof:
            options.update(PROOF_OPTIONS)
    with warnings.catch_warnings(), without_stray_lines():
        # scipy warns that it passes the cutoff to HiGHS verbatim
        warnings.filterwarnings("ignore", "Unrecognized options", RuntimeWarning)
        return milp(
            program.objective if objective is None else objective,
            constraints=[*program.constraints, *extra],
            integrality=program.integrality,
            bounds=program.bounds if bounds is None else bounds,
            options=options,
        )


# HiGHS 1.12 (scipy 1.17's) prints this debug line on standard output, whatever its options, when
# it repairs an integer solution (ERGO-Code/HiGHS#2783, fixed after 1.12): in a plan's report, or
# the LiteLLM config `plan --router` writes to standard output, it would be a stray line.
STRAY_LINE = b"HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();\n"
_stray = threading.Lock()
_solving = {"depth": 0, "saved": None, "capture": None}


@contextmanager
def without_stray_lines() -> Iterator[None]:
    """While HiGHS solves, the process's standard output (file descriptor 1) goes to a
    temporary file; when the last solve in progress ends, it is restored and what was written
    meanwhile is passed on without `STRAY_LINE`. Where descriptor 1 cannot be redirected (none
    open) the solve runs as it is."""
    with _stray:
        if _solving["depth"] == 0:
            try:
                sys.stdout.flush()
                saved = os.dup(1)
            except (OSError, ValueError, AttributeError):
                saved = None
            capture = None
            if saved is not None:
                capture = tempfile.TemporaryFile()  # noqa: SIM115 (closed by _pass_on)
                os.dup2(capture.fileno(), 1)
            _solving.update(saved=saved, capture=capture)
        _solving["depth"] += 1
    try:
        yield
    finally:
        with _stray:
            _solving["depth"] -= 1
            if _solving["depth"] == 0 and _solving["saved"] is not None:
                _pass_on(_solving["saved"], _solving["capture"])
                _solving.update(saved=None, capture=None)


def _pass_on(saved: int, capture) -> None:
    with suppress(OSError, ValueError, AttributeError):
        sys.stdout.flush()
    os.dup2(saved, 1)
    os.close(saved)
    capture.seek(0)
    left = memoryview(capture.read().replace(STRAY_LINE, b""))
    capture.close()
    while left:
        try:
            left = left[os.write(1, left) :]
        except OSError:  # standard output closed meanwhile (a broken pipe): nothing to write to
            break


def improves(result: OptimizeResult, cutoff: float) -> bool | None:
    """A `run` with `cutoff` read: True where it found an answer below the cutoff, False where
    it proved there is none (it finished: every branch that could go below was explored, and
    what it reports, if anything, is not below), None where it stopped before knowing."""
    if result.status == 0:
        return result.x is not None and float(result.fun) < cutoff
    if result.status == 2:  # no answer below the cutoff at all
        return False
    if result.x is not None and float(result.fun) < cutoff:
        return True
    return None


# What the tie-break may restrict its columns to, given the objective it must stay under (the
# day's reduced-cost fixing); the program's bounds where None.
Usable = Callable[[float], Bounds]


def tie_break(
    program: Program,
    result: OptimizeResult,
    time_limit_s: float,
    *,
    bounds: Bounds | None = None,
    usable: Usable | None = None,
) -> OptimizeResult:
    """Among the answers no worse than the optimum `result`, the one of least `program.fewest`
    (a second, lexicographic solve); `result` itself where that solve does not finish."""
    if program.fewest is None or result.status != 0:
        return result
    deadline = Deadline(time_limit_s)
    best = float(result.fun)
    limits = usable(best + slack(best)) if usable is not None else bounds
    if deadline.left() <= 0:
        return result
    extra = [no_worse(program.objective, best)]
    fewest = run(program, deadline.left(), objective=program.fewest, extra=extra, bounds=limits)
    return fewest if fewest.status == 0 else result


def solve(
    program: Program,
    time_limit_s: float,
    *,
    fewest: bool = True,
    bounds: Bounds | None = None,
    usable: Usable | None = None,
) -> OptimizeResult:
    """The program solved (within `bounds`, the program's own by default), then, with the time
    left, its tie-break (`tie_break`) where `fewest`."""
    deadline = Deadline(time_limit_s)
    result = run(program, time_limit_s, bounds=bounds)
    if result.status == 0 and fewest and deadline.left() > 0:
        return tie_break(program, result, deadline.left(), bounds=bounds, usable=usable)
    return result


@dataclass(frozen=True, slots=True)
class Outcome:
    """scipy's answer in the planner's terms: a status and a message always, the values where
    an answer was found (at the optimum, or the best one at the time limit)."""

    status: SolveStatus
    message: str
    x: np.ndarray | None = None
    mip_gap: float | None = None
    dual_bound: float | None = None


def _finite(value: object) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


def outcome(result: OptimizeResult, time_limit_s: float, *, infeasible: str) -> Outcome:
    """The one status map: scipy's 0 (optimal), 1 (the time limit: with the best answer found,
    if any), 2 (infeasible, said as `infeasible`), anything else an error in the solver's
    words."""
    if result.x is None:
        if result.status == 1:
            message = f"no plan found within the time limit of {said(time_limit_s):g} s"
            return Outcome(SolveStatus.TIME_LIMIT, message)
        if result.status == 2:
            return Outcome(SolveStatus.INFEASIBLE, infeasible)
        return Outcome(SolveStatus.ERROR, f"the solver stopped: {result.message}")
    x = np.asarray(result.x, dtype=float)
    gap = getattr(result, "mip_gap", None)
    if result.status == 0:
        return Outcome(SolveStatus.OPTIMAL, "optimal", x, gap)
    if result.status != 1:
        return Outcome(SolveStatus.ERROR, f"the solver stopped: {result.message}")
    message = f"stopped at the time limit of {said(time_limit_s):g} s"
    if gap is not None and math.isfinite(gap):
        message += f" with a feasible plan that is not proven optimal (relative gap {gap:.2%})"
    bound = _finite(getattr(result, "mip_dual_bound", None))
    return Outcome(SolveStatus.TIME_LIMIT, message, x, gap, bound)
