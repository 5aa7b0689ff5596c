"""The program for a plan with availability: the cheapest fleet whose classes are served at their
targets with at least their attainment, servers failing independently
(planner.availability.probability).

Each pool p (a class k on a configuration, carrying x_p req/s at c_p req/s per server, servers
up with probability a_p) chooses exactly one *option* o, a binary z_o: a number of servers
planned n_o and a number of servers whose capacity the pool may count on, k_o:

    minimise   sum_o w_server_p * n_o * z_o + sum_p w_rps_p * x_p
    subject to sum_{o of p} z_o = 1                               (one option per pool)
               x_p <= c_p * sum_{o of p} k_o * z_o                (a pool carries what it can)
               sum_{p of k} x_p = rate_k                          (each class fully served)
               GPU limits, budget and carbon cap on n_o * z_o and x_p  (as planner.peak.program)

- A class without fallback: option o = (m, n), m servers needed (k_o = m), n planned, with
  P_o = P(Binomial(n, a_p) >= m). Its pools fail independently and each must carry its own
  share, so the class is served with probability prod_p P_p; the product is a sum of logs, and
  the option is one binary, so the attainment constraint is linear and exact:
      sum_{p of k} sum_{o of p} log(P_o) * z_o >= log(attainment_k).
  Options: m in 0..ceil(rate_k / c_p) (more than the class never pays; more m only lowers P) and
  n from N(m) = the smallest n with P >= attainment (no pool of the class can do with less, as
  the others' probabilities are at most 1) to a first bound where the pool fails at most
  1/1000 of the class's allowance; then, with the objective Z of that solve, to
  floor(Z / w_server_p) (a pool with more servers costs more than the whole feasible fleet) and
  solved again if that reaches further: the answer is optimal over every n, not a margin
  added to today's plan.
- A class with fallback: option o = n planned (k_o = n: the pools' capacities pool together).
  The class is served when sum_p U_p c_p >= rate_k, U_p ~ Binomial(n_p, a_p): monotone in every
  n_p but not separable, so it enters as cuts. Solve; where the chosen (n_p) misses the
  attainment, every fleet with no pool larger misses it too (the probability only grows with
  servers), so add  sum_p sum_{o of p: n_o > n_p} z_o >= 1  and solve again, until the chosen
  fleet meets it: the first such answer is optimal, as the cuts only removed fleets that miss.
  n_p runs from 0 to N(ceil(rate_k / c_p)) for the pool alone: a pool with more could drop to
  that many, serve the whole class alone and cost less.
- A class without an attainment: options n = m (the program of planner.peak.program).

Ties go to fewer GPUs by a second solve among the optimal fleets, as in planner.peak.program.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, OptimizeResult

from fleetplan.planner.availability.probability import (
    PoolState,
    carries,
    joint_carries,
    servers_for,
    servers_needed,
)
from fleetplan.planner.peak.economics import PoolEconomics
from fleetplan.planner.peak.program import Limits, Weights, by_class, peak_limit_rows
from fleetplan.planner.solve import kernel
from fleetplan.planner.solve.kernel import Deadline, LimitRow, SolveStatus
from fleetplan.planner.solve.rows import Rows

# A pool's failures may use this share of the class's allowance (1 - attainment) at the first
# bound on its servers; the cost bound then extends it where it could matter.
FIRST_SHARE = 1e-3
MAX_OPTIONS_PER_POOL = 5_000  # a guard on the program's size
MAX_CUT_ROUNDS = 300


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
        rows = Rows(self.columns)
        of_pool: list[list[int]] = [[] for _ in range(npool)]  # options by pool, in one pass
        for j, o in enumerate(options):
            of_pool[o.pool].append(j)
        for i in range(npool):  # one option per pool
            rows.add([(j, 1.0) for j in of_pool[i]], 1.0, 1.0)
        for i, pool in enumerate(pools):  # x_p <= c_p * sum k_o z_o
            capacity_rps = pool.capacity.capacity_rps
            entries = [(j, -capacity_rps * options[j].counted) for j in of_pool[i]]
            rows.add([(nz + i, 1.0), *entries], -np.inf, 0.0)
        grouped = by_class(pools)
        for name, need in needs.items():  # each class fully served, and its attainment
            members = grouped.get(name, [])
            rows.add([(nz + i, 1.0) for i in members], need.rate_rps, need.rate_rps)
            if need.attainment is not None and not need.fallback:
                logs = [(j, options[j].log_p) for i in members for j in of_pool[i]]
                rows.add(logs, math.log(need.attainment) - 1e-12, np.inf)
        kernel.add_limit_rows(rows, option_limit_rows(pools, options, limits))
        rate = [needs[p.capacity.traffic_class].rate_rps for p in pools]
        self.program = kernel.Program(
            objective=self.cost,
            constraints=[rows.constraint()],
            integrality=np.array([1] * nz + [0] * npool),
            bounds=Bounds(np.zeros(self.columns), np.array([1.0] * nz + rate)),
            fewest=self.gpus,
        )

    def run(
        self,
        cuts: list[tuple[list[int], float]],
        time_limit_s: float,
        *,
        fewest: bool,
        best: float | None,
    ) -> OptimizeResult:
        """The program with the fallback classes' cuts so far; `fewest` (with the optimum
        `best`): the tie-break's solve, the fewest GPUs among the fleets no worse."""
        extra = []
        if cuts:
            rows = Rows(self.columns)
            for cols, low in cuts:
                rows.add([(j, 1.0) for j in cols], low, np.inf)
            extra.append(rows.constraint())
        if fewest and best is not None:
            extra.append(kernel.no_worse(self.program.objective, best))
            return kernel.run(self.program, time_limit_s, objective=self.gpus, extra=extra)
        return kernel.run(self.program, time_limit_s, extra=extra)

    def found(self, result: OptimizeResult) -> Found:
        servers = [0] * len(self.pools)
        for j, o in enumerate(self.options):
            if result.x[j] > 0.5:
                servers[o.pool] = o.servers
        rates = tuple(max(0.0, float(v)) for v in result.x[self.nz :])
        return Found(float(self.cost @ result.x), tuple(servers), rates)


def option_limit_rows(
    pools: Sequence[PoolEconomics], options: list[Option], limits: Limits
) -> list[LimitRow]:
    """The peak program's limits (`peak.program.peak_limit_rows`: GPUs per offer, budget, carbon
    cap) on this program's columns: an option's servers stand for its pool's (z_o x n_o), the
    pools' rates follow the options."""
    nz = len(options)
    rows = []
    for limit in peak_limit_rows(pools, limits):
        entries: list[tuple[int, float]] = []
        for col, coef in limit.entries:
            if col < len(pools):  # servers of pool `col`
                entries += [(j, coef * o.servers) for j, o in enumerate(options) if o.pool == col]
            else:  # the rate of pool col - len(pools)
                entries.append((nz + col - len(pools), coef))
        rows.append(LimitRow(limit.name, tuple(entries), limit.upper))
    return rows


@dataclass(frozen=True, slots=True)
class AvailableSolution:
    status: SolveStatus
    message: str
    servers: tuple[int, ...] = ()
    rates: tuple[float, ...] = ()

    @property
    def has_plan(self) -> bool:
        return bool(self.servers)


def solve_available(
    pools: Sequence[PoolEconomics],
    availability: Sequence[float],
    needs: dict[str, ClassNeed],
    *,
    weights: Weights,
    limits: Limits,
    time_limit_s: float = 10.0,
    fewest_gpus: bool = True,
) -> AvailableSolution:
    """Servers planned and rates per pool (`availability[i]` of `pools[i]`); see the module
    docstring for the program."""
    unserved = [k for k in needs if not any(p.capacity.traffic_class == k for p in pools)]
    if unserved:
        return AvailableSolution(
            SolveStatus.INFEASIBLE, f"no configuration can serve {', '.join(unserved)}"
        )
    deadline = Deadline(time_limit_s)
    if len(needs) > 1:  # classes are independent but for the limits: each alone first
        split = _per_class(pools, availability, needs, weights, time_limit_s, fewest_gpus)
        if split is not None and _within_limits(pools, split, limits):
            return split
        time_limit_s = deadline.left_at_least()
    return _solve_all(pools, availability, needs, weights, limits, time_limit_s, fewest_gpus)


def _per_class(
    pools: Sequence[PoolEconomics],
    availability: Sequence[float],
    needs: dict[str, ClassNeed],
    weights: Weights,
    time_limit_s: float,
    fewest_gpus: bool,
) -> AvailableSolution | None:
    """Each class solved alone, without limits; None where one has no optimal answer."""
    servers, rates = [0] * len(pools), [0.0] * len(pools)
    deadline = Deadline(time_limit_s)
    grouped = by_class(pools)
    for name, need in needs.items():
        members = grouped.get(name, [])
        left = deadline.left()
        if left <= 0:
            return None
        part = _solve_all(
            [pools[i] for i in members],
            [availability[i] for i in members],
            {name: need},
            weights,
            Limits(),
            left,
            fewest_gpus,
        )
        if part.status is not SolveStatus.OPTIMAL:
            return None
        for i, n, x in zip(members, part.servers, part.rates, strict=True):
            servers[i], rates[i] = n, x
    return AvailableSolution(SolveStatus.OPTIMAL, "optimal", tuple(servers), tuple(rates))


def _within_limits(
    pools: Sequence[PoolEconomics], solution: AvailableSolution, limits: Limits
) -> bool:
    """Whether a fleet found without the limits meets them (the peak program's rows)."""
    vector = np.array([*solution.servers, *solution.rates], dtype=float)
    return all(row.holds(vector) for row in peak_limit_rows(pools, limits))


def _solve_all(
    pools: Sequence[PoolEconomics],
    availability: Sequence[float],
    needs: dict[str, ClassNeed],
    weights: Weights,
    limits: Limits,
    time_limit_s: float,
    fewest_gpus: bool,
) -> AvailableSolution:
    """Every class and limit in one program."""
    deadline = Deadline(time_limit_s)
    first = {i: _first_bound(p, availability[i], needs) for i, p in enumerate(pools)}
    solved = _solve_rounds(pools, availability, needs, first, weights, limits, deadline, False)
    if solved is None or isinstance(solved, AvailableSolution):
        return solved or _stopped(time_limit_s)
    best, _ = solved
    # The cost bound: no pool of the optimum has more servers than the whole fleet pays for.
    wider = {i: _cost_bound(p, weights, best.objective, first[i]) for i, p in enumerate(pools)}
    if wider != first:
        again = _solve_rounds(pools, availability, needs, wider, weights, limits, deadline, False)
        if again is None or isinstance(again, AvailableSolution):
            return again or _stopped(time_limit_s)
        best, _ = again
        first = wider
    if fewest_gpus:
        fewest = _solve_rounds(
            pools, availability, needs, first, weights, limits, deadline, True, best.objective
        )
        if fewest is not None and not isinstance(fewest, AvailableSolution):
            best = fewest[0]
    return AvailableSolution(SolveStatus.OPTIMAL, "optimal", best.servers, best.rates)


def _stopped(time_limit_s: float) -> AvailableSolution:
    message = f"no plan proven within the time limit of {kernel.said(time_limit_s):g} s"
    return AvailableSolution(SolveStatus.TIME_LIMIT, message)


def _target(pool: PoolEconomics, needs: dict[str, ClassNeed]) -> ClassNeed:
    return needs[pool.capacity.traffic_class]


def _most_needed(pool: PoolEconomics, need: ClassNeed) -> int:
    return servers_needed(need.rate_rps, pool.capacity.capacity_rps)


def _first_bound(pool: PoolEconomics, a: float, needs: dict[str, ClassNeed]) -> int | None:
    """The most servers planned per option at first: None for n = m (no target), the pool alone
    serving the class for fallback, else the reliable bound of the docstring (per m, below)."""
    need = _target(pool, needs)
    if need.attainment is None or a >= 1.0:
        return None
    if need.fallback:
        return servers_for(_most_needed(pool, need), a, need.attainment)
    return -1  # per m: servers_for(m, a, 1 - (1 - attainment) x FIRST_SHARE)


def _cost_bound(
    pool: PoolEconomics, weights: Weights, objective: float, first: int | None
) -> int | None:
    if first is None or first >= 0:  # no target, or fallback (already exact)
        return first
    per_server = weights.usd * pool.usd_per_server_hour + weights.kg * (
        pool.kg_per_server_hour or 0.0
    )
    if per_server <= 0:
        return first
    return math.floor(objective / per_server + 1e-9)


def _options(
    pools: Sequence[PoolEconomics],
    availability: Sequence[float],
    needs: dict[str, ClassNeed],
    bounds: dict[int, int | None],
) -> list[Option]:
    out: list[Option] = []
    for i, pool in enumerate(pools):
        need, a = _target(pool, needs), availability[i]
        most = _most_needed(pool, need)
        bound = bounds[i]
        if bound is None:  # n = m
            out += [Option(i, m, m, 0.0) for m in range(most + 1)]
        elif need.fallback:
            out += [Option(i, n, n, 0.0) for n in range(bound + 1)]
        else:
            assert need.attainment is not None
            reliable = 1 - (1 - need.attainment) * FIRST_SHARE
            for m in range(most + 1):
                low = servers_for(m, a, need.attainment)
                high = servers_for(m, a, reliable) if bound < 0 else max(bound, low)
                for n in range(low, high + 1):
                    p = carries(n, a, m)
                    out.append(Option(i, n, m, math.log(p) if p > 0 else -1e6))
        if sum(1 for o in out if o.pool == i) > MAX_OPTIONS_PER_POOL:
            raise ValueError(
                f"{pool.capacity.traffic_class} on {pool.gpus_per_server}x {pool.gpu_model}: more "
                f"than {MAX_OPTIONS_PER_POOL:,} (needed, planned) sizes to weigh; a fleet this "
                "large is not sized for availability yet (lower the attainment or plan without it)"
            )
    return out


def _solve_rounds(
    pools: Sequence[PoolEconomics],
    availability: Sequence[float],
    needs: dict[str, ClassNeed],
    bounds: dict[int, int | None],
    weights: Weights,
    limits: Limits,
    deadline: Deadline,
    fewest: bool,
    best: float | None = None,
) -> tuple[Found, int] | AvailableSolution | None:
    """Solve, add the fallback classes' cuts, solve again until the fleet meets them. None: the
    time ran out; an AvailableSolution: infeasible or an error."""
    options = _options(pools, availability, needs, bounds)
    program = Program(pools, options, needs, weights, limits)
    cuts: list[tuple[list[int], float]] = []
    for rounds in range(1, MAX_CUT_ROUNDS + 1):
        left = deadline.left()
        if left <= 0:
            return None
        result = program.run(cuts, left, fewest=fewest, best=best)
        infeasible = "no fleet within the limits serves every class at its attainment"
        out = kernel.outcome(result, left, infeasible=infeasible)
        if out.status is SolveStatus.TIME_LIMIT:
            return None
        if out.status is not SolveStatus.OPTIMAL:
            return AvailableSolution(out.status, out.message)
        found = program.found(result)
        missing = _fallback_misses(pools, availability, needs, found)
        if not missing:
            return found, rounds
        for members in missing:
            larger = [
                j
                for j, o in enumerate(options)
                if o.pool in members and o.servers > found.servers[o.pool]
            ]
            cuts.append((larger, 1.0))
    return None


def _fallback_misses(
    pools: Sequence[PoolEconomics],
    availability: Sequence[float],
    needs: dict[str, ClassNeed],
    found: Found,
) -> list[set[int]]:
    """The pools of each fallback class whose chosen fleet misses its attainment."""
    out = []
    for name, need in needs.items():
        if not need.fallback or need.attainment is None:
            continue
        members = {i for i, p in enumerate(pools) if p.capacity.traffic_class == name}
        states = [
            PoolState(found.servers[i], availability[i], pools[i].capacity.capacity_rps)
            for i in sorted(members)
        ]
        if joint_carries(states, need.rate_rps) < need.attainment:
            out.append(members)
    return out
