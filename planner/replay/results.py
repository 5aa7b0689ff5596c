"""What a replay says: per class, over the trace and hour by hour, the requests, P99 TTFT and
TPOT, the goodput (the share of requests meeting both targets) and whether the P99s meet the
targets; where an hour misses, its busiest minute and the headroom that holds it.

- P99s are numpy's (linear) percentiles of the requests served; a failed request (nowhere to go,
  or lost with its host) counts as an infinite TTFT and TPOT, so a P99 with more than 1 % failed
  is unbounded (JSON null, `failed` says how many). TPOT is over requests of 2 tokens or more.
- Headroom: the servers of the class's pools in that hour multiplied by the smallest factor of
  `FACTORS` (each pool rounded up) under which the hour's busiest ten minutes, replayed alone
  (with the minute before them, not counted), meet the targets: the busiest part of an hour
  holding, its quieter rest holds (an assumption, said so). None where even the largest misses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from fleetplan.planner.replay.fleet import Fleet, PoolKey, Slot, Targets
from fleetplan.planner.replay.run import Served, ServerModel, replay
from fleetplan.planner.replay.trace import Requests

FACTORS = (1.1, 1.25, 1.5, 2.0, 3.0, 4.0)
WINDOW_S = 600.0  # the busiest stretch of an hour a headroom is found for
WARMUP_S = 60.0


@dataclass(frozen=True)
class Figures:
    requests: int
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    goodput: float | None
    meets: bool
    failed: int

    def as_json(self) -> dict:
        return {
            "requests": self.requests,
            "ttft_p99_ms": _rounded(self.ttft_p99_ms, 2),
            "tpot_p99_ms": _rounded(self.tpot_p99_ms, 3),
            "goodput": _rounded(self.goodput, 4),
            "meets": self.meets,
            "failed": self.failed,
        }


@dataclass(frozen=True)
class HourFigures(Figures):
    hour: int = 0
    busiest_minute: dict | None = None  # {"start": "HH:MM", "rate_rps"}
    headroom: dict | None = None  # {"factor", "servers": {pool: n}} or {"factor": None, ...}

    def as_json(self) -> dict:
        out = {"hour": self.hour, **super().as_json()}
        if self.busiest_minute is not None:
            out["busiest_minute"] = self.busiest_minute
        if self.headroom is not None:
            out["headroom"] = self.headroom
        return out


@dataclass(frozen=True)
class ClassReplay:
    name: str
    targets: Targets
    total: Figures
    hours: list[HourFigures] = field(default_factory=list)


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, digits)


def _p99(values: np.ndarray) -> float | None:
    values = values[~np.isnan(values)]
    if not len(values):
        return None
    finite = np.isfinite(values)
    if finite.all():
        return float(np.percentile(values, 99))
    q = float(np.percentile(np.where(finite, values, np.finfo(float).max), 99))
    return math.inf if q >= np.finfo(float).max / 2 else q


def figures(served: Served, mask: np.ndarray, targets: Targets) -> tuple:
    ttft, tpot = served.ttft_ms[mask], served.tpot_ms[mask]
    n = int(mask.sum())
    p_ttft, p_tpot = _p99(ttft), _p99(tpot)
    good = ~served.failed[mask]
    if targets.ttft_p99_ms is not None:
        good &= ttft <= targets.ttft_p99_ms
    if targets.tpot_p99_ms is not None:
        good &= np.isnan(tpot) | (tpot <= targets.tpot_p99_ms)
    goodput = float(good.mean()) if n else None
    meets = targets.holds(p_ttft, p_tpot) if n else True
    return n, p_ttft, p_tpot, goodput, meets, int(served.failed[mask].sum())


def busiest_minute(time_s: np.ndarray) -> dict:
    minutes = np.floor(time_s / 60).astype(np.int64)
    values, counts = np.unique(minutes, return_counts=True)
    top = int(values[np.argmax(counts)])
    of_day = top % (24 * 60)
    return {
        "start": f"{of_day // 60:02d}:{of_day % 60:02d}",
        "rate_rps": round(counts.max() / 60, 3),
    }


def _busiest_window(time_s: np.ndarray) -> float:
    """The start of the busiest WINDOW_S seconds among `time_s` (a request's arrival)."""
    ends = np.searchsorted(time_s, time_s + WINDOW_S, side="left")
    return float(time_s[int(np.argmax(ends - np.arange(len(time_s))))])


def headroom(
    fleet: Fleet,
    models: dict[PoolKey, ServerModel],
    requests: Requests,
    name: str,
    hour_mask: np.ndarray,
    *,
    seed: int,
    repair_hours: float,
) -> dict:
    """The smallest factor of FACTORS holding the hour's busiest ten minutes (module docstring)."""
    k = requests.names.index(name)
    mine = np.flatnonzero(hour_mask & (requests.traffic_class == k))
    start = _busiest_window(requests.time_s[mine])
    hour = int(requests.hour()[mine[0]])
    window = mine[
        (requests.time_s[mine] >= start - WARMUP_S) & (requests.time_s[mine] < start + WINDOW_S)
    ]
    sub = Requests(
        requests.time_s[window],
        requests.prompt[window],
        requests.output[window],
        requests.traffic_class[window],
        requests.names,
        requests.placed,
    )
    counted = sub.time_s >= start
    slots = fleet.hours[hour].get(name, [])
    values = None
    for factor in FACTORS:
        grown = [Slot(s.pool, math.ceil(s.servers * factor - 1e-9), s.weight) for s in slots]
        hours = list(fleet.hours)
        hours[hour] = {**fleet.hours[hour], name: grown}
        served = replay(
            replace(fleet, hours=hours), models, sub, seed=seed, repair_hours=repair_hours
        )
        values = figures(served, counted, fleet.targets[name])
        if values[4]:
            return {"factor": factor, "servers": {s.pool.label(): s.servers for s in grown}}
    ttft, tpot = (_rounded(v, 1) for v in values[1:3]) if values else (None, None)
    return {
        "factor": None,
        "servers": None,
        "words": f"not held even at {FACTORS[-1]:g}x the servers (its busiest ten minutes' P99 "
        f"TTFT {ttft} ms, TPOT {tpot} ms there): the targets are out of reach of these "
        "configurations at the trace's lengths",
    }


def summarise(
    fleet: Fleet,
    models: dict[PoolKey, ServerModel],
    requests: Requests,
    served: Served,
    *,
    seed: int,
    repair_hours: float,
    headrooms: bool = True,
) -> list[ClassReplay]:
    """Per class of the plan, its figures over the trace and per hour it has requests in."""
    hours = requests.hour()
    out = []
    for name in fleet.classes():
        targets = fleet.targets[name]
        if name not in requests.names:
            out.append(ClassReplay(name, targets, Figures(0, None, None, None, True, 0)))
            continue
        of_class = requests.traffic_class == requests.names.index(name)
        total = Figures(*figures(served, of_class, targets))
        rows = []
        for h in np.unique(hours[of_class]).tolist():
            at = of_class & (hours == h)
            values = figures(served, at, targets)
            extra = {}
            if not values[4]:
                extra["busiest_minute"] = busiest_minute(requests.time_s[at])
                if headrooms and fleet.hours[h].get(name):
                    extra["headroom"] = headroom(
                        fleet, models, requests, name, at, seed=seed, repair_hours=repair_hours
                    )
            rows.append(HourFigures(*values, hour=int(h), **extra))
        out.append(ClassReplay(name, targets, total, rows))
    return out
