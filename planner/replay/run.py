"""The replay: each request routed as the exported router would, each server simulated by the
serving model, hosts failing where the plan has availability.

- Routing: a request of class k arriving in hour h goes to one of the class's pools in that hour
  with the probability of its weight (LiteLLM's `simple-shuffle` over the plan's weights), then
  to one of the pool's servers at random (its load balancer, as kube-proxy picks an endpoint).
- Serving: each server is one engine replica of its configuration (`ServerModel`: the serving
  model's step times, KV cache and scheduler limits), simulated over the whole trace
  (`planner.estimate.simulate.serve`): a server in two hours' fleets keeps its queue across
  the hour; one leaving the fleet finishes what it holds.
- Hosts failing (a pool with `availability` below 1): each server is up for an exponential time
  of mean D x a / (1 - a), down for one of mean D (`repair_hours`), starting in the stationary
  state, as `fleetplan simulate` draws them. A request finding its server down goes to an up
  server of the pool, else to the class's other pools (the router's cooldown), else fails; a
  request in flight when its server goes down is lost (counted as failed: neither target met).

Seeded: the same trace, plan and seed give the same answer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fleetplan.planner.estimate.serving import MAX_NUM_SEQS, TOKEN_BUDGET, Efficiencies, Server
from fleetplan.planner.estimate.simulate import serve
from fleetplan.planner.replay.fleet import Fleet, PoolKey, Slot
from fleetplan.planner.replay.trace import HOUR_S, Requests

DEFAULT_REPAIR_HOURS = 1.0


@dataclass(frozen=True, slots=True)
class ServerModel:
    """One server of a pool as the serving model simulates it, and what its figures rest on."""

    server: Server
    eff: Efficiencies
    kv_tokens: float
    basis: str
    max_num_seqs: int = MAX_NUM_SEQS
    token_budget: int = TOKEN_BUDGET


@dataclass(frozen=True)
class Served:
    """Per request, in the order of `Requests`: TTFT and TPOT (ms; TPOT nan for a one-token
    output; both inf where it failed), the pool it went to (-1: none) and whether it failed."""

    ttft_ms: np.ndarray
    tpot_ms: np.ndarray
    pool: np.ndarray
    failed: np.ndarray
    pools: list[PoolKey]


class Outages:
    """Down intervals per (pool, server index), drawn when first asked for."""

    def __init__(self, fleet: Fleet, horizon: tuple[float, float], repair_h: float, seed: int):
        self.fleet, self.horizon, self.repair_s = fleet, horizon, repair_h * HOUR_S
        self.seed = seed
        self._drawn: dict[tuple[PoolKey, int], tuple[np.ndarray, np.ndarray]] = {}

    def of(self, pool: PoolKey, server: int) -> tuple[np.ndarray, np.ndarray] | None:
        a = self.fleet.availability.get(pool)
        if a is None:
            return None
        key = (pool, server)
        if key not in self._drawn:
            rng = np.random.default_rng([self.seed, 11, *map(ord, pool.label()), server])
            self._drawn[key] = _down_intervals(a, self.repair_s, *self.horizon, rng)
        return self._drawn[key]

    def is_down(self, pool: PoolKey, server: int, t: float) -> bool:
        found = self.of(pool, server)
        if found is None:
            return False
        starts, ends = found
        i = int(np.searchsorted(starts, t, side="right")) - 1
        return i >= 0 and t < ends[i]


def _down_intervals(a: float, repair_s: float, t0: float, t1: float, rng):
    """An alternating renewal process over [t0, t1]: up a share a of the time."""
    mean_up = repair_s * a / (1 - a)
    starts, ends = [], []
    now = t0
    up = rng.random() < a
    while now < t1:
        length = rng.exponential(mean_up if up else repair_s)
        if not up:
            starts.append(now)
            ends.append(now + length)
        now += length
        up = not up
    return np.array(starts), np.array(ends)


def _route(fleet: Fleet, requests: Requests, rng, outages: Outages, pool_ids):
    """Each request's (pool index, server index); -1 where it has nowhere to go."""
    n = len(requests)
    pool = np.full(n, -1, dtype=np.int64)
    server = np.full(n, -1, dtype=np.int64)
    hours = requests.hour()
    for h in range(24):
        for k, name in enumerate(requests.names):
            at = np.flatnonzero((hours == h) & (requests.traffic_class == k))
            slots = fleet.hours[h].get(name, [])
            if not len(at) or not slots:
                continue
            weights = np.array([s.weight for s in slots], dtype=float)
            chosen = rng.choice(len(slots), size=len(at), p=weights / weights.sum())
            sizes = np.array([s.servers for s in slots])[chosen]
            pool[at] = np.array([pool_ids[s.pool] for s in slots])[chosen]
            server[at] = np.floor(rng.random(len(at)) * sizes).astype(np.int64)
            if any(s.pool in fleet.availability for s in slots):
                _around_outages(slots, at, requests.time_s, pool, server, rng, outages, pool_ids)
    return pool, server


SCAN_SERVERS = 256  # a pool up to this size is scanned for its up servers; larger ones sampled
SAMPLE_TRIES = 4096  # at most this many draws: finds an up server unless under ~0.7 % are up


def up_servers(slot: Slot, t: float, outages, rng) -> list[int]:
    """Up servers of a pool at t to pick from: all of them for a small pool; for a large one,
    the first up server of servers drawn at random (a uniform pick among the up servers,
    without scanning every server of the pool): about 30 / availability draws, at most
    SAMPLE_TRIES."""
    if slot.servers <= SCAN_SERVERS:
        return [j for j in range(slot.servers) if not outages.is_down(slot.pool, j, t)]
    a = outages.fleet.availability.get(slot.pool, 1.0)
    tries = int(min(SAMPLE_TRIES, max(64, 30 / max(a, 1e-9))))
    for j in rng.integers(slot.servers, size=tries).tolist():
        if not outages.is_down(slot.pool, j, t):
            return [j]
    return []


def _around_outages(slots: list[Slot], at, time_s, pool, server, rng, outages, pool_ids):
    """Requests whose server is down go to an up server of their pool, else of another pool."""
    by_id = {pool_ids[s.pool]: s for s in slots}
    for i in at:
        slot = by_id[int(pool[i])]
        t = float(time_s[i])
        if not outages.is_down(slot.pool, int(server[i]), t):
            continue
        options = []  # (slot, its up servers)
        for s in slots:
            up = up_servers(s, t, outages, rng)
            if up:
                options.append((s, up))
        mine = [up for s, up in options if s is slot]
        if mine:
            server[i] = mine[0][int(rng.integers(len(mine[0])))]
            continue
        if not options:
            pool[i] = server[i] = -1
            continue
        weights = np.array([s.weight for s, _ in options], dtype=float)
        s, up = options[int(rng.choice(len(options), p=weights / weights.sum()))]
        pool[i] = pool_ids[s.pool]
        server[i] = up[int(rng.integers(len(up)))]


def replay(
    fleet: Fleet,
    models: dict[PoolKey, ServerModel],
    requests: Requests,
    *,
    seed: int = 0,
    repair_hours: float = DEFAULT_REPAIR_HOURS,
    progress=None,
) -> Served:
    """Every request of `requests` through `fleet` (module docstring). `progress(done, total)`
    is told the requests replayed as each server finishes."""
    pools = fleet.pools()
    pool_ids = {p: i for i, p in enumerate(pools)}
    rng = np.random.default_rng([seed, 3])
    horizon = (float(requests.time_s[0]) - HOUR_S, float(requests.time_s[-1]) + HOUR_S)
    outages = Outages(fleet, horizon, repair_hours, seed)
    pool, server = _route(fleet, requests, rng, outages, pool_ids)
    n = len(requests)
    ttft = np.full(n, math.inf)
    tpot = np.full(n, math.inf)
    failed = pool < 0
    # each server's requests together, in arrival order (lexsort is stable): (pool, server)
    # pairs compared as pairs, so no encoding of the two into one number can collide
    order = np.lexsort((server, pool))
    pairs = np.stack([pool[order], server[order]], axis=1)
    starts = np.flatnonzero(np.any(pairs[1:] != pairs[:-1], axis=1)) + 1 if len(order) else []
    first = [0, *list(starts)] if len(order) else []
    bounds = [*first, len(order)]
    busy = [(int(pairs[i, 0]), int(pairs[i, 1])) for i in first]
    for done, (p, s) in enumerate(busy):
        if p < 0:
            continue
        mine = order[bounds[done] : bounds[done + 1]]
        model = models[pools[p]]
        t = requests.time_s[mine]
        out = serve(
            model.server,
            model.eff,
            t,
            requests.prompt[mine],
            requests.output[mine],
            kv_tokens=model.kv_tokens,
            max_num_seqs=model.max_num_seqs,
            token_budget=model.token_budget,
        )
        ttft[mine] = (out.first - t) * 1000
        many = out.output > 1
        per = np.full(len(mine), math.nan)
        per[many] = (out.finish[many] - out.first[many]) / (out.output[many] - 1) * 1000
        tpot[mine] = per
        down = outages.of(pools[p], s)
        if down is not None:
            for start in down[0]:
                lost = (t < start) & (out.finish > start)
                failed[mine[lost]] = True
        if progress is not None:
            progress(int(bounds[done + 1]), n)
    ttft[failed] = math.inf
    tpot[failed] = math.inf
    return Served(ttft, tpot, pool, failed, pools)
