"""The mixed-integer program: integer servers and carried rate per (class, configuration) pool.

    minimise   sum_p  w_usd * (usd_server_p * y_p + usd_rps_p * x_p)
                    + w_kg  * (kg_server_p  * y_p + kg_rps_p  * x_p)
    subject to sum_{p of class k} x_p = rate_k                 (each class fully served)
               x_p <= capacity_p * y_p                          (a pool carries what it can)
               sum_{p of GPU model g} gpus_p * y_p <= max_g     (GPU limits)
               sum_{p of offer o} gpus_p * y_p >= owned_o      (owned GPUs, all kept)
               sum_p usd_p(y, x) <= budget,  sum_p kg_p(y, x) <= carbon cap   (optional)
               y_p integer >= 0, 0 <= x_p <= rate_k

Solved with scipy.optimize.milp (HiGHS) under a time limit. Ties are broken toward fewer GPUs by a
second solve among the optimal fleets (the kernel's, `planner.solve.kernel`). Infeasible or
stopped is a status, never an exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import Bounds, LinearConstraint

from fleetplan.planner.peak.economics import PoolEconomics
from fleetplan.planner.solve import kernel
from fleetplan.planner.solve.kernel import Deadline, LimitRow, Program, SolveStatus
from fleetplan.planner.solve.rows import Rows


@dataclass(frozen=True, slots=True)
class Weights:
    usd: float = 1.0  # per $ of hourly cost
    kg: float = 0.0  # per kg CO2e per hour


@dataclass(frozen=True, slots=True)
class Limits:
    max_gpus: dict[str, int] = field(default_factory=dict)
    budget_usd_per_hour: float | None = None
    carbon_cap_kg_per_hour: float | None = None
    min_gpus: dict[str, int] = field(default_factory=dict)  # an owned offer's: all of them


@dataclass(frozen=True, slots=True)
class Solution:
    status: SolveStatus
    message: str
    servers: tuple[int, ...] = ()
    rates: tuple[float, ...] = ()
    mip_gap: float | None = None

    @property
    def has_plan(self) -> bool:
        return self.status is SolveStatus.OPTIMAL or bool(self.servers)


def _coef(value: float | None, weight: float) -> float:
    if weight == 0:
        return 0.0
    if value is None:
        raise ValueError("a weighted coefficient is unknown")  # callers check this first
    return weight * value


WHOLE_AT_ONCE = 120  # pools; see `solve`


def solve(
    pools: Sequence[PoolEconomics],
    demand_rps: dict[str, float],
    *,
    weights: Weights = Weights(),
    limits: Limits = Limits(),
    time_limit_s: float = 10.0,
    fewest_gpus: bool = True,
) -> Solution:
    """Choose servers and rates for the pools; every class in `demand_rps` must be served.

    Classes are independent but for the limits (GPUs per model, budget, carbon cap), so each class
    is first solved on its own: small programs, fast. When their union meets the limits it is
    optimal for the whole (the limits only remove fleets); otherwise the joint program is solved.
    A program of at most `WHOLE_AT_ONCE` pools is solved whole at once: a HiGHS call costs
    about 5 ms however small (the 5 x 20 benchmark: 39 ms at once, 62 ms class by class), so at
    that size fewer calls are faster; past it the joint program grows slow (10 x 20, 200 pools:
    0.17 s at once, 0.11 s class by class; 50 x 100: 21 s at once, 0.58 s).
    """
    deadline = Deadline(time_limit_s)
    if len(pools) <= WHOLE_AT_ONCE:
        return _solve_joint(
            pools,
            demand_rps,
            weights=weights,
            limits=limits,
            time_limit_s=time_limit_s,
            fewest_gpus=fewest_gpus,
        )
    split = _solve_per_class(
        pools, demand_rps, weights=weights, time_limit_s=time_limit_s, fewest_gpus=fewest_gpus
    )
    if split.status is SolveStatus.OPTIMAL and _within_limits(split, pools, limits):
        return split
    if split.status is SolveStatus.INFEASIBLE:
        return split
    return _solve_joint(
        pools,
        demand_rps,
        weights=weights,
        limits=limits,
        time_limit_s=deadline.left_at_least(),
        fewest_gpus=fewest_gpus,
    )


def _solve_per_class(
    pools: Sequence[PoolEconomics],
    demand_rps: dict[str, float],
    *,
    weights: Weights,
    time_limit_s: float,
    fewest_gpus: bool,
) -> Solution:
    servers = [0] * len(pools)
    rates = [0.0] * len(pools)
    deadline = Deadline(time_limit_s)
    grouped = by_class(pools)
    for k, rate in demand_rps.items():
        members = grouped.get(k, [])
        left = deadline.left()
        if left <= 0:
            message = f"time limit of {kernel.said(time_limit_s):g} s reached"
            return Solution(SolveStatus.TIME_LIMIT, message)
        part = _solve_joint(
            [pools[i] for i in members],
            {k: rate},
            weights=weights,
            limits=Limits(),
            time_limit_s=left,
            fewest_gpus=fewest_gpus,
        )
        if part.status is not SolveStatus.OPTIMAL:
            return part
        for i, y, x in zip(members, part.servers, part.rates, strict=True):
            servers[i], rates[i] = y, x
    return Solution(SolveStatus.OPTIMAL, "optimal", tuple(servers), tuple(rates))


def by_class(pools: Sequence[PoolEconomics]) -> dict[str, list[int]]:
    """The pools' indices by the class they serve, in one pass (a scan per class was quadratic:
    500 classes x 50,000 pools took 15 s before any solve)."""
    grouped: dict[str, list[int]] = {}
    for i, pool in enumerate(pools):
        grouped.setdefault(pool.capacity.traffic_class, []).append(i)
    return grouped


def _within_limits(solution: Solution, pools: Sequence[PoolEconomics], limits: Limits) -> bool:
    vector = np.array([*solution.servers, *solution.rates], dtype=float)
    return all(row.holds(vector) for row in peak_limit_rows(pools, limits))


def peak_limit_rows(pools: Sequence[PoolEconomics], limits: Limits) -> list[LimitRow]:
    """The GPU limits (per offer), the budget ($/h) and the carbon cap (kgCO2e/h) as rows over
    the columns (y per pool, then x per pool)."""
    count = len(pools)
    rows = []
    for offer, max_gpus in limits.max_gpus.items():
        members = tuple(
            (i, float(p.gpus_per_server)) for i, p in enumerate(pools) if p.offer_name == offer
        )
        if members:
            rows.append(LimitRow(f"max_gpus of {offer}", members, float(max_gpus)))
    for offer, min_gpus in limits.min_gpus.items():  # at least: -sum <= -min
        members = tuple(
            (i, -float(p.gpus_per_server)) for i, p in enumerate(pools) if p.offer_name == offer
        )
        if members:
            rows.append(LimitRow(f"owned GPUs of {offer}", members, -float(min_gpus)))
    if limits.budget_usd_per_hour is not None:
        usd = [(i, p.usd_per_server_hour) for i, p in enumerate(pools)]
        usd += [(count + i, p.usd_per_rps_hour) for i, p in enumerate(pools)]
        rows.append(LimitRow("budget", tuple(usd), limits.budget_usd_per_hour))
    if limits.carbon_cap_kg_per_hour is not None:
        kg = [(i, p.kg_per_server_hour or 0.0) for i, p in enumerate(pools)]
        kg += [(count + i, p.kg_per_rps_hour or 0.0) for i, p in enumerate(pools)]
        rows.append(LimitRow("carbon cap", tuple(kg), limits.carbon_cap_kg_per_hour))
    return rows


def _solve_joint(
    pools: Sequence[PoolEconomics],
    demand_rps: dict[str, float],
    *,
    weights: Weights,
    limits: Limits,
    time_limit_s: float,
    fewest_gpus: bool,
) -> Solution:
    """The whole program at once: every class and every limit together."""
    classes = {p.capacity.traffic_class for p in pools}
    unserved = [k for k in demand_rps if k not in classes]
    if unserved:
        return Solution(SolveStatus.INFEASIBLE, f"no configuration can serve {', '.join(unserved)}")
    if not pools:
        return Solution(SolveStatus.OPTIMAL, "nothing to serve")
    program = peak_program(pools, demand_rps, weights=weights, limits=limits)
    result = kernel.solve(program, time_limit_s, fewest=fewest_gpus)
    return _solution(result, len(pools), time_limit_s)


def peak_program(
    pools: Sequence[PoolEconomics],
    demand_rps: dict[str, float],
    *,
    weights: Weights,
    limits: Limits,
) -> Program:
    """The program in scipy's terms. Variables: y (servers per pool), then x (rate per pool);
    the tie-break minimises the GPUs."""
    count = len(pools)
    capacity_rps = np.array([p.capacity.capacity_rps for p in pools], dtype=float)
    rate = np.array([demand_rps[p.capacity.traffic_class] for p in pools], dtype=float)
    max_servers = np.ceil(
        rate / capacity_rps - 1e-9
    )  # more servers than the whole class needs never pay, but to hold the GPUs owned
    gpus = np.array([p.gpus_per_server for p in pools], dtype=float)
    for i, pool in enumerate(pools):
        owned = limits.min_gpus.get(pool.offer_name)
        if owned:
            max_servers[i] = max(max_servers[i], np.ceil(owned / gpus[i]))
    return Program(
        objective=_objective(pools, weights),
        constraints=[_constraints(pools, demand_rps, limits)],
        integrality=np.concatenate([np.ones(count), np.zeros(count)]),
        bounds=Bounds(np.zeros(2 * count), np.concatenate([max_servers, rate])),
        fewest=np.concatenate([gpus, np.zeros(count)]),
    )


def _objective(pools: Sequence[PoolEconomics], weights: Weights) -> np.ndarray:
    """Weighted $ and kg per server (the y columns), then per carried req/s (the x columns)."""
    per_server = [
        _coef(p.usd_per_server_hour, weights.usd) + _coef(p.kg_per_server_hour, weights.kg)
        for p in pools
    ]
    per_rps = [
        _coef(p.usd_per_rps_hour, weights.usd) + _coef(p.kg_per_rps_hour, weights.kg) for p in pools
    ]
    return np.concatenate([np.array(per_server), np.array(per_rps)])


def _constraints(
    pools: Sequence[PoolEconomics], demand_rps: dict[str, float], limits: Limits
) -> LinearConstraint:
    count = len(pools)
    rows = Rows(2 * count)
    members = by_class(pools)
    for k, rate in demand_rps.items():  # each class fully served
        rows.add([(count + i, 1.0) for i in members.get(k, [])], rate, rate)
    for i, pool in enumerate(pools):  # a pool carries what it can: x_p - capacity_p * y_p <= 0
        rows.add([(count + i, 1.0), (i, -pool.capacity.capacity_rps)], -np.inf, 0.0)
    kernel.add_limit_rows(rows, peak_limit_rows(pools, limits))  # GPU limits, budget, carbon cap
    return rows.constraint()


def _solution(result, count: int, time_limit_s: float) -> Solution:
    """scipy's answer as a Solution: a status and message always, servers and rates if found."""
    out = kernel.outcome(
        result, time_limit_s, infeasible="the limits leave no way to serve every class"
    )
    if out.x is None:
        return Solution(out.status, out.message)
    servers = tuple(round(v) for v in out.x[:count])
    rates = tuple(max(0.0, float(v)) for v in out.x[count:])
    return Solution(out.status, out.message, servers, rates, out.mip_gap)
