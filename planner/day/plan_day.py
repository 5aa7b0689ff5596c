"""A day scenario's plan: the day program's answer (`day.solve_day`) as a `DayPlan`, with the
same scenario planned at its peak (today's answer: every class at its peak rate all day, every
server paid all day) and reserved-only (every offer reserved) beside it, all in one day's terms
(hourly prices and grid intensity).

Field names are public (the plan JSON's `day`, the schedule CSV): rename none without a note.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from fleetplan.planner.capacity.configuration import level_basis
from fleetplan.planner.day import spares
from fleetplan.planner.day.diagnosis import binding_day_limits
from fleetplan.planner.day.hourly_pools import DayLimits, DayPool, day_pools
from fleetplan.planner.day.layout import DaySolution, Layout, by_unit, hourly, vector_of
from fleetplan.planner.day.program import solve_day
from fleetplan.planner.day.results import (
    DayAttainment,
    DayFigures,
    DayPlan,
    DayShare,
    DayUnit,
    HourPlan,
    Servers,
    Serving,
)
from fleetplan.planner.day.spares import HourAttainment
from fleetplan.planner.day.spread import spread
from fleetplan.planner.peak.economics import PoolEconomics
from fleetplan.planner.peak.program import Solution, Weights
from fleetplan.planner.peak.results import HOURS_PER_MONTH, PlanStatus
from fleetplan.planner.scenario.parts import HOURS
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.planner.solve.kernel import SolveStatus

DAYS_PER_MONTH = HOURS_PER_MONTH / HOURS  # 730 h / 24 = 30.4 days


PEAK = "planned at its peak (every class at its peak rate all day, every server paid all day)"
RESERVED_ONLY = "reserved only (every offer reserved, servers shared through the day)"


@dataclass
class DaySolves:
    """A day's two programs under way (`start_day`): the recommended day and the reserved-only
    day, each solving in its own thread (HiGHS releases the GIL while it solves) while the
    caller plans the same scenario at its peak; `plan_day` collects them."""

    candidates: list[DayPool]
    limits: DayLimits
    alone_pools: list[DayPool] | None
    recommended: Future[DaySolution]
    alone: Future[DaySolution] | None
    workers: ThreadPoolExecutor

    def results(self) -> tuple[DaySolution, DaySolution | None]:
        try:
            return self.recommended.result(), self.alone.result() if self.alone else None
        finally:
            self.workers.shutdown(wait=False)

    def abandon(self) -> None:
        """Where the plan stops before collecting them (an error): nothing more is started."""
        self.workers.shutdown(wait=False, cancel_futures=True)


def start_day(scenario: Scenario, pools: Sequence[PoolEconomics], *, weights: Weights) -> DaySolves:
    """The day's programs started, each in a thread that sees the plan's clock
    (`kernel.plan_clock`): the recommended day first, then the reserved-only day (where some
    offer is on demand)."""
    candidates = day_pools(pools, scenario)
    limits = DayLimits.of(scenario)
    alone_pools = _all_reserved(candidates) if any(not p.reserved for p in candidates) else None
    workers = ThreadPoolExecutor(max_workers=2)
    solve = partial(solve_day, weights=weights, limits=limits, time_limit_s=scenario.time_limit_s)
    recommended = workers.submit(copy_context().run, solve, candidates)
    alone = None
    if alone_pools is not None:
        alone = workers.submit(copy_context().run, solve, alone_pools)
    return DaySolves(candidates, limits, alone_pools, recommended, alone, workers)


def plan_day(
    scenario: Scenario,
    pools: Sequence[PoolEconomics],
    *,
    weights: Weights,
    peak: Solution | None,
    carbon_known: bool,
    started: DaySolves | None = None,
) -> DayPlan:
    """The day plan of `scenario` from its candidate pools (one per offer), with `peak` (the
    peak program's answer on the same pools) beside it; `started`: its programs, where they
    were started (`start_day`) before the peak was planned."""
    started = started or start_day(scenario, pools, weights=weights)
    candidates, limits, alone_pools = started.candidates, started.limits, started.alone_pools
    solution, alone = started.results()
    layout = Layout(candidates, range(len(candidates)))
    if solution.status is not SolveStatus.OPTIMAL and peak is not None and peak.has_plan:
        solution = _better(layout, solution, from_peak(candidates, peak), weights)
    solution = spread(layout, solution, limits)  # ties among hours: the even plan
    hourly_attainment: list[HourAttainment] = []
    spared = False
    unreachable = None  # an attainment no pool size reaches (spares.with_spares)
    if spares.applies(scenario):  # availability below 1 or attainment targets: spares by hour
        before = solution
        try:
            solution, hourly_attainment = spares.with_spares(layout, solution, scenario)
        except ValueError as error:
            unreachable = str(error)
        spared = solution.servers != before.servers or solution.reserved != before.reserved
    compared = [_peak_figures(candidates, peak, carbon_known, scenario)]
    if alone_pools is not None and alone is not None:
        alone_layout = Layout(alone_pools, range(len(alone_pools)))
        try:
            if spares.applies(scenario):
                alone, _ = spares.with_spares(alone_layout, alone, scenario)
            compared.append(_figures(RESERVED_ONLY, alone_layout, alone, carbon_known))
        except ValueError as error:
            compared.append(
                DayFigures(name=RESERVED_ONLY, status=PlanStatus.INFEASIBLE, message=str(error))
            )
    if unreachable is not None:
        return DayPlan(
            status=PlanStatus.INFEASIBLE,
            message=unreachable,
            timezone=scenario.timezone,
            compared=compared,
        )
    figures = _figures("recommended", layout, solution, carbon_known)
    if not solution.has_plan:
        status = PlanStatus(solution.status)
        message = solution.message
        if status is PlanStatus.INFEASIBLE:  # which limits, by the scenario's fields
            message = binding_day_limits(
                candidates, limits, time_limit_s=scenario.time_limit_s, carbon_known=carbon_known
            )
        return DayPlan(
            status=status, message=message, timezone=scenario.timezone, compared=compared
        )
    vector = vector_of(layout, solution)
    figures_by_hour = {kind: hourly(layout, vector, kind) for kind in ("usd", "kg", "kwh")}
    needed = {(i, row.hour): n for row in hourly_attainment for i, n in row.needed.items()}
    schedule = [
        _hour(scenario, layout, solution, figures_by_hour, h, carbon_known, needed)
        for h in range(HOURS)
    ]
    peak_figures = compared[0]
    return DayPlan(
        status=PlanStatus(solution.status),
        message=solution.message,
        timezone=scenario.timezone,
        optimality_gap=None if spared else _gap(solution),
        cost_usd=figures.cost_usd,
        kgco2e=figures.kgco2e,
        energy_kwh=_sum([h.energy_kwh for h in schedule]),
        monthly_cost_usd=figures.monthly_cost_usd,
        monthly_kgco2e=figures.monthly_kgco2e,
        gpu_hours=figures.gpu_hours,
        reserved=_reserved(candidates, solution),
        fleet=_fleet(scenario, layout, solution, vector, carbon_known),
        attainment=_attainment(scenario, hourly_attainment),
        schedule=schedule,
        compared=compared,
        saving_vs_peak_usd=_less(peak_figures.cost_usd, figures.cost_usd),
        saving_vs_peak_kgco2e=_less(peak_figures.kgco2e, figures.kgco2e),
    )


def from_peak(pools: Sequence[DayPool], peak: Solution) -> DaySolution:
    """The peak program's fleet through the day, a plan of the day too: its reserved servers
    paid all day, each pool carrying its share of its class's rate in each hour (a volume: its
    even spread over its window), an on-demand pool renting the servers that share needs."""
    reserved: dict[tuple[str, str, int], int] = {}
    servers: dict[tuple[int, int], int] = {}
    rates: dict[tuple[int, int], float] = {}
    peaks: dict[str, float] = {}
    for pool, x in zip(pools, peak.rates, strict=True):
        peaks[pool.traffic.name] = peaks.get(pool.traffic.name, 0.0) + x
    for i, (pool, y, x) in enumerate(zip(pools, peak.servers, peak.rates, strict=True)):
        if pool.reserved and y:
            reserved[pool.unit] = reserved.get(pool.unit, 0) + y
        if x <= 1e-12:
            continue
        demand = pool.demand or pool.traffic.hourly_demand()
        for h in range(HOURS):
            rate = demand[h] * x / peaks[pool.traffic.name]
            if rate > 1e-12:
                rates[(i, h)] = rate
                servers[(i, h)] = min(y, math.ceil(rate / pool.capacity - 1e-9)) or y
    return DaySolution(peak.status, peak.message, reserved, servers, rates)


def _objective(layout: Layout, solution: DaySolution, weights: Weights) -> float:
    vector = vector_of(layout, solution)
    return weights.usd * _total(layout, vector, "usd") + weights.kg * _total(layout, vector, "kg")


def _better(layout: Layout, found: DaySolution, peak: DaySolution, weights: Weights) -> DaySolution:
    """The day program's plan where it stopped short, unless the peak fleet run through the day
    does better (then that, said so: neither is proven optimal)."""
    if found.has_plan and _objective(layout, found, weights) <= _objective(layout, peak, weights):
        return found
    message = (
        f"{found.message}; the peak plan's fleet run through the day does better than what "
        "the search found, so the day is planned on it (not proven optimal)"
    )
    gap = None
    if found.bound is not None:
        value = _objective(layout, peak, weights)
        gap = max(0.0, (value - found.bound) / max(abs(value), 1e-12))
    return replace(
        peak, status=SolveStatus.TIME_LIMIT, message=message, mip_gap=gap, bound=found.bound
    )


def _gap(solution: DaySolution) -> float | None:
    if solution.status is SolveStatus.OPTIMAL:
        return 0.0
    gap = solution.mip_gap
    return float(gap) if gap is not None and math.isfinite(gap) else None


def _all_reserved(pools: Sequence[DayPool]) -> list[DayPool]:
    return [
        p if p.reserved else replace(p, offer=p.offer.model_copy(update={"commitment": "reserved"}))
        for p in pools
    ]


def _less(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else before - after


def _sum(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else float(sum(values))  # type: ignore[arg-type]


def _total(layout: Layout, vector: np.ndarray, kind: str) -> float:
    return float(hourly(layout, vector, kind).sum())


def _carbon_known(pools: Sequence[DayPool], used: set[int]) -> bool:
    return all(pools[i].kg_server[0] is not None for i in used)


def _figures(name: str, layout: Layout, solution: DaySolution, carbon_known: bool) -> DayFigures:
    status = PlanStatus(solution.status)
    if not solution.has_plan:
        return DayFigures(name=name, status=status, message=solution.message)
    pools = layout.pools
    vector = vector_of(layout, solution)
    used = {i for i, _ in solution.servers} | {
        i for i, p in enumerate(pools) if p.reserved and solution.reserved.get(p.unit)
    }
    cost = _total(layout, vector, "usd")
    kg = _total(layout, vector, "kg") if carbon_known and _carbon_known(pools, used) else None
    gpu_hours = HOURS * sum(u[2] * n for u, n in solution.reserved.items()) + sum(
        pools[i].econ.gpus_per_server * n
        for (i, _h), n in solution.servers.items()
        if not pools[i].reserved
    )
    return DayFigures(
        name=name,
        status=status,
        message=solution.message,
        cost_usd=cost,
        kgco2e=kg,
        monthly_cost_usd=cost * DAYS_PER_MONTH,
        monthly_kgco2e=None if kg is None else kg * DAYS_PER_MONTH,
        gpu_hours=float(gpu_hours),
    )


def _peak_figures(
    pools: Sequence[DayPool], peak: Solution | None, carbon_known: bool, scenario: Scenario
) -> DayFigures:
    """The peak program's fleet over the day: its servers paid every hour, each pool carrying its
    peak rate every hour (what the peak plan plans for), at each hour's prices and grid; with
    availability, with the spares its peak hour needs (`spares`), all day."""
    if peak is not None and peak.has_plan and spares.applies(scenario):
        at_peak = _at_the_peak(pools, peak)
        layout = Layout(pools, range(len(pools)))
        try:
            spared, _ = spares.with_spares(layout, at_peak, scenario)
        except ValueError as error:  # an attainment no pool size reaches
            return DayFigures(name=PEAK, status=PlanStatus.INFEASIBLE, message=str(error))
        most: dict[int, int] = {}
        for (i, _h), n in spared.servers.items():
            most[i] = max(most.get(i, 0), n)
        peak = replace(peak, servers=tuple(most.get(i, 0) for i in range(len(pools))))
    if peak is None or not peak.has_plan:
        status = PlanStatus(peak.status) if peak is not None else PlanStatus.INFEASIBLE
        return DayFigures(name=PEAK, status=status, message=peak.message if peak else "no plan")
    cost = kg = 0.0
    known = carbon_known
    gpus = 0
    for pool, y, x in zip(pools, peak.servers, peak.rates, strict=True):
        if y == 0 and x <= 1e-9:
            continue
        gpus += y * pool.econ.gpus_per_server
        for h in range(HOURS):
            cost += y * pool.usd_server[h] + x * pool.usd_rps[h]
            server_kg, rps_kg = pool.kg_server[h], pool.kg_rps[h]
            if server_kg is None or rps_kg is None:
                known = False
            else:
                kg += y * server_kg + x * rps_kg
    return DayFigures(
        name=PEAK,
        status=PlanStatus(peak.status),
        message=peak.message,
        cost_usd=cost,
        kgco2e=kg if known else None,
        monthly_cost_usd=cost * DAYS_PER_MONTH,
        monthly_kgco2e=kg * DAYS_PER_MONTH if known else None,
        gpu_hours=float(HOURS * gpus),
    )


def _at_the_peak(pools: Sequence[DayPool], peak: Solution) -> DaySolution:
    """The peak fleet carrying its peak rates every hour, as a day (for its spares)."""
    servers, rates = {}, {}
    for i, (y, x) in enumerate(zip(peak.servers, peak.rates, strict=True)):
        if x > 1e-12:
            for h in range(HOURS):
                servers[(i, h)], rates[(i, h)] = y, x
    return DaySolution(peak.status, peak.message, {}, servers, rates)


def _attainment(scenario: Scenario, found: list[HourAttainment]) -> list[DayAttainment]:
    """Each class's attainment hour by hour (None where it has no traffic) and its lowest."""
    out = []
    for traffic in scenario.classes:
        mine = [row for row in found if row.traffic_class == traffic.name]
        if not mine:
            continue
        by_hour: list[float | None] = [None] * HOURS
        for row in mine:
            by_hour[row.hour] = row.attainment
        worst = min(mine, key=lambda row: row.attainment)
        out.append(
            DayAttainment(
                traffic_class=traffic.name,
                attainment_target=traffic.attainment,
                fallback=traffic.fallback,
                attainment=worst.attainment,
                lowest_hour=worst.hour,
                by_hour=by_hour,
            )
        )
    return out


def _reserved(pools: Sequence[DayPool], solution: DaySolution) -> list[Servers]:
    gpus = {}
    for p in pools:
        gpus[p.unit] = p.econ.gpu_model
    return [
        Servers(
            offer=offer,
            commitment="reserved",
            gpu_model=gpu,
            gpus_per_server=n,
            servers=count,
            gpus=count * n,
        )
        for (offer, gpu, n), count in sorted(solution.reserved.items())
    ]


BASES = ("measured", "identical architecture", "estimated")  # the least measured last


def _fleet(
    scenario: Scenario,
    layout: Layout,
    solution: DaySolution,
    vector: np.ndarray,
    carbon_known: bool,
) -> list[DayUnit]:
    """Each unit (offer, GPU model, GPUs per server) the day uses: its servers hour by hour,
    its classes' servers and rates hour by hour with their share of each class's day, and its
    part of the day's cost, carbon and energy (`layout.by_unit`: they sum to the day's)."""
    pools = layout.pools
    figures = {kind: by_unit(layout, vector, kind) for kind in ("usd", "kg", "kwh")}
    held: dict[tuple[str, str, int], list[int]] = {}
    shares: dict[tuple[tuple[str, str, int], str], dict] = {}
    for (i, h), servers in solution.servers.items():
        pool = pools[i]
        rate = solution.rates.get((i, h), 0.0)
        if servers <= 0 and rate <= 0:
            continue
        if not pool.reserved:
            held.setdefault(pool.unit, [0] * HOURS)[h] += servers
        share = shares.setdefault(
            (pool.unit, pool.traffic.name),
            {
                "pools": set(),
                "servers": [0] * HOURS,
                "rates": [0.0] * HOURS,
                "server": pool.econ.capacity.configuration.server,
                "capacity": pool.capacity,
                "full": pool.econ.capacity.full_rps,
                "model": scenario.model_of(pool.traffic),
            },
        )
        share["pools"].add(i)
        share["servers"][h] += servers
        share["rates"][h] += rate
    for unit, count in solution.reserved.items():
        held[unit] = [count] * HOURS
    class_requests: dict[str, float] = {}
    for (_unit, name), share in shares.items():
        class_requests[name] = class_requests.get(name, 0.0) + 3600 * sum(share["rates"])
    used_by_unit: dict[tuple[str, str, int], set[int]] = {}
    for (unit, _name), share in shares.items():
        used_by_unit.setdefault(unit, set()).update(share["pools"])
    for i, pool in enumerate(pools):
        if pool.reserved and solution.reserved.get(pool.unit):
            used_by_unit.setdefault(pool.unit, set()).add(i)
    units = []
    for unit in sorted(held, key=lambda u: (u[0], u[1], u[2])):
        offer, gpu, n = unit
        used = used_by_unit.get(unit, set())
        commitment = pools[next(iter(used))].offer.commitment if used else "reserved"
        known_kg = carbon_known and _carbon_known(pools, used)
        known_kwh = all(pools[i].econ.kw_per_server is not None for i in used)
        cost = figures["usd"].get(unit, 0.0)
        kg = figures["kg"].get(unit, 0.0) if known_kg else None
        bases = {level_basis(pools[i].econ.capacity.level) for i in used} or {"measured"}
        classes = [
            DayShare(
                traffic_class=name,
                model=share["model"],
                server=share["server"],
                capacity_rps_per_server=share["capacity"],
                full_capacity_rps_per_server=share["full"],
                servers_by_hour=share["servers"],
                rate_by_hour=share["rates"],
                requests=3600 * sum(share["rates"]),
                share=(3600 * sum(share["rates"]) / class_requests[name])
                if class_requests.get(name)
                else 0.0,
            )
            for (u, name), share in sorted(shares.items(), key=lambda kv: kv[0][1])
            if u == unit
        ]
        units.append(
            DayUnit(
                offer=offer,
                commitment=commitment,
                gpu_model=gpu,
                gpus_per_server=n,
                servers=max(held[unit]),
                servers_by_hour=held[unit],
                availability=pools[next(iter(used))].offer.availability if used else 1.0,
                gpu_hours=float(sum(held[unit]) * n),
                cost_usd=cost,
                kgco2e=kg,
                energy_kwh=figures["kwh"].get(unit, 0.0) if known_kwh else None,
                monthly_cost_usd=cost * DAYS_PER_MONTH,
                monthly_kgco2e=None if kg is None else kg * DAYS_PER_MONTH,
                basis=max(bases, key=lambda b: BASES.index(b) if b in BASES else len(BASES)),
                classes=classes,
            )
        )
    return units


def _hour(
    scenario: Scenario,
    layout: Layout,
    solution: DaySolution,
    figures_by_hour: dict[str, np.ndarray],
    hour: int,
    carbon_known: bool,
    needed: dict[tuple[int, int], int],
) -> HourPlan:
    pools = layout.pools
    serving, demand, busy, rented = _serving(layout, solution, hour, needed)
    for traffic in scenario.classes:
        demand.setdefault(traffic.name, 0.0)
    used = {
        layout.pairs[n][0]
        for n in layout.by_hour[hour]
        if (layout.pairs[n][0], hour) in solution.servers
    }
    known = carbon_known and _carbon_known(pools, used)
    idle = sum(solution.reserved.values()) - sum(busy.values())

    def figure(kind: str) -> float:
        return float(figures_by_hour[kind][hour])

    energy_known = all(pools[i].econ.kw_per_server is not None for i in used)
    sites = {offer.site for offer in scenario.gpus}
    return HourPlan(
        hour=hour,
        pools=sorted(serving, key=lambda s: (s.traffic_class, s.offer, s.gpus_per_server)),
        on_demand=[
            Servers(
                offer=offer,
                commitment="on_demand",
                gpu_model=gpu,
                gpus_per_server=n,
                servers=count,
                gpus=count * n,
            )
            for (offer, gpu, n), count in sorted(rented.items())
        ],
        idle_reserved_servers=idle,
        demand_rps={c.name: demand[c.name] for c in scenario.classes},
        grid_gco2_per_kwh={s: scenario.site_named(s).grid_at(hour) for s in sorted(sites)},
        cost_usd=figure("usd"),
        energy_kwh=figure("kwh") if energy_known else None,
        kgco2e=figure("kg") if known else None,
    )


def _serving(layout: Layout, solution: DaySolution, hour: int, needed: dict[tuple[int, int], int]):
    """The hour's pools serving a class, each class's carried rate, and the servers busy
    (reserved) and rented (on demand) per unit; with availability, each pool's servers needed
    all up (`needed`, from `spares`)."""
    pools = layout.pools
    serving = []
    demand: dict[str, float] = {}
    busy: dict[tuple[str, str, int], int] = {}
    rented: dict[tuple[str, str, int], int] = {}
    for n in layout.by_hour[hour]:
        i, _h = layout.pairs[n]
        pool = pools[i]
        rate = solution.rates.get((i, hour), 0.0)
        servers = solution.servers.get((i, hour), 0)
        if servers == 0 and rate <= 0:
            continue
        name = pool.traffic.name
        demand[name] = demand.get(name, 0.0) + rate
        held = busy if pool.reserved else rented
        held[pool.unit] = held.get(pool.unit, 0) + servers
        serving.append(
            Serving(
                offer=pool.offer.offer_name,
                gpu_model=pool.econ.gpu_model,
                gpus_per_server=pool.econ.gpus_per_server,
                traffic_class=name,
                servers=servers,
                rate_rps=rate,
                servers_needed=needed.get((i, hour)),
                basis=level_basis(pool.econ.capacity.level),
            )
        )
    return serving, demand, busy, rented
