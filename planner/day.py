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
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, milp
from scipy.sparse import coo_array

from fleetplan.planner.economics import PoolEconomics
from fleetplan.planner.milp import LimitRow, SolveStatus, Weights
from fleetplan.planner.scenario import HOURS, GpuOffer, Scenario, TrafficClass

_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class DayPool:
    """A candidate pool with its coefficients in each hour 0-23."""

    econ: PoolEconomics
    offer: GpuOffer
    traffic: TrafficClass
    usd_server: tuple[float, ...]  # per server-hour: price + energy of its fixed power
    usd_rps: tuple[float, ...]  # per carried req/s-hour: its energy
    kg_server: tuple[float | None, ...]  # per server-hour: fixed power's carbon + embodied
    kg_rps: tuple[float | None, ...]
    energy_per_kwh_usd: tuple[float, ...]  # electricity x PUE paid per GPU kWh (0: included)
    grid_kg_per_kwh: tuple[float, ...]  # PUE x grid / 1000: kg per GPU kWh
    demand: tuple[float, ...] = ()  # the class's rate to serve each hour (x its burst factor)

    @property
    def reserved(self) -> bool:
        return self.offer.commitment == "reserved"

    @property
    def capacity(self) -> float:
        return self.econ.capacity.capacity_rps

    @property
    def unit(self) -> tuple[str, str, int]:
        return (self.offer.offer_name, self.econ.gpu_model, self.econ.gpus_per_server)


def day_pools(pools: Sequence[PoolEconomics], scenario: Scenario) -> list[DayPool]:
    """The candidate pools with their hourly coefficients."""
    classes = {c.name: c for c in scenario.classes}
    result = []
    for pool in pools:
        offer = scenario.offer_named(pool.offer_name)
        site = scenario.site_named(offer.site)
        price = offer.usd_per_gpu_hour() * pool.gpus_per_server
        energy = tuple(
            0.0 if offer.electricity_included else site.pue * site.electricity_at(h)
            for h in range(HOURS)
        )
        grid = tuple(site.pue * site.grid_at(h) / 1000 for h in range(HOURS))
        kw_s, kw_r, embodied = pool.kw_per_server, pool.kw_per_rps, pool.embodied_kg_per_server_hour
        known = kw_s is not None and kw_r is not None and embodied is not None
        result.append(
            DayPool(
                econ=pool,
                offer=offer,
                traffic=classes[pool.capacity.traffic_class],
                usd_server=tuple(price + (kw_s or 0.0) * e for e in energy),
                usd_rps=tuple((kw_r or 0.0) * e for e in energy),
                kg_server=tuple((kw_s * g + embodied) if known else None for g in grid),
                kg_rps=tuple((kw_r * g) if known else None for g in grid),
                energy_per_kwh_usd=energy,
                grid_kg_per_kwh=grid,
                demand=_demand(scenario, classes[pool.capacity.traffic_class]),
            )
        )
    return result


def _demand(scenario: Scenario, traffic: TrafficClass) -> tuple[float, ...]:
    factor = scenario.burst_factor(traffic)
    return tuple(r * factor for r in traffic.hourly_demand())


@dataclass(frozen=True, slots=True)
class DayLimits:
    """The scenario's limits in the day's terms: GPUs per offer (a reserved offer's in all, an
    on-demand offer's in each hour), budget and carbon per hour and per day."""

    max_gpus: dict[str, int]
    budget_usd_per_hour: float | None = None
    carbon_kg_per_hour: float | None = None
    budget_usd_per_day: float | None = None
    carbon_kg_per_day: float | None = None

    @classmethod
    def of(cls, scenario: Scenario) -> DayLimits:
        return cls(
            max_gpus={g.offer_name: g.max_gpus for g in scenario.gpus if g.max_gpus is not None},
            budget_usd_per_hour=scenario.budget_usd_per_hour,
            carbon_kg_per_hour=scenario.carbon_cap_kg_per_hour,
            budget_usd_per_day=scenario.budget_usd_per_day,
            carbon_kg_per_day=scenario.carbon_cap_kg_per_day,
        )

    @property
    def daily(self) -> bool:
        return self.budget_usd_per_day is not None or self.carbon_kg_per_day is not None


@dataclass(frozen=True, slots=True)
class DaySolution:
    """The program's answer: reserved servers per unit, and per (pool, hour) servers and rate."""

    status: SolveStatus
    message: str
    reserved: dict[tuple[str, str, int], int]
    servers: dict[tuple[int, int], int]  # (pool index, hour) -> servers serving its class
    rates: dict[tuple[int, int], float]
    mip_gap: float | None = None

    @property
    def has_plan(self) -> bool:
        return self.status is SolveStatus.OPTIMAL or bool(self.servers or self.reserved)


class Layout:
    """The program's columns: R per reserved unit, then (s, x) per (pool, hour) it may serve."""

    def __init__(self, pools: Sequence[DayPool], members: Sequence[int]) -> None:
        self.pools = pools
        self.members = list(members)
        units = sorted({pools[i].unit for i in self.members if pools[i].reserved})
        self.units = {u: j for j, u in enumerate(units)}
        self.pairs: list[tuple[int, int]] = []
        self.by_hour: list[list[int]] = [[] for _ in range(HOURS)]
        for i in self.members:
            traffic = pools[i].traffic
            demand = pools[i].demand or traffic.hourly_demand()
            hours = traffic.window() if traffic.is_volume else range(HOURS)
            for h in sorted(hours):
                if traffic.is_volume or demand[h] > 0:
                    self.by_hour[h].append(len(self.pairs))
                    self.pairs.append((i, h))
        self.columns = len(self.units) + 2 * len(self.pairs)
        # a reserved server serving nothing: its price and its configuration's lowest fixed
        # power (idle), with its embodied carbon, every hour
        self.base = {kind: np.full((len(units), HOURS), np.inf) for kind in KINDS}
        for i in self.members:
            pool = pools[i]
            if pool.reserved:
                j = self.units[pool.unit]
                for kind in KINDS:
                    server = [coefficients(pool, h, kind)[0] for h in range(HOURS)]
                    self.base[kind][j] = np.minimum(self.base[kind][j], server)

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


def hour_terms(layout: Layout, hour: int, kind: str) -> list[tuple[int, float]]:
    """The hour's cost, carbon or energy (`coefficients`' kinds) over the columns: what the
    objective, the limits and the reported figures all sum."""
    base = layout.base[kind]
    terms = [(j, float(base[j, hour])) for j in range(len(layout.units)) if base[j, hour]]
    for n in layout.by_hour[hour]:
        pool = layout.pools[layout.pairs[n][0]]
        server, rps = coefficients(pool, hour, kind)
        if pool.reserved:
            server -= float(base[layout.units[pool.unit], hour])
        if server:
            terms.append((layout.s(n), server))
        if rps:
            terms.append((layout.x(n), rps))
    return terms


def limit_rows(layout: Layout, limits: DayLimits) -> list[LimitRow]:
    """Every limit of the day, defined once: the solver's rows and the split's check."""
    rows = []
    for offer, max_gpus in limits.max_gpus.items():
        reserved = [(j, float(u[2])) for u, j in layout.units.items() if u[0] == offer]
        if reserved:
            rows.append(LimitRow(f"max_gpus of {offer}", tuple(reserved), float(max_gpus)))
        for h in range(HOURS):
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
        for h in range(HOURS):
            terms = hour_terms(layout, h, kind)
            if hourly_bound is not None:
                rows.append(LimitRow(f"{what} at {h}:00", tuple(terms), hourly_bound))
            for col, coef in terms:
                day[col] = day.get(col, 0.0) + coef
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
    for h in range(HOURS):
        for kind, weight in (("usd", weights.usd), ("kg", weights.kg)):
            if weight:
                for col, coef in hour_terms(layout, h, kind):
                    objective[col] += weight * coef
    rows = _Rows(layout.columns)
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
        if covering:
            rows.add([(layout.s(n), pools[pairs[n][0]].capacity) for n in ns], target, np.inf)
        else:
            rows.add([(layout.x(n), 1.0) for n in ns], target, target)
        upper_x[ns] = target
    for n, (i, _h) in enumerate(pairs):  # capacity
        if not covering:
            rows.add([(layout.x(n), 1.0), (layout.s(n), -pools[i].capacity)], -np.inf, 0.0)
    upper_s = np.ceil(upper_x / np.array([pools[i].capacity for i, _ in pairs]) - _EPS)
    upper_s = np.maximum(upper_s, 0.0)
    upper_r = np.zeros(len(units))
    for h in range(HOURS):  # reserved servers, each hour
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
    for n, (i, _h) in enumerate(pairs):
        if not pools[i].reserved:
            gpu_hours[layout.s(n)] = pools[i].econ.gpus_per_server
    integrality = np.concatenate([np.ones(len(units)), np.ones(len(pairs)), np.zeros(len(pairs))])
    lower = np.zeros(layout.columns)
    upper = np.concatenate([upper_r, upper_s, np.zeros(len(pairs)) if covering else upper_x])
    bounds = Bounds(lower, upper)
    return _Program(objective, [rows.constraint()], integrality, bounds, gpu_hours, covering)


class _Rows:
    """A sparse constraint matrix, one row at a time: lower <= row . columns <= upper."""

    def __init__(self, columns: int) -> None:
        self.columns = columns
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []

    def add(self, entries: list[tuple[int, float]], lower: float, upper: float) -> None:
        row = len(self.lower)
        for col, val in entries:
            self.rows.append(row)
            self.cols.append(col)
            self.vals.append(val)
        self.lower.append(lower)
        self.upper.append(upper)

    def constraint(self) -> LinearConstraint:
        shape = (max(len(self.lower), 1), self.columns)
        if not self.lower:
            return LinearConstraint(np.zeros(shape), -np.inf, np.inf)
        matrix = coo_array((self.vals, (self.rows, self.cols)), shape=shape).tocsr()
        return LinearConstraint(matrix, self.lower, self.upper)


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


def _table(pools: Sequence[DayPool], kind: str) -> np.ndarray:
    """Per pool and hour: (server, rps) coefficients of `kind` ('usd'; 'kg' with unknown as
    infinity), shape (pools, 2, 24)."""
    out = np.empty((len(pools), 2, HOURS))
    for n, pool in enumerate(pools):
        if kind == "usd":
            out[n, 0], out[n, 1] = pool.usd_server, pool.usd_rps
        else:
            out[n, 0] = [np.inf if v is None else v for v in pool.kg_server]
            out[n, 1] = [np.inf if v is None else v for v in pool.kg_rps]
    return out


def _no_worse(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[i, j]: coefficients of i no higher than j's in every hour (rows of `a` against `b`)."""
    return np.all(a[:, None] <= b[None, :] + 1e-12, axis=(2, 3))


def undominated(pools: Sequence[DayPool], limits: DayLimits) -> list[int]:
    """The pools worth a column: a pool (on demand) or a reserved unit is left out where
    another, on an offer without a GPU limit, carries at least as much for every class it
    serves, costs and emits no more in any hour, per server and per req/s, and has no more GPUs
    (each of its servers can be swapped for one of the other's: no plan gets worse, no limit
    is broken). Of equal ones the first is kept."""
    free = [p.offer.offer_name not in limits.max_gpus for p in pools]
    usd, kg = _table(pools, "usd"), _table(pools, "kg")
    drop: set[int] = set()
    on_demand: dict[str, list[int]] = {}
    for i, p in enumerate(pools):
        if not p.reserved:
            on_demand.setdefault(p.traffic.name, []).append(i)
    for members in on_demand.values():
        idx = np.array(members)
        cap = np.array([pools[i].capacity for i in members])
        gpus = np.array([pools[i].econ.gpus_per_server for i in members])
        better = (
            _no_worse(usd[idx], usd[idx])
            & _no_worse(kg[idx], kg[idx])
            & (cap[:, None] >= cap[None, :])
            & (gpus[:, None] <= gpus[None, :])
            & np.array([free[i] for i in members])[:, None]
        )
        np.fill_diagonal(better, False)
        for b, a in zip(*np.nonzero(better), strict=True):
            if a in drop or b in drop:
                continue
            equal = better[a, b]
            if not equal or b < a:
                drop.add(int(idx[a]))
    drop |= _dominated_units(pools, usd, kg, free)
    return [i for i in range(len(pools)) if i not in drop]


def _dominated_units(pools, usd, kg, free) -> set[int]:
    units: dict[tuple[str, str, int], dict[str, int]] = {}
    for i, p in enumerate(pools):
        if p.reserved:
            units.setdefault(p.unit, {})[p.traffic.name] = i
    names = list(units)
    if len(names) < 2:
        return set()
    classes = sorted({k for serving in units.values() for k in serving})
    count = len(names)
    better = np.ones((count, count), dtype=bool)
    for a, unit in enumerate(names):  # a may stand in for b
        better[a] &= free[next(iter(units[unit].values()))]
        better[a] &= np.array([unit[2] <= other[2] for other in names])
    base = {
        kind: np.array([table[list(units[u].values())][:, 0].min(axis=0) for u in names])
        for kind, table in (("usd", usd), ("kg", kg))
    }
    for kind in ("usd", "kg"):
        better &= np.all(base[kind][:, None] <= base[kind][None, :] + 1e-12, axis=2)
    for k in classes:
        has = np.array([k in units[u] for u in names])
        rows = [units[u].get(k, -1) for u in names]
        cap = np.array([pools[i].capacity if i >= 0 else 0.0 for i in rows])
        ok = np.ones((count, count), dtype=bool)
        present = [i for i in rows if i >= 0]
        if present:
            at = {i: n for n, i in enumerate(present)}
            sub = np.array(present)
            fine = _no_worse(usd[sub], usd[sub]) & _no_worse(kg[sub], kg[sub])
            for a in range(count):
                for b in range(count):
                    if has[b]:
                        ok[a, b] = bool(
                            has[a] and cap[a] >= cap[b] and fine[at[rows[a]], at[rows[b]]]
                        )
        better &= ok
    np.fill_diagonal(better, False)
    drop: set[int] = set()
    gone: set[int] = set()
    for a, b in zip(*np.nonzero(better), strict=True):
        if a in gone or b in gone:
            continue
        if not better[b, a] or a < b:
            gone.add(int(b))
    for b in gone:
        drop |= set(units[names[b]].values())
    return drop


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
    vector = np.zeros(layout.columns)
    for unit, j in layout.units.items():
        vector[j] = solution.reserved.get(unit, 0)
    for n, pair in enumerate(layout.pairs):
        vector[layout.s(n)] = solution.servers.get(pair, 0)
        vector[layout.x(n)] = solution.rates.get(pair, 0.0)
    return vector


def _solve(
    pools: Sequence[DayPool],
    members: Sequence[int],
    weights: Weights,
    limits: DayLimits,
    time_limit_s: float,
    fewest_gpus: bool,
) -> DaySolution:
    layout = Layout(pools, members)
    if not layout.pairs:
        return DaySolution(SolveStatus.OPTIMAL, "nothing to serve", {}, {}, {})
    program = _program(layout, weights, limits)
    result = _run(program, time_limit_s, fewest_gpus)
    if program.covering and result.x is not None:
        result.x = _fill_rates(layout, np.array(result.x, dtype=float))
    return _solution(result, layout, time_limit_s)


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


def _milp(program: _Program, objective: np.ndarray, constraints, time_limit_s: float):
    return milp(
        objective,
        constraints=constraints,
        integrality=program.integrality,
        bounds=program.bounds,
        options={"time_limit": time_limit_s, "mip_rel_gap": 1e-9},
    )


def _run(program: _Program, time_limit_s: float, fewest_gpus: bool) -> OptimizeResult:
    started = time.monotonic()
    result = _milp(program, program.objective, program.constraints, time_limit_s)
    left = time_limit_s - (time.monotonic() - started)
    if result.status == 0 and left > 0 and fewest_gpus:
        best = float(result.fun)
        slack = max(1e-9, 1e-7 * abs(best))
        no_worse = LinearConstraint(program.objective, -np.inf, best + slack)
        fewest = _milp(program, program.gpu_hours, [*program.constraints, no_worse], left)
        if fewest.status == 0:
            result = fewest
    return result


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
        servers[(i, h)] = min(held, math.ceil(rate / pool.capacity - 1e-9)) or held
        rates[(i, h)] = rate
    gap = getattr(result, "mip_gap", None)
    if result.status == 0:
        return DaySolution(SolveStatus.OPTIMAL, "optimal", reserved, servers, rates, gap)
    message = f"stopped at the time limit of {time_limit_s:g} s"
    if gap is not None and math.isfinite(gap):
        message += f" with a feasible plan that is not proven optimal (relative gap {gap:.2%})"
    return DaySolution(SolveStatus.TIME_LIMIT, message, reserved, servers, rates, gap)
