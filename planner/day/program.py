"""The day program: a scenario of version 2 planned over its 24 hours.

Candidate pools are (offer, configuration, class), as at the peak (`economics.PoolEconomics`,
one per offer), with their coefficients in each hour (the site's hourly electricity price and
grid intensity). Variables:

- R_j, integer: reserved servers of unit j = (reserved offer, configuration), paid every hour;
- s_ph, integer: servers of pool p serving its class in hour h (a server serves one class within
  an hour); for an on-demand offer these are the servers rented that hour;
- x_ph >= 0: the rate pool p carries in hour h.

    minimise   sum_h  w_usd * cost_h + w_kg * kg_h
    subject to sum_p x_ph = demand_kh                       (each class, each hour it has traffic)
               sum_{h in window} sum_p 3600 x_ph = daily_k  (each volume class, inside its window)
               x_ph <= capacity_p * s_ph                     (a pool carries what it can)
               sum_{p of unit j} s_ph <= R_j                 (reserved servers, each hour)
               GPU limits (a reserved offer's GPUs; an on-demand offer's, each hour),
               budget and carbon cap per hour and per day

A reserved server costs its price and draws its configuration's lowest fixed power (idle) every
hour, with its embodied carbon; serving a class adds the class's fixed power above that and the
power of the carried rate. An on-demand server costs its price, fixed power and embodied carbon
in the hours it runs. Ties go to the fewest GPU-hours (a second, lexicographic solve).

Separability: with no reserved pool, classes meet only in the limits, so each class is solved
alone first and the union kept where it meets every limit (`LimitRow`: one definition for the
solver's row and the check), as the peak program does; with reserved pools the classes share
servers across the day and the program is solved jointly.

Speed, all exact: pools another beats and hours that repeat another are left out
(`day_pruning`); the demand rows carry rounding cuts (`day_cuts`); the tie-break solves on the
columns a no-worse plan can use (`day_lp.fixed`); a large day is planned by decomposition
(`_decomposed`), proven optimal where its last step finishes in time, its gap stated where not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import Bounds, OptimizeResult

from fleetplan.planner.day.cuts import cut_rows, tightened
from fleetplan.planner.day.hourly_pools import DayLimits, DayPool
from fleetplan.planner.day.layout import (
    DaySolution,
    Layout,
    day_limit_rows,
    fill_rates,
    solution_of,
    vector_of,
)
from fleetplan.planner.day.pruning import identical_hours, undominated
from fleetplan.planner.day.relaxation import fixed, relax
from fleetplan.planner.peak.program import Weights
from fleetplan.planner.scenario.parts import HOURS
from fleetplan.planner.solve import kernel
from fleetplan.planner.solve.kernel import Deadline, Program, SolveStatus, Usable
from fleetplan.planner.solve.rows import Rows

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class DayProgram(Program):
    """The kernel's program (its tie-break: the fewest GPU-hours), and whether the rates are
    left out of it (`covering`: filled in over the chosen servers)."""

    covering: bool = False


def _demand_rows(layout: Layout, rows: Rows, covering: bool) -> np.ndarray:
    """Each interactive class's demand each hour, each volume class's over its window: as
    rates carried (or, `covering`, as the servers' capacity), with the tightened covering row
    and its rounding cuts (`day_cuts`). Returns each pair's most rate (its class's demand)."""
    pools, pairs = layout.pools, layout.pairs
    by_class: dict[tuple[str, int | None], list[int]] = {}
    for n, (i, h) in enumerate(pairs):
        traffic = pools[i].traffic
        by_class.setdefault((traffic.name, None if traffic.is_volume else h), []).append(n)
    upper_x = np.zeros(len(pairs))
    for (_name, h), ns in by_class.items():
        pool = pools[pairs[ns[0]][0]]
        demand = pool.demand or pool.traffic.hourly_demand()
        target = pool.traffic.daily_requests / 3600 if h is None else demand[h]
        cover = [(layout.s(n), pools[pairs[n][0]].capacity) for n in ns]
        if not covering:
            rows.add([(layout.x(n), 1.0) for n in ns], target, target)
        rows.add(tightened(cover, target), target, np.inf)
        cuts = cut_rows(cover, target)
        if cuts is not None:
            rows.add_block(*cuts, np.inf)
        upper_x[ns] = target
    return upper_x


def _program(layout: Layout, weights: Weights, limits: DayLimits) -> DayProgram:
    pools, pairs, units = layout.pools, layout.pairs, layout.units
    objective = np.zeros(layout.columns)
    first_s, first_x = layout.s(0), layout.x(0)
    per_hour = layout.weight[layout.pair_hour] if pairs else np.zeros(0)
    for kind, weight in (("usd", weights.usd), ("kg", weights.kg)):
        if weight:
            if units:
                objective[:first_s] += weight * (layout.base[kind] @ layout.weight)
            objective[first_s:first_x] += weight * layout.server_coef[kind] * per_hour
            objective[first_x:] += weight * layout.rps_coef[kind] * per_hour
    limits_rows = day_limit_rows(layout, limits)
    # Where no carried req/s costs or emits anything the objective or a limit counts, the rates
    # need no columns: the servers' capacity covers the demand, and rates are filled in after.
    covering = not np.any(objective[layout.x(0) :]) and all(
        col < layout.x(0) for row in limits_rows for col, _ in row.entries
    )
    rows = Rows(layout.columns)
    upper_x = _demand_rows(layout, rows, covering)
    capacity = np.array([pools[i].capacity for i in layout.pair_pool.tolist()], dtype=float)
    if not covering and pairs:  # a pool carries what its servers can: x - capacity s <= 0
        n = np.arange(len(pairs))
        cols = np.column_stack([layout.x(0) + n, layout.s(0) + n])
        vals = np.column_stack([np.ones(len(pairs)), -capacity])
        rows.add_rows(cols, vals, -np.inf, 0.0)
    upper_s = np.ceil(upper_x / capacity - _EPS)
    upper_s = np.maximum(upper_s, 0.0)
    upper_r = np.zeros(len(units))
    for h in layout.hours:  # reserved servers, each hour
        by_unit: dict[int, list[int]] = {}
        for n in layout.by_hour[h]:
            pool = pools[pairs[n][0]]
            if pool.reserved:
                by_unit.setdefault(units[pool.unit], []).append(n)
        for j, ns in by_unit.items():
            rows.add([(layout.s(n), 1.0) for n in ns] + [(j, -1.0)], -np.inf, 0.0)
            upper_r[j] = max(upper_r[j], float(upper_s[ns].sum()))
    for unit, j in units.items():  # room for every owned GPU, serving or not
        owned = limits.min_gpus.get(unit[0])
        if owned:
            upper_r[j] = max(upper_r[j], math.ceil(owned / unit[2]))
    kernel.add_limit_rows(rows, limits_rows)
    gpu_hours = np.zeros(layout.columns)
    for unit, j in units.items():
        gpu_hours[j] = HOURS * unit[2]
    for n, (i, h) in enumerate(pairs):
        if not pools[i].reserved:
            gpu_hours[layout.s(n)] = pools[i].econ.gpus_per_server * layout.weight[h]
    integrality = np.concatenate([np.ones(len(units)), np.ones(len(pairs)), np.zeros(len(pairs))])
    lower = np.zeros(layout.columns)
    upper = np.concatenate([upper_r, upper_s, np.zeros(len(pairs)) if covering else upper_x])
    bounds = Bounds(lower, upper)
    return DayProgram(objective, [rows.constraint()], integrality, bounds, gpu_hours, covering)


def solve_day(
    pools: Sequence[DayPool],
    *,
    weights: Weights,
    limits: DayLimits,
    time_limit_s: float = 10.0,
    fewest_gpus: bool = True,
) -> DaySolution:
    """Reserved servers, and servers and rates per pool and hour, serving every class's day."""
    deadline = Deadline(time_limit_s)
    names = list(dict.fromkeys(p.traffic.name for p in pools))
    if not any(p.reserved for p in pools) and len(names) > 1:
        split = _per_class(pools, names, weights, time_limit_s, fewest_gpus)
        if split.status is SolveStatus.INFEASIBLE:
            return split
        if split.status is SolveStatus.OPTIMAL:
            layout = Layout(pools, range(len(pools)))
            vector = vector_of(layout, split)
            if all(row.holds(vector) for row in day_limit_rows(layout, limits)):
                return split
    left = deadline.left_at_least()
    return _solve(pools, undominated(pools, limits), weights, limits, left, fewest_gpus)


def _per_class(
    pools: Sequence[DayPool],
    names: list[str],
    weights: Weights,
    time_limit_s: float,
    fewest_gpus: bool,
) -> DaySolution:
    deadline = Deadline(time_limit_s)
    servers: dict[tuple[int, int], int] = {}
    rates: dict[tuple[int, int], float] = {}
    grouped: dict[str, list[int]] = {}  # the pools by class, in one pass
    for i, pool in enumerate(pools):
        grouped.setdefault(pool.traffic.name, []).append(i)
    for name in names:
        left = deadline.left()
        if left <= 0:
            message = f"time limit of {kernel.said(time_limit_s):g} s reached"
            return DaySolution(SolveStatus.TIME_LIMIT, message, {}, {}, {})
        members = grouped[name]
        part = _solve(pools, members, weights, DayLimits({}), left, fewest_gpus)
        if part.status is not SolveStatus.OPTIMAL:
            return part
        servers |= part.servers
        rates |= part.rates
    return DaySolution(SolveStatus.OPTIMAL, "optimal", {}, servers, rates)


def _solve(
    pools: Sequence[DayPool],
    members: Sequence[int],
    weights: Weights,
    limits: DayLimits,
    time_limit_s: float,
    fewest_gpus: bool,
) -> DaySolution:
    deadline = Deadline(time_limit_s)
    hours = identical_hours(pools, members, limits)
    layout = Layout(pools, members, hours)
    if not layout.pairs:
        return DaySolution(SolveStatus.OPTIMAL, "nothing to serve", {}, {}, {})
    program = _program(layout, weights, limits)
    if len(layout.pairs) > LARGE:
        found = _decomposed(layout, program, hours, weights, limits, time_limit_s, fewest_gpus)
        if found is not None:
            return found
    left = deadline.left_at_least()
    return _answer(layout, program, _run(program, left, fewest_gpus), time_limit_s)


def _answer(layout: Layout, program: DayProgram, result: OptimizeResult, limit_s: float):
    if program.covering and result.x is not None:
        result.x = fill_rates(layout, np.array(result.x, dtype=float))
    return solution_of(result, layout, limit_s)


# Above this many (pool, hour) integer columns the day is planned by decomposition (`_decomposed`):
# the 5 x 20 benchmark day has 1,300 after pruning, the 50 x 100 one 42,000.
LARGE = 20_000
PROVE = True  # step 3 of `_decomposed`; off, a large day stops at step 2 (its plan and its gap)


def _decomposed(
    layout: Layout,
    program: DayProgram,
    hours: Sequence[Sequence[int]],
    weights: Weights,
    limits: DayLimits,
    time_limit_s: float,
    fewest_gpus: bool,
) -> DaySolution | None:
    """A large day in three steps, exact where the last one finishes:
    1. the LP relaxation (with `day_cuts`' rounding cuts): a lower bound, the pools worth a
       column (those it uses), and each column's reduced cost;
    2. the exact program over those pools alone: a plan, feasible for the whole day;
    3. the whole program on the columns a plan no worse than that one can use (reduced-cost
       fixing, exact): the optimum, proven, where it finishes within the time left. Where it
       is step 2's plan, that plan is kept, its tie-break (fewest GPU-hours) being among the
       pools of step 1 (said so); where it is better, its tie-break is over the whole.
    Where it does not finish, the plan of step 2 (or the better one step 3 found) is kept with
    its gap to the best bound known. None where the steps give no plan (then the whole program
    is solved)."""
    deadline = Deadline(time_limit_s)
    relaxed = relax(program.objective, program.constraints, program.bounds)
    if relaxed is not None and relaxed.status == 2:
        message = "the limits leave no way to serve every class every hour"
        return DaySolution(SolveStatus.INFEASIBLE, message, {}, {}, {})
    if relaxed is None or relaxed.x is None:
        return None
    servers = np.asarray(relaxed.x[layout.s(0) : layout.s(0) + len(layout.pairs)])
    used = np.unique(layout.pair_pool[servers > 1e-6]).tolist()
    sub = Layout(layout.pools, used, hours)
    subprogram = _program(sub, weights, limits)
    left = deadline.left()
    if left <= 0:
        return None
    found = _answer(sub, subprogram, _run(subprogram, left, fewest_gpus), time_limit_s)
    if not found.has_plan:
        return None
    bound = float(relaxed.fun)
    left = deadline.left()
    if left > 0 and PROVE:
        step2 = found
        proven, found, bound = _prove(layout, program, relaxed, found, left, fewest_gpus)
        if proven is not None:
            if proven is step2:  # step 2's plan; its tie-break was among the pools of step 1
                message = (
                    "optimal (proven; ties broken toward the fewest GPU-hours among the plans "
                    f"over the {len(used)} of {len(layout.members)} pools the LP relaxation uses)"
                )
                return replace(found, status=SolveStatus.OPTIMAL, message=message, mip_gap=0.0)
            return proven
    value = float(program.objective @ vector_of(layout, found))
    gap = max(0.0, (value - bound) / max(abs(value), 1e-12))
    if gap <= 1e-9:  # the bound proves it
        return replace(found, status=SolveStatus.OPTIMAL, message="optimal", mip_gap=gap)
    message = (
        f"not proven optimal within the time limit of {kernel.said(time_limit_s):g} s: a day of "
        f"{len(layout.pairs):,} pool-hours is planned by decomposition (the exact program over "
        f"the {len(used)} of {len(layout.members)} pools its LP relaxation uses); its objective "
        f"is within {gap:.2%} of a proven lower bound"
    )
    return replace(found, status=SolveStatus.TIME_LIMIT, message=message, mip_gap=gap, bound=bound)


def _prove(
    layout: Layout,
    program: DayProgram,
    relaxed: OptimizeResult,
    found: DaySolution,
    time_limit_s: float,
    fewest_gpus: bool,
) -> tuple[DaySolution | None, DaySolution, float]:
    """Step 3 of `_decomposed`: the whole program on the columns a plan no worse than `found`
    can use. Returns the proven optimum (`found` itself where it is one; else None), the best
    plan known, and the best lower bound known."""
    deadline = Deadline(time_limit_s)
    value = float(program.objective @ vector_of(layout, found))
    bound = float(relaxed.fun)
    columns = fixed(program.integrality, relaxed, value, program.bounds)
    cutoff = value - kernel.slack(value)  # only a plan better than `found` is of interest
    whole = kernel.run(program, time_limit_s, bounds=columns, cutoff=cutoff, proof=True)
    better = kernel.improves(whole, cutoff)
    if better is False:
        return found, found, value
    if better and whole.status == 0:
        left = deadline.left()
        if fewest_gpus and left > 0:
            whole = kernel.tie_break(program, whole, left, usable=usable(program, columns, relaxed))
        proven = _answer(layout, program, whole, time_limit_s)
        return proven, proven, float(whole.fun)
    dual = getattr(whole, "mip_dual_bound", None)
    if dual is not None and math.isfinite(dual):  # of the plans no worse than `found`
        bound = max(bound, min(float(dual), value))
    if whole.x is not None and float(program.objective @ whole.x) < value:
        found = _answer(layout, program, whole, time_limit_s)
    return None, found, bound


def _run(program: DayProgram, time_limit_s: float, fewest_gpus: bool) -> OptimizeResult:
    """The program solved, then its tie-break (the kernel's), on the columns a plan no worse
    than the optimum can use (`usable`)."""
    return kernel.solve(program, time_limit_s, fewest=fewest_gpus, usable=usable(program))


def usable(
    program: DayProgram, bounds: Bounds | None = None, relaxed: OptimizeResult | None = None
) -> Usable:
    """The columns a plan of objective at most a ceiling can use: `bounds` (the program's own
    by default) with those the LP relaxation's reduced costs rule out set to 0
    (`relaxation.fixed`); the relaxation is solved when first needed, where not given."""

    def within(ceiling: float) -> Bounds:
        lp = relaxed or relax(program.objective, program.constraints, program.bounds)
        return fixed(program.integrality, lp, ceiling, bounds or program.bounds)

    return within
