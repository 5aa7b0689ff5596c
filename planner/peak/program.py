"""The mixed-integer program: integer servers and carried rate per (class, configuration) pool.

    minimise   sum_p  w_usd * (usd_server_p * y_p + usd_rps_p * x_p)
                    + w_kg  * (kg_server_p  * y_p + kg_rps_p  * x_p)
    subject to sum_{p of class k} x_p = rate_k                 (each class fully served)
               x_p <= capacity_p * y_p                          (a pool carries what it can)
               sum_{p of GPU model g} gpus_p * y_p <= max_g     (GPU limits)
               sum_p usd_p(y, x) <= budget,  sum_p kg_p(y, x) <= carbon cap   (optional)
               y_p integer >= 0, 0 <= x_p <= rate_k

Solved with scipy.optimize.milp (HiGHS) under a time limit. Ties are broken toward fewer GPUs by a
second solve among the optimal fleets. Infeasible or stopped is a status, never an exception.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, milp

from fleetplan.planner.peak.economics import PoolEconomics
from fleetplan.planner.solve.rows import Rows  # the one sparse row builder (day.py uses it too)


class SolveStatus(StrEnum):
    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"  # stopped at the time limit; a plan may still be there
    INFEASIBLE = "infeasible"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Weights:
    usd: float = 1.0  # per $ of hourly cost
    kg: float = 0.0  # per kg CO2e per hour


@dataclass(frozen=True, slots=True)
class Limits:
    max_gpus: dict[str, int] = field(default_factory=dict)
    budget_usd_per_hour: float | None = None
    carbon_cap_kg_per_hour: float | None = None


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
    """
    started = time.monotonic()
    split = _solve_per_class(
        pools, demand_rps, weights=weights, time_limit_s=time_limit_s, fewest_gpus=fewest_gpus
    )
    if split.status is SolveStatus.OPTIMAL and _within_limits(split, pools, limits):
        return split
    if split.status is SolveStatus.INFEASIBLE:
        return split
    left = max(time_limit_s - (time.monotonic() - started), 0.001)
    return _solve_joint(
        pools,
        demand_rps,
        weights=weights,
        limits=limits,
        time_limit_s=left,
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
    deadline = time.monotonic() + time_limit_s
    for k, rate in demand_rps.items():
        members = [i for i, p in enumerate(pools) if p.capacity.traffic_class == k]
        left = deadline - time.monotonic()
        if left <= 0:
            return Solution(SolveStatus.TIME_LIMIT, f"time limit of {time_limit_s:g} s reached")
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


def _within_limits(solution: Solution, pools: Sequence[PoolEconomics], limits: Limits) -> bool:
    vector = np.array([*solution.servers, *solution.rates], dtype=float)
    return all(row.holds(vector) for row in limit_rows(pools, limits))


@dataclass(frozen=True, slots=True)
class LimitRow:
    """One limit, defined once: sum of coefficient x column <= upper over the program's columns.
    The solver gets it as a row; a solution found without it (per class) is checked with it."""

    name: str
    entries: tuple[tuple[int, float], ...]
    upper: float

    def value(self, vector: np.ndarray) -> float:
        return float(sum(coef * vector[col] for col, coef in self.entries))

    def holds(self, vector: np.ndarray, tolerance: float = 1e-9) -> bool:
        return self.value(vector) <= self.upper + tolerance


def limit_rows(pools: Sequence[PoolEconomics], limits: Limits) -> list[LimitRow]:
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
    unserved = [k for k in demand_rps if not any(p.capacity.traffic_class == k for p in pools)]
    if unserved:
        return Solution(SolveStatus.INFEASIBLE, f"no configuration can serve {', '.join(unserved)}")
    if not pools:
        return Solution(SolveStatus.OPTIMAL, "nothing to serve")
    program = _program(pools, demand_rps, weights=weights, limits=limits)
    result = _run(program, time_limit_s=time_limit_s, fewest_gpus=fewest_gpus)
    return _solution(result, len(pools), time_limit_s)


@dataclass(frozen=True, slots=True)
class _Program:
    """The program in scipy's terms. Variables: y (servers per pool), then x (rate per pool)."""

    objective: np.ndarray
    constraints: list[LinearConstraint]
    integrality: np.ndarray
    bounds: Bounds
    gpus: np.ndarray  # GPUs per server of each pool: what the tie-break minimises


def _program(
    pools: Sequence[PoolEconomics],
    demand_rps: dict[str, float],
    *,
    weights: Weights,
    limits: Limits,
) -> _Program:
    count = len(pools)
    capacity_rps = np.array([p.capacity.capacity_rps for p in pools], dtype=float)
    rate = np.array([demand_rps[p.capacity.traffic_class] for p in pools], dtype=float)
    max_servers = np.ceil(
        rate / capacity_rps - 1e-9
    )  # more servers than the whole class needs never pay
    return _Program(
        objective=_objective(pools, weights),
        constraints=[_constraints(pools, demand_rps, limits)],
        integrality=np.concatenate([np.ones(count), np.zeros(count)]),
        bounds=Bounds(np.zeros(2 * count), np.concatenate([max_servers, rate])),
        gpus=np.array([p.gpus_per_server for p in pools], dtype=float),
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
    for k, rate in demand_rps.items():  # each class fully served
        served = [(count + i, 1.0) for i, p in enumerate(pools) if p.capacity.traffic_class == k]
        rows.add(served, rate, rate)
    for i, pool in enumerate(pools):  # a pool carries what it can: x_p - capacity_p * y_p <= 0
        rows.add([(count + i, 1.0), (i, -pool.capacity.capacity_rps)], -np.inf, 0.0)
    for limit in limit_rows(pools, limits):  # GPU limits, budget, carbon cap
        rows.add(list(limit.entries), -np.inf, limit.upper)
    return rows.constraint()


def _run(program: _Program, *, time_limit_s: float, fewest_gpus: bool) -> OptimizeResult:
    started = time.monotonic()
    result = _milp(
        program, program.objective, constraints=program.constraints, time_limit_s=time_limit_s
    )
    left = time_limit_s - (time.monotonic() - started)
    if result.status == 0 and left > 0 and fewest_gpus:
        # Ties: among the optimal fleets, the one with the fewest GPUs (a second, lexicographic
        # solve; a small weight in one objective would be lost in the solver's tolerances).
        best = float(result.fun)
        slack = max(1e-9, 1e-7 * abs(best))
        no_worse = LinearConstraint(program.objective, -np.inf, best + slack)
        fewest_objective = np.concatenate([program.gpus, np.zeros(len(program.gpus))])
        constraints = [*program.constraints, no_worse]
        fewest = _milp(program, fewest_objective, constraints=constraints, time_limit_s=left)
        if fewest.status == 0:
            result = fewest
    return result


def _milp(
    program: _Program,
    objective: np.ndarray,
    *,
    constraints: list[LinearConstraint],
    time_limit_s: float,
) -> OptimizeResult:
    return milp(
        objective,
        constraints=constraints,
        integrality=program.integrality,
        bounds=program.bounds,
        options={"time_limit": time_limit_s, "mip_rel_gap": 1e-9},
    )


def _solution(result: OptimizeResult, count: int, time_limit_s: float) -> Solution:
    """scipy's answer as a Solution: a status and message always, servers and rates if found."""
    if result.x is None:
        if result.status == 1:
            message = f"no plan found within the time limit of {time_limit_s:g} s"
            return Solution(SolveStatus.TIME_LIMIT, message)
        if result.status == 2:
            return Solution(SolveStatus.INFEASIBLE, "the limits leave no way to serve every class")
        return Solution(SolveStatus.ERROR, f"the solver stopped: {result.message}")
    servers = tuple(round(v) for v in result.x[:count])
    rates = tuple(max(0.0, float(v)) for v in result.x[count:])
    gap = getattr(result, "mip_gap", None)
    if result.status == 0:
        return Solution(SolveStatus.OPTIMAL, "optimal", servers, rates, gap)
    message = f"stopped at the time limit of {time_limit_s:g} s"
    if gap is not None and math.isfinite(gap):
        message += f" with a feasible plan that is not proven optimal (relative gap {gap:.2%})"
    return Solution(SolveStatus.TIME_LIMIT, message, servers, rates, gap)
