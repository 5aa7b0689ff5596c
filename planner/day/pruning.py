"""What a day's program can leave out, exactly (no optimum changes): pools another beats on
every count (`undominated`), and hours that repeat another (`identical_hours`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fleetplan.planner.day.hourly_pools import DayLimits, DayPool
from fleetplan.planner.scenario.parts import HOURS


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
    free = [
        p.offer.offer_name not in limits.max_gpus and p.offer.offer_name not in limits.min_gpus
        for p in pools
    ]
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
    drop |= _dominated_units(pools, usd, kg, free, set(limits.min_gpus))
    return [i for i in range(len(pools)) if i not in drop]


def _dominated_units(pools, usd, kg, free, owned: set[str]) -> set[int]:
    """Reserved units another stands in for (`undominated`); never an owned offer's (the plan
    keeps every owned GPU)."""
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
    for k in classes:  # a stands in for b where b serves k only if a serves k no worse
        rows = np.array([units[u].get(k, -1) for u in names])
        has = rows >= 0
        cap = np.array([pools[i].capacity if i >= 0 else 0.0 for i in rows])
        ok = np.broadcast_to(~has[None, :], (count, count)).copy()
        if has.any():
            sub = rows[has]
            fine = _no_worse(usd[sub], usd[sub]) & _no_worse(kg[sub], kg[sub])
            fine &= cap[has][:, None] >= cap[has][None, :]
            both = np.ix_(np.flatnonzero(has), np.flatnonzero(has))
            ok[both] = fine
        better &= ok
    np.fill_diagonal(better, False)
    better[:, [b for b, unit in enumerate(names) if unit[0] in owned]] = False
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


def identical_hours(
    pools: Sequence[DayPool], members: Sequence[int], limits: DayLimits
) -> list[list[int]]:
    """The hours in groups the program may plan once: hours with the same demand of every
    class and the same coefficients of every pool. Given the reserved fleet the hours are
    separate programs (each its own rows, its own hourly limits), so a plan of one such hour is
    optimal for each of its group. Not where hours are tied together: a daily budget or carbon
    cap (then every hour is its own), and a volume's window (its hours are each their own)."""
    if limits.daily:
        return [[h] for h in range(HOURS)]
    tied = {h for i in members if pools[i].traffic.is_volume for h in pools[i].traffic.window()}
    chosen = [pools[i] for i in members]
    demand = np.array(
        [
            np.zeros(HOURS) if p.traffic.is_volume else (p.demand or p.traffic.hourly_demand())
            for p in chosen
        ],
        dtype=float,
    ).reshape(len(chosen), 1, HOURS)
    # every member's demand and coefficients in each hour (unknown carbon as infinity), -0.0
    # as 0.0: an hour's key is its column's bytes
    table = np.concatenate([demand, _table(chosen, "usd"), _table(chosen, "kg")], axis=1) + 0.0
    by_hour = np.ascontiguousarray(table.transpose(2, 0, 1))
    groups: dict[object, list[int]] = {}
    for h in range(HOURS):
        key = ("window", h) if h in tied else by_hour[h].tobytes()
        groups.setdefault(key, []).append(h)
    return sorted(groups.values())
