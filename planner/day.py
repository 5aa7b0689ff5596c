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

import functools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, milp

from fleetplan.planner.day_cuts import covering_cuts, tightened
from fleetplan.planner.day_lp import fixed, relax
from fleetplan.planner.day_pools import DayLimits, DayPool, day_pools  # noqa: F401 (re-exported)
from fleetplan.planner.day_pruning import identical_hours, undominated
from fleetplan.planner.milp import LimitRow, Rows, SolveStatus, Weights
from fleetplan.planner.scenario import HOURS

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class DaySolution:
    """The program's answer: reserved servers per unit, and per (pool, hour) servers and rate."""

    status: SolveStatus
    message: str
    reserved: dict[tuple[str, str, int], int]
    servers: dict[tuple[int, int], int]  # (pool index, hour) -> servers serving its class
    rates: dict[tuple[int, int], float]
    mip_gap: float | None = None
    bound: float | None = None  # a proven lower bound on the objective, where one is known

    @property
    def has_plan(self) -> bool:
        return self.status is SolveStatus.OPTIMAL or bool(self.servers or self.reserved)


class Layout:
    """The program's columns: R per reserved unit, then (s, x) per (pool, hour) it may serve.

    `hours` groups hours the program plans once (`day_pruning.identical_hours`): the first of a
    group stands for all of them (its terms counted once per hour of the group), and the answer
    is copied to the others. By default every hour is its own."""

    def __init__(
        self,
        pools: Sequence[DayPool],
        members: Sequence[int],
        hours: Sequence[Sequence[int]] | None = None,
    ) -> None:
        self.pools = pools
        self.members = list(members)
        groups = [list(g) for g in hours] if hours else [[h] for h in range(HOURS)]
        self.copies = {g[0]: g for g in groups}  # an hour planned -> the hours it stands for
        self.hours = sorted(self.copies)
        self.weight = np.zeros(HOURS)
        for h, group in self.copies.items():
            self.weight[h] = len(group)
        units = sorted({pools[i].unit for i in self.members if pools[i].reserved})
        self.units = {u: j for j, u in enumerate(units)}
        planned = np.zeros(HOURS, dtype=bool)
        planned[self.hours] = True
        served: dict[str, np.ndarray] = {}  # a class -> the hours it has pairs in
        for i in self.members:
            traffic = pools[i].traffic
            if traffic.name in served:
                continue
            if traffic.is_volume:
                hours_of = np.zeros(HOURS, dtype=bool)
                hours_of[list(traffic.window())] = True
                if not planned[hours_of].all():
                    raise ValueError(f"an hour of {traffic.name}'s window is planned with others")
            else:
                demand = np.asarray(pools[i].demand or traffic.hourly_demand(), dtype=float)
                hours_of = planned & (demand > 0)
            served[traffic.name] = hours_of
        mask = np.array([served[pools[i].traffic.name] for i in self.members], dtype=bool)
        at_member, at_hour = np.nonzero(mask.reshape(len(self.members), HOURS))
        chosen = np.asarray(self.members, dtype=int)[at_member]
        self.pairs: list[tuple[int, int]] = list(
            zip(chosen.tolist(), at_hour.tolist(), strict=True)
        )
        self.by_hour: list[list[int]] = [[] for _ in range(HOURS)]
        for n, h in enumerate(at_hour.tolist()):
            self.by_hour[h].append(n)
        self.columns = len(self.units) + 2 * len(self.pairs)
        # Coefficients per pair (`coefficients`' kinds), a reserved pool's above its unit's base:
        # a reserved server serving nothing, its price and its configuration's lowest fixed
        # power (idle), with its embodied carbon, every hour.
        members_pools = [pools[i] for i in self.members]
        at = {i: m for m, i in enumerate(self.members)}
        unit_of = np.array(
            [self.units[p.unit] if p.reserved else -1 for p in members_pools], dtype=int
        )
        reserved = unit_of >= 0
        pm = np.array([at[i] for i, _h in self.pairs], dtype=int)
        self.pair_hour = np.array([h for _i, h in self.pairs], dtype=int)
        self.base: dict[str, np.ndarray] = {}
        self.server_coef: dict[str, np.ndarray] = {}
        self.rps_coef: dict[str, np.ndarray] = {}
        for kind in KINDS:
            server, rps = _tables(members_pools, kind)
            base = np.full((len(units), HOURS), np.inf)
            if reserved.any():
                np.minimum.at(base, unit_of[reserved], server[reserved])
            self.base[kind] = base
            if not self.pairs:
                self.server_coef[kind] = self.rps_coef[kind] = np.zeros(0)
                continue
            coef = server[pm, self.pair_hour]
            pair_unit = unit_of[pm]
            held = pair_unit >= 0
            coef[held] -= base[pair_unit[held], self.pair_hour[held]]
            self.server_coef[kind] = coef
            self.rps_coef[kind] = rps[pm, self.pair_hour]

    @functools.cached_property
    def index(self) -> dict[tuple[int, int], int]:
        """(pool, hour) -> its pair's position."""
        return {pair: n for n, pair in enumerate(self.pairs)}

    def s(self, n: int) -> int:
        return len(self.units) + n

    def x(self, n: int) -> int:
        return len(self.units) + len(self.pairs) + n


KINDS = ("usd", "kg", "kwh")  # cost, carbon, facility energy (GPU energy x PUE)


def coefficients(pool: DayPool, hour: int, kind: str) -> tuple[float, float]:
    """Per server and per carried req/s in `hour`: $ ('usd'), kgCO2e ('kg', 0 where unknown)
    or facility kWh ('kwh', 0 where unknown)."""
    if kind == "usd":
        return pool.usd_server[hour], pool.usd_rps[hour]
    if kind == "kg":
        return pool.kg_server[hour] or 0.0, pool.kg_rps[hour] or 0.0
    econ = pool.econ
    return (econ.kw_per_server or 0.0) * econ.pue, (econ.kw_per_rps or 0.0) * econ.pue


def _tables(pools: Sequence[DayPool], kind: str) -> tuple[np.ndarray, np.ndarray]:
    """`coefficients` of every pool in every hour: (server, rps), each of shape (pools, 24)."""
    if not pools:
        return np.zeros((0, HOURS)), np.zeros((0, HOURS))
    if kind == "usd":
        return (
            np.array([p.usd_server for p in pools], dtype=float),
            np.array([p.usd_rps for p in pools], dtype=float),
        )
    if kind == "kg":
        return (
            np.array([[v or 0.0 for v in p.kg_server] for p in pools], dtype=float),
            np.array([[v or 0.0 for v in p.kg_rps] for p in pools], dtype=float),
        )
    per = np.array([[coefficients(p, 0, kind)[0], coefficients(p, 0, kind)[1]] for p in pools])
    return np.repeat(per[:, :1], HOURS, axis=1), np.repeat(per[:, 1:], HOURS, axis=1)


def hour_terms(layout: Layout, hour: int, kind: str) -> list[tuple[int, float]]:
    """The hour's cost, carbon or energy (`coefficients`' kinds) over the columns: what the
    objective, the limits and the reported figures (`hourly`) all sum."""
    base = layout.base[kind]
    terms = [(j, float(base[j, hour])) for j in range(len(layout.units)) if base[j, hour]]
    server, rps = layout.server_coef[kind], layout.rps_coef[kind]
    ns = layout.by_hour[hour]
    terms += [(layout.s(n), float(server[n])) for n in ns if server[n]]
    terms += [(layout.x(n), float(rps[n])) for n in ns if rps[n]]
    return terms


def hourly(layout: Layout, vector: np.ndarray, kind: str) -> np.ndarray:
    """`hour_terms` of every hour at once, summed over `vector`: the 24 hours' figures (of a
    layout whose every hour is its own)."""
    units, count = len(layout.units), len(layout.pairs)
    out = layout.base[kind].T @ vector[:units] if units else np.zeros(HOURS)
    if count:
        s = vector[units : units + count]
        x = vector[units + count :]
        per_pair = layout.server_coef[kind] * s + layout.rps_coef[kind] * x
        out = out + np.bincount(layout.pair_hour, weights=per_pair, minlength=HOURS)
    return out


def limit_rows(layout: Layout, limits: DayLimits) -> list[LimitRow]:
    """Every limit of the day, defined once: the solver's rows and the split's check."""
    rows = []
    for offer, max_gpus in limits.max_gpus.items():
        reserved = [(j, float(u[2])) for u, j in layout.units.items() if u[0] == offer]
        if reserved:
            rows.append(LimitRow(f"max_gpus of {offer}", tuple(reserved), float(max_gpus)))
        for h in layout.hours:
            hourly = [
                (layout.s(n), float(pool.econ.gpus_per_server))
                for n in layout.by_hour[h]
                if not (pool := layout.pools[layout.pairs[n][0]]).reserved
                and pool.offer.offer_name == offer
            ]
            if hourly:
                rows.append(LimitRow(f"max_gpus of {offer} at {h}:00", tuple(hourly), max_gpus))
    for kind, hourly_bound, daily_bound, what in (
        ("usd", limits.budget_usd_per_hour, limits.budget_usd_per_day, "budget"),
        ("kg", limits.carbon_kg_per_hour, limits.carbon_kg_per_day, "carbon cap"),
    ):
        if hourly_bound is None and daily_bound is None:
            continue
        day: dict[int, float] = {}
        for h in layout.hours:
            terms = hour_terms(layout, h, kind)
            if hourly_bound is not None:
                rows.append(LimitRow(f"{what} at {h}:00", tuple(terms), hourly_bound))
            for col, coef in terms:
                day[col] = day.get(col, 0.0) + coef * layout.weight[h]
        if daily_bound is not None:
            rows.append(LimitRow(f"{what} per day", tuple(day.items()), daily_bound))
    return rows


@dataclass(frozen=True, slots=True)
class _Program:
    objective: np.ndarray
    constraints: list[LinearConstraint]
    integrality: np.ndarray
    bounds: Bounds
    gpu_hours: np.ndarray  # what the tie-break minimises
    covering: bool = False  # rates not in the program: filled in over the chosen servers


def _program(layout: Layout, weights: Weights, limits: DayLimits) -> _Program:
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
    rows = Rows(layout.columns)
    # demand: each interactive class each hour; each volume class over its window
    by_class: dict[tuple[str, int | None], list[int]] = {}
    for n, (i, h) in enumerate(pairs):
        traffic = pools[i].traffic
        by_class.setdefault((traffic.name, None if traffic.is_volume else h), []).append(n)
    limits_rows = limit_rows(layout, limits)
    # Where no carried req/s costs or emits anything the objective or a limit counts, the rates
    # need no columns: the servers' capacity covers the demand, and rates are filled in after.
    covering = not np.any(objective[layout.x(0) :]) and all(
        col < layout.x(0) for row in limits_rows for col, _ in row.entries
    )
    upper_x = np.zeros(len(pairs))
    for (_name, h), ns in by_class.items():
        pool = pools[pairs[ns[0]][0]]
        demand = pool.demand or pool.traffic.hourly_demand()
        target = pool.traffic.daily_requests / 3600 if h is None else demand[h]
        cover = [(layout.s(n), pools[pairs[n][0]].capacity) for n in ns]
        if covering:
            rows.add(tightened(cover, target), target, np.inf)
        else:
            rows.add([(layout.x(n), 1.0) for n in ns], target, target)
            rows.add(tightened(cover, target), target, np.inf)
        for cut, lower in covering_cuts(cover, target):
            rows.add(cut, lower, np.inf)
        upper_x[ns] = target
    for n, (i, _h) in enumerate(pairs):  # capacity
        if not covering:
            rows.add([(layout.x(n), 1.0), (layout.s(n), -pools[i].capacity)], -np.inf, 0.0)
    upper_s = np.ceil(upper_x / np.array([pools[i].capacity for i, _ in pairs]) - _EPS)
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
    for limit in limits_rows:
        rows.add(list(limit.entries), -np.inf, limit.upper)
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
    return _Program(objective, [rows.constraint()], integrality, bounds, gpu_hours, covering)


def solve_day(
    pools: Sequence[DayPool],
    *,
    weights: Weights,
    limits: DayLimits,
    time_limit_s: float = 10.0,
    fewest_gpus: bool = True,
) -> DaySolution:
    """Reserved servers, and servers and rates per pool and hour, serving every class's day."""
    started = time.monotonic()
    names = list(dict.fromkeys(p.traffic.name for p in pools))
    if not any(p.reserved for p in pools) and len(names) > 1:
        split = _per_class(pools, names, weights, time_limit_s, fewest_gpus)
        if split.status is SolveStatus.INFEASIBLE:
            return split
        if split.status is SolveStatus.OPTIMAL:
            layout = Layout(pools, range(len(pools)))
            vector = vector_of(layout, split)
            if all(row.holds(vector) for row in limit_rows(layout, limits)):
                return split
    left = max(time_limit_s - (time.monotonic() - started), 0.001)
    return _solve(pools, undominated(pools, limits), weights, limits, left, fewest_gpus)


def _per_class(
    pools: Sequence[DayPool],
    names: list[str],
    weights: Weights,
    time_limit_s: float,
    fewest_gpus: bool,
) -> DaySolution:
    deadline = time.monotonic() + time_limit_s
    servers: dict[tuple[int, int], int] = {}
    rates: dict[tuple[int, int], float] = {}
    for name in names:
        left = deadline - time.monotonic()
        if left <= 0:
            return DaySolution(
                SolveStatus.TIME_LIMIT, f"time limit of {time_limit_s:g} s reached", {}, {}, {}
            )
        members = [i for i, p in enumerate(pools) if p.traffic.name == name]
        part = _solve(pools, members, weights, DayLimits({}), left, fewest_gpus)
        if part.status is not SolveStatus.OPTIMAL:
            return part
        servers |= part.servers
        rates |= part.rates
    return DaySolution(SolveStatus.OPTIMAL, "optimal", {}, servers, rates)


def vector_of(layout: Layout, solution: DaySolution) -> np.ndarray:
    """The solution over the layout's columns (what it has outside them is left out)."""
    vector = np.zeros(layout.columns)
    for unit, j in layout.units.items():
        vector[j] = solution.reserved.get(unit, 0)
    index = layout.index
    for pair, count in solution.servers.items():
        if (n := index.get(pair)) is not None:
            vector[layout.s(n)] = count
    for pair, rate in solution.rates.items():
        if (n := index.get(pair)) is not None:
            vector[layout.x(n)] = rate
    return vector


def _solve(
    pools: Sequence[DayPool],
    members: Sequence[int],
    weights: Weights,
    limits: DayLimits,
    time_limit_s: float,
    fewest_gpus: bool,
) -> DaySolution:
    started = time.monotonic()
    hours = identical_hours(pools, members, limits)
    layout = Layout(pools, members, hours)
    if not layout.pairs:
        return DaySolution(SolveStatus.OPTIMAL, "nothing to serve", {}, {}, {})
    program = _program(layout, weights, limits)
    if len(layout.pairs) > LARGE:
        found = _decomposed(layout, program, hours, weights, limits, time_limit_s, fewest_gpus)
        if found is not None:
            return found
    left = max(time_limit_s - (time.monotonic() - started), 0.001)
    return _answer(layout, program, _run(program, left, fewest_gpus), time_limit_s)


def _answer(layout: Layout, program: _Program, result: OptimizeResult, limit_s: float):
    if program.covering and result.x is not None:
        result.x = _fill_rates(layout, np.array(result.x, dtype=float))
    return _solution(result, layout, limit_s)


# Above this many (pool, hour) integer columns the day is planned by decomposition (`_decomposed`):
# the 5 x 20 benchmark day has 1,300 after pruning, the 50 x 100 one 42,000.
LARGE = 20_000
PROVE = True  # step 3 of `_decomposed`; off, a large day stops at step 2 (its plan and its gap)


def _decomposed(
    layout: Layout,
    program: _Program,
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
    started = time.monotonic()
    relaxed = relax(program.objective, program.constraints, program.bounds)
    if relaxed is not None and relaxed.status == 2:
        message = "the limits leave no way to serve every class every hour"
        return DaySolution(SolveStatus.INFEASIBLE, message, {}, {}, {})
    if relaxed is None or relaxed.x is None:
        return None
    used = sorted({i for n, (i, _h) in enumerate(layout.pairs) if relaxed.x[layout.s(n)] > 1e-6})
    sub = Layout(layout.pools, used, hours)
    subprogram = _program(sub, weights, limits)
    left = time_limit_s - (time.monotonic() - started)
    if left <= 0:
        return None
    found = _answer(sub, subprogram, _run(subprogram, left, fewest_gpus), time_limit_s)
    if not found.has_plan:
        return None
    value = float(program.objective @ vector_of(layout, found))
    bound = float(relaxed.fun)
    left = time_limit_s - (time.monotonic() - started)
    if left > 0 and PROVE:
        bounds = fixed(program.integrality, relaxed, value, program.bounds)
        whole = _milp(program, program.objective, program.constraints, left, bounds)
        slack = max(1e-9, 1e-7 * abs(value))
        if whole.status == 0 and float(whole.fun) >= value - slack:
            # the plan of step 2 is optimal; its tie-break was among the pools of step 1
            message = (
                f"optimal (proven; ties broken toward the fewest GPU-hours among the plans over "
                f"the {len(used)} of {len(layout.members)} pools the LP relaxation uses)"
            )
            return replace(found, status=SolveStatus.OPTIMAL, message=message, mip_gap=0.0)
        if whole.status == 0:
            left = time_limit_s - (time.monotonic() - started)
            if fewest_gpus and left > 0:
                whole = _fewest(program, whole, left, bounds, relaxed)
            return _answer(layout, program, whole, time_limit_s)
        dual = getattr(whole, "mip_dual_bound", None)
        if dual is not None and math.isfinite(dual):  # of the plans no worse than `found`
            bound = max(bound, min(float(dual), value))
        if whole.x is not None and float(program.objective @ whole.x) < value:
            found = _answer(layout, program, whole, time_limit_s)
            value = float(program.objective @ vector_of(layout, found))
    gap = max(0.0, (value - bound) / max(abs(value), 1e-12))
    if gap <= 1e-9:  # the bound proves it
        return replace(found, status=SolveStatus.OPTIMAL, message="optimal", mip_gap=gap)
    message = (
        f"not proven optimal within the time limit of {time_limit_s:g} s: a day of "
        f"{len(layout.pairs):,} pool-hours is planned by decomposition (the exact program over "
        f"the {len(used)} of {len(layout.members)} pools its LP relaxation uses); its objective "
        f"is within {gap:.2%} of a proven lower bound"
    )
    return replace(found, status=SolveStatus.TIME_LIMIT, message=message, mip_gap=gap, bound=bound)


def _fill_rates(layout: Layout, values: np.ndarray) -> np.ndarray:
    """Rates over the chosen servers (a covering program's): each class's demand of an hour (a
    volume's over its window) carried by its pools in turn, each up to its servers' capacity."""
    groups: dict[tuple[str, int | None], list[int]] = {}
    for n, (i, h) in enumerate(layout.pairs):
        traffic = layout.pools[i].traffic
        groups.setdefault((traffic.name, None if traffic.is_volume else h), []).append(n)
    for (_name, h), ns in groups.items():
        pool = layout.pools[layout.pairs[ns[0]][0]]
        demand = pool.demand or pool.traffic.hourly_demand()
        left = pool.traffic.daily_requests / 3600 if h is None else demand[h]
        for n in ns:
            room = round(values[layout.s(n)]) * layout.pools[layout.pairs[n][0]].capacity
            carried = min(left, room)
            values[layout.x(n)] = carried
            left -= carried
    return values


def _milp(
    program: _Program,
    objective: np.ndarray,
    constraints,
    time_limit_s: float,
    bounds: Bounds | None = None,
):
    return milp(
        objective,
        constraints=constraints,
        integrality=program.integrality,
        bounds=bounds or program.bounds,
        options={"time_limit": time_limit_s, "mip_rel_gap": 1e-9},
    )


def _run(
    program: _Program,
    time_limit_s: float,
    fewest_gpus: bool,
    bounds: Bounds | None = None,
    relaxed: OptimizeResult | None = None,
) -> OptimizeResult:
    """The program solved (within `bounds`, the program's own by default; `relaxed`: its LP
    relaxation where known), then its tie-break (`_fewest`)."""
    started = time.monotonic()
    bounds = bounds or program.bounds
    result = _milp(program, program.objective, program.constraints, time_limit_s, bounds)
    left = time_limit_s - (time.monotonic() - started)
    if result.status == 0 and left > 0 and fewest_gpus:
        return _fewest(program, result, left, bounds, relaxed)
    return result


def _fewest(
    program: _Program,
    result: OptimizeResult,
    time_limit_s: float,
    bounds: Bounds,
    relaxed: OptimizeResult | None,
) -> OptimizeResult:
    """Among the plans no worse than the optimum `result`, the fewest GPU-hours (a second,
    lexicographic solve), on the columns such a plan can use (`day_lp.fixed`)."""
    started = time.monotonic()
    best = float(result.fun)
    slack = max(1e-9, 1e-7 * abs(best))
    no_worse = LinearConstraint(program.objective, -np.inf, best + slack)
    relaxed = relaxed or relax(program.objective, program.constraints, program.bounds)
    usable = fixed(program.integrality, relaxed, best + slack, bounds)
    left = time_limit_s - (time.monotonic() - started)
    if left <= 0:
        return result
    fewest = _milp(program, program.gpu_hours, [*program.constraints, no_worse], left, usable)
    return fewest if fewest.status == 0 else result


def _solution(result: OptimizeResult, layout: Layout, time_limit_s: float) -> DaySolution:
    if result.x is None:
        if result.status == 1:
            message = f"no plan found within the time limit of {time_limit_s:g} s"
            return DaySolution(SolveStatus.TIME_LIMIT, message, {}, {}, {})
        if result.status == 2:
            message = "the limits leave no way to serve every class every hour"
            return DaySolution(SolveStatus.INFEASIBLE, message, {}, {}, {})
        return DaySolution(SolveStatus.ERROR, f"the solver stopped: {result.message}", {}, {}, {})
    values = result.x
    reserved = {u: round(values[j]) for u, j in layout.units.items() if round(values[j]) > 0}
    servers: dict[tuple[int, int], int] = {}
    rates: dict[tuple[int, int], float] = {}
    for n, (i, h) in enumerate(layout.pairs):
        rate = max(0.0, float(values[layout.x(n)]))
        if rate <= _EPS:
            continue
        pool = layout.pools[i]
        held = round(values[layout.s(n)])
        # a reserved server not needed for the carried rate stays idle (no worse: it costs the
        # same or less idle); an on-demand server is only rented where it carries load
        count = min(held, math.ceil(rate / pool.capacity - 1e-9)) or held
        for copy in layout.copies[h]:  # the hours this one stands for
            servers[(i, copy)] = count
            rates[(i, copy)] = rate
    gap = getattr(result, "mip_gap", None)
    if result.status == 0:
        return DaySolution(SolveStatus.OPTIMAL, "optimal", reserved, servers, rates, gap)
    message = f"stopped at the time limit of {time_limit_s:g} s"
    if gap is not None and math.isfinite(gap):
        message += f" with a feasible plan that is not proven optimal (relative gap {gap:.2%})"
    bound = getattr(result, "mip_dual_bound", None)
    bound = float(bound) if bound is not None and math.isfinite(bound) else None
    return DaySolution(SolveStatus.TIME_LIMIT, message, reserved, servers, rates, gap, bound)
