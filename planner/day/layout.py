"""The day program's columns (`Layout`: R per reserved unit, then (s, x) per (pool, hour)),
its coefficients per hour, and its answers on them (`DaySolution`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import OptimizeResult

from fleetplan.planner.day.hourly_pools import DayLimits, DayPool
from fleetplan.planner.scenario.parts import HOURS
from fleetplan.planner.solve import kernel
from fleetplan.planner.solve.kernel import LimitRow, SolveStatus

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
        self.pairs: list[tuple[int, int]] = []
        self.by_hour: list[list[int]] = [[] for _ in range(HOURS)]
        self._pair_up()
        self.columns = len(self.units) + 2 * len(self.pairs)
        self.pair_hour = np.array([h for _i, h in self.pairs], dtype=int)
        self.base: dict[str, np.ndarray] = {}
        self.server_coef: dict[str, np.ndarray] = {}
        self.rps_coef: dict[str, np.ndarray] = {}
        for kind in KINDS:
            self._coefficients(kind)

    def _pair_up(self) -> None:
        """The (pool, hour) pairs: a pool in each planned hour its class has traffic (a volume
        class: each hour of its window)."""
        pools = self.pools
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
        self.pair_pool = chosen  # each pair's pool, and its position among the members
        self.pair_member = at_member
        self.pairs = list(zip(chosen.tolist(), at_hour.tolist(), strict=True))
        for n, h in enumerate(at_hour.tolist()):
            self.by_hour[h].append(n)

    def _coefficients(self, kind: str) -> None:
        """`coefficients` of `kind` per pair, a reserved pool's above its unit's base: a reserved
        server serving nothing, its price and its configuration's lowest fixed power (idle),
        with its embodied carbon, every hour."""
        members_pools = [self.pools[i] for i in self.members]
        unit_of = np.array(
            [self.units[p.unit] if p.reserved else -1 for p in members_pools], dtype=int
        )
        reserved = unit_of >= 0
        server, rps = _tables(members_pools, kind)
        base = np.full((len(self.units), HOURS), np.inf)
        if reserved.any():
            np.minimum.at(base, unit_of[reserved], server[reserved])
        self.base[kind] = base
        if not self.pairs:
            self.server_coef[kind] = self.rps_coef[kind] = np.zeros(0)
            return
        pm = self.pair_member
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


def by_unit(layout: Layout, vector: np.ndarray, kind: str) -> dict[tuple[str, str, int], float]:
    """`hourly`'s figures of the day split by unit (offer, GPU model, GPUs per server): a
    reserved unit's base every hour with what its pools add, an on-demand unit's pools; they sum
    to `hourly(...).sum()`."""
    out: dict[tuple[str, str, int], float] = {}
    weight = layout.weight
    for unit, j in layout.units.items():
        out[unit] = out.get(unit, 0.0) + float(layout.base[kind][j] @ weight) * vector[j]
    units, count = len(layout.units), len(layout.pairs)
    if count:
        s = vector[units : units + count]
        x = vector[units + count :]
        per_pair = (layout.server_coef[kind] * s + layout.rps_coef[kind] * x) * weight[
            layout.pair_hour
        ]
        for n, value in enumerate(per_pair):
            if value:
                unit = layout.pools[layout.pairs[n][0]].unit
                out[unit] = out.get(unit, 0.0) + float(value)
    return out


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


def fill_rates(layout: Layout, values: np.ndarray) -> np.ndarray:
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


def solution_of(result: OptimizeResult, layout: Layout, time_limit_s: float) -> DaySolution:
    """scipy's answer (the kernel's `outcome`) as a `DaySolution` over the layout's columns."""
    infeasible = "the limits leave no way to serve every class every hour"
    out = kernel.outcome(result, time_limit_s, infeasible=infeasible)
    if out.x is None:
        return DaySolution(out.status, out.message, {}, {}, {})
    values = out.x
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
    return DaySolution(
        out.status, out.message, reserved, servers, rates, out.mip_gap, out.dual_bound
    )


def day_limit_rows(layout: Layout, limits: DayLimits) -> list[LimitRow]:
    """Every limit of the day, defined once: the solver's rows, the split's check and the
    diagnosis's words (`day.diagnosis`): each row is named by the scenario's field."""
    rows = []
    for offer, max_gpus in limits.max_gpus.items():
        reserved = [(j, float(u[2])) for u, j in layout.units.items() if u[0] == offer]
        if reserved:
            rows.append(LimitRow(f"gpus[].max_gpus of {offer}", tuple(reserved), float(max_gpus)))
        for h in layout.hours:
            rented = [
                (layout.s(n), float(pool.econ.gpus_per_server))
                for n in layout.by_hour[h]
                if not (pool := layout.pools[layout.pairs[n][0]]).reserved
                and pool.offer.offer_name == offer
            ]
            if rented:
                rows.append(
                    LimitRow(f"gpus[].max_gpus of {offer} at {h}:00", tuple(rented), max_gpus)
                )
    for offer, min_gpus in limits.min_gpus.items():  # owned GPUs, all kept: -sum <= -min
        reserved = [(j, -float(u[2])) for u, j in layout.units.items() if u[0] == offer]
        if reserved:
            rows.append(LimitRow(f"gpus[].min_gpus of {offer}", tuple(reserved), -float(min_gpus)))
    for kind, hourly_limit, daily_limit, what in (
        ("usd", limits.budget_usd_per_hour, limits.budget_usd_per_day, "budget_usd"),
        ("kg", limits.carbon_cap_kg_per_hour, limits.carbon_cap_kg_per_day, "carbon_cap_kg"),
    ):
        if hourly_limit is None and daily_limit is None:
            continue
        day: dict[int, float] = {}
        for h in layout.hours:
            terms = hour_terms(layout, h, kind)
            if hourly_limit is not None:
                rows.append(LimitRow(f"{what}_per_hour at {h}:00", tuple(terms), hourly_limit))
            for col, coef in terms:
                day[col] = day.get(col, 0.0) + coef * layout.weight[h]
        if daily_limit is not None:
            rows.append(LimitRow(f"{what}_per_day", tuple(day.items()), daily_limit))
    return rows
