"""The program of `planner.availability.program` in scipy's terms (its docstring gives the model):
the options' binaries z, then the pools' rates x, their objective and rows."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, milp

from fleetplan.planner.peak.economics import PoolEconomics
from fleetplan.planner.peak.program import Limits, Weights
from fleetplan.planner.solve.rows import Rows as _Rows


@dataclass(frozen=True, slots=True)
class ClassNeed:
    """What the program asks of one class."""

    rate_rps: float
    attainment: float | None = None
    fallback: bool = False


@dataclass(frozen=True, slots=True)
class Option:
    pool: int
    servers: int  # n: planned
    counted: int  # k: servers whose capacity the pool may count on
    log_p: float  # log P(Binomial(n, a) >= k) (non-fallback pools with a target)


@dataclass(frozen=True, slots=True)
class Found:
    objective: float
    servers: tuple[int, ...]
    rates: tuple[float, ...]


class Program:
    """The program in scipy's terms. Variables: z (one per option), then x (one per pool)."""

    def __init__(
        self,
        pools: Sequence[PoolEconomics],
        options: list[Option],
        needs: dict[str, ClassNeed],
        weights: Weights,
        limits: Limits,
    ) -> None:
        self.pools, self.options = pools, options
        nz, npool = len(options), len(pools)
        self.nz, self.columns = nz, nz + npool
        per_server = [
            weights.usd * p.usd_per_server_hour + weights.kg * (p.kg_per_server_hour or 0.0)
            for p in pools
        ]
        per_rps = [
            weights.usd * p.usd_per_rps_hour + weights.kg * (p.kg_per_rps_hour or 0.0)
            for p in pools
        ]
        self.cost = np.array(
            [o.servers * per_server[o.pool] for o in options] + per_rps, dtype=float
        )
        self.gpus = np.array(
            [o.servers * pools[o.pool].gpus_per_server for o in options] + [0.0] * npool
        )
        rows = _Rows(self.columns)
        for i in range(npool):  # one option per pool
            rows.add([(j, 1.0) for j, o in enumerate(options) if o.pool == i], 1.0, 1.0)
        for i, pool in enumerate(pools):  # x_p <= c_p * sum k_o z_o
            capacity_rps = pool.capacity.capacity_rps
            entries = [(j, -capacity_rps * o.counted) for j, o in enumerate(options) if o.pool == i]
            rows.add([(nz + i, 1.0), *entries], -np.inf, 0.0)
        for name, need in needs.items():  # each class fully served, and its attainment
            members = [i for i, p in enumerate(pools) if p.capacity.traffic_class == name]
            rows.add([(nz + i, 1.0) for i in members], need.rate_rps, need.rate_rps)
            if need.attainment is not None and not need.fallback:
                logs = [(j, o.log_p) for j, o in enumerate(options) if o.pool in members]
                rows.add(logs, math.log(need.attainment) - 1e-12, np.inf)
        _limit_rows(rows, pools, options, limits, nz)
        self.base = rows
        rate = [needs[p.capacity.traffic_class].rate_rps for p in pools]
        self.bounds = Bounds(np.zeros(self.columns), np.array([1.0] * nz + rate))
        self.integrality = np.array([1] * nz + [0] * npool)

    def run(
        self,
        cuts: list[tuple[list[int], float]],
        time_limit_s: float,
        *,
        fewest: bool,
        best: float | None,
    ) -> OptimizeResult:
        constraints = [self.base.constraint()]
        if cuts:
            extra = _Rows(self.columns)
            for cols, low in cuts:
                extra.add([(j, 1.0) for j in cols], low, np.inf)
            constraints.append(extra.constraint())
        objective = self.cost
        if fewest and best is not None:
            slack = max(1e-9, 1e-7 * abs(best))
            constraints.append(LinearConstraint(self.cost, -np.inf, best + slack))
            objective = self.gpus
        return milp(
            objective,
            constraints=constraints,
            integrality=self.integrality,
            bounds=self.bounds,
            options={"time_limit": time_limit_s, "mip_rel_gap": 1e-9},
        )

    def found(self, result: OptimizeResult) -> Found:
        servers = [0] * len(self.pools)
        for j, o in enumerate(self.options):
            if result.x[j] > 0.5:
                servers[o.pool] = o.servers
        rates = tuple(max(0.0, float(v)) for v in result.x[self.nz :])
        return Found(float(self.cost @ result.x), tuple(servers), rates)


def _limit_rows(
    rows: _Rows,
    pools: Sequence[PoolEconomics],
    options: list[Option],
    limits: Limits,
    nz: int,
) -> None:
    """GPU limits, budget and carbon cap, on the options' servers and the pools' rates."""
    for gpu_model, most in limits.max_gpus.items():
        entries = [
            (j, float(o.servers * pools[o.pool].gpus_per_server))
            for j, o in enumerate(options)
            if pools[o.pool].gpu_model == gpu_model
        ]
        if entries:
            rows.add(entries, -np.inf, float(most))
    if limits.budget_usd_per_hour is not None:
        usd = [(j, o.servers * pools[o.pool].usd_per_server_hour) for j, o in enumerate(options)]
        usd += [(nz + i, p.usd_per_rps_hour) for i, p in enumerate(pools)]
        rows.add(usd, -np.inf, limits.budget_usd_per_hour)
    if limits.carbon_cap_kg_per_hour is not None:
        kg = [
            (j, o.servers * (pools[o.pool].kg_per_server_hour or 0.0))
            for j, o in enumerate(options)
        ]
        kg += [(nz + i, p.kg_per_rps_hour or 0.0) for i, p in enumerate(pools)]
        rows.add(kg, -np.inf, limits.carbon_cap_kg_per_hour)
