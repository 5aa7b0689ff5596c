"""Availability arithmetic: how many servers a pool needs so that it carries its load often enough,
and the chance a pool (or a class's pools together) carries its load. Pure math, no solver.

The model, and what it assumes:
- One server of an offer is up at a random moment with probability `a` (the offer's
  `availability`, the share of time a host is up), independently of every other server.
- A pool needing `m` servers at its planned load (rate / capacity per server, rounded up) with
  `n` servers planned carries its load when at least `m` are up: P(Binomial(n, a) >= m).
- A class without fallback is served at its targets when every one of its pools carries its own
  share (the router's weights are fixed): the product of its pools' probabilities.
- A class with fallback (`classes[].fallback: true`) is served when the capacity of its up
  servers, over all its pools together, covers its rate: sum_p U_p x c_p >= rate, with U_p ~
  Binomial(n_p, a_p) independent. The router sends a pool's excess to the class's other pools.

Independence means no correlated outage: a provider, a region or a network partition that takes
many hosts down at once is outside the model. Model such a risk with a lower availability for the
offer (e.g. a provider down 0.5 % of the time makes each of its hosts at most 0.995 x the host's
own figure), or with a separate offer per provider. The figures are time shares at a random
moment; how long outages last does not enter the sizing (`fleetplan simulate` makes it explicit).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import binom

# Capacities are compared with rates with this tolerance (req/s): 19.999999 serves 20.
RATE_TOLERANCE = 1e-9
# The most servers one pool is sized to (a guard on a search that a tiny availability would run
# away with: 0.01 availability and 0.999999 attainment).
MAX_POOL_SERVERS = 100_000


def servers_needed(rate_rps: float, capacity_rps: float) -> int:
    """Servers a pool needs, all up, to carry `rate_rps` at `capacity_rps` per server."""
    if rate_rps <= RATE_TOLERANCE:
        return 0
    return max(1, math.ceil(rate_rps / capacity_rps - 1e-9))


def carries(n: int, a: float, m: int) -> float:
    """P(Binomial(n, a) >= m): the chance that at least `m` of `n` servers are up."""
    if m <= 0:
        return 1.0
    if n < m:
        return 0.0
    if a >= 1.0:
        return 1.0
    return float(binom.sf(m - 1, n, a))


def servers_for(m: int, a: float, target: float | None) -> int:
    """The smallest n with P(Binomial(n, a) >= m) >= target; m itself without a target (or at
    availability 1). The chance grows with n: a galloping search, then a halving one (a few
    dozen evaluations, where one server at a time took minutes at 300,000 servers). Raises
    ValueError past MAX_POOL_SERVERS (no such pool is plannable)."""
    if m <= 0 or target is None or a >= 1.0:
        return max(m, 0)
    if carries(m, a, m) >= target:
        return m
    low, high, step = m, m, 1  # carries(low) < target
    while carries(high, a, m) < target:
        if high >= MAX_POOL_SERVERS:
            raise ValueError(
                f"availability {a:g} needs more than {MAX_POOL_SERVERS:,} servers for "
                f"{m} needed at attainment {target:g}"
            )
        low, high, step = high, min(high + step, MAX_POOL_SERVERS), step * 2
    while high - low > 1:  # carries(low) < target <= carries(high)
        middle = (low + high) // 2
        if carries(middle, a, m) >= target:
            high = middle
        else:
            low = middle
    return high


@dataclass(frozen=True, slots=True)
class PoolState:
    """What the joint probability needs of one pool: servers planned, their availability and
    what one server is planned to carry (req/s)."""

    servers: int
    availability: float
    capacity_rps: float


def joint_carries(pools: Sequence[PoolState], rate_rps: float) -> float:
    """P(sum_p U_p x c_p >= rate), U_p ~ Binomial(n_p, a_p) independent: the chance that the up
    servers of the pools together cover `rate_rps` (a class with fallback). Exact: the
    distribution of the up capacity, convolved pool by pool, capped at the rate (more never
    matters), so its support stays small."""
    need = rate_rps - RATE_TOLERANCE
    dist: dict[float, float] = {0.0: 1.0}
    for pool in pools:
        if pool.servers <= 0:
            continue
        ups = range(pool.servers + 1)
        if pool.availability >= 1.0:
            pmf = [0.0] * pool.servers + [1.0]
        else:
            pmf = [float(p) for p in binom.pmf(list(ups), pool.servers, pool.availability)]
        merged: dict[float, float] = {}
        for capacity, p in dist.items():
            for up, q in zip(ups, pmf, strict=True):
                if q == 0.0:
                    continue
                total = min(capacity + up * pool.capacity_rps, rate_rps)
                key = round(total, 9)
                merged[key] = merged.get(key, 0.0) + p * q
        dist = merged
    return float(sum(p for capacity, p in dist.items() if capacity >= need))


def class_attainment(
    pools: Sequence[tuple[PoolState, float]], rate_rps: float, *, fallback: bool
) -> float:
    """The chance a class is served at its targets at a random moment, from its pools (each with
    the rate it is planned to carry): the product of the pools' probabilities without fallback,
    the joint probability of their capacity with it."""
    if fallback:
        return joint_carries([state for state, _ in pools], rate_rps)
    out = 1.0
    for state, rate in pools:
        out *= carries(state.servers, state.availability, servers_needed(rate, state.capacity_rps))
    return out


@dataclass(frozen=True, slots=True)
class HostLost:
    """A pool with one of its servers gone: whether the rest carry its load, and how loaded."""

    servers_left: int
    carries_load: bool
    load_per_server_rps: float | None  # the pool's rate over the servers left (None: none left)
    capacity_rps: float  # planned per server (after the utilisation ceiling)

    def sentence(self) -> str:
        if self.load_per_server_rps is None:
            return "no server left: the pool's traffic is not served"
        load = f"{self.load_per_server_rps:.2f} req/s per server"
        if self.carries_load:
            planned = f"planned at most {self.capacity_rps:.2f}"
            return f"{self.servers_left} left carry it at {load} ({planned})"
        over = self.load_per_server_rps / self.capacity_rps - 1
        return (
            f"{self.servers_left} left would get {load}, {over:.0%} above the planned "
            f"{self.capacity_rps:.2f}: the targets are not met"
        )


def one_host_lost(servers: int, rate_rps: float, capacity_rps: float) -> HostLost:
    """What happens to a pool of `servers` carrying `rate_rps` when one server goes."""
    left = servers - 1
    if left <= 0:
        return HostLost(max(left, 0), rate_rps <= RATE_TOLERANCE, None, capacity_rps)
    per_server = rate_rps / left
    return HostLost(left, per_server <= capacity_rps + RATE_TOLERANCE, per_server, capacity_rps)
