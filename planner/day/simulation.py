"""A day plan checked by simulation (`fleetplan simulate` on a version 2 plan): the day's fleet,
hour by hour, with hosts that fail and return, against the attainment the day computed in each
hour (`DayAttainment.by_hour`, its spares included).

The model is the peak's (`planner.availability.simulation`), over the day's schedule:
- Each unit (offer, GPU model, GPUs per server) has the most servers it holds in any hour, each
  up and down in turn (alternating renewal, its offer's `availability`) for the whole run; in an
  hour a class is served by its own servers of the unit, the unit's first servers going to its
  classes in name order (a reserved server keeps its history from hour to hour).
- Each simulated window belongs to an hour of the day (the run starts at 00:00 and repeats the
  day); a class's requests arrive as a Poisson process at the rate the day carries for it that
  hour, split among its pools by their planned rates (with fallback, its pools take them
  together), and a pool serves up to its up servers x one server's capacity before the
  utilisation ceiling (`full_capacity_rps_per_server`) x the window.
- For each class, each hour's share of windows met, with a 95 % interval from batch means; the
  class's line is its worst hour, beside the day's attainment (its lowest over the hours).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from pydantic import ValidationError

from fleetplan.planner.availability.simulation import (
    MAX_CELLS,
    MAX_POOL_SERVERS,
    SimulationInputError,
    check_caps,
    finite,
    interval,
    server_states,
    verdict,
    windows_met,
)
from fleetplan.planner.day.results import DayPlan, DayShare
from fleetplan.planner.scenario.parts import HOURS

# the peak's cap on per-window figures, a quarter of it: a failing unit's servers are held one
# figure each (its running count of servers up, 4 bytes), at most about 1 GB
MAX_DAY_CELLS = MAX_CELLS // 4


@dataclass(frozen=True, slots=True)
class HourResult:
    hour: int
    planned: float | None  # the day's attainment that hour (None: none computed)
    met: float
    low: float
    high: float


@dataclass(frozen=True, slots=True)
class DayClassResult:
    traffic_class: str
    planned: float | None  # the day's attainment (its lowest hour's)
    worst: HourResult  # the hour with the lowest share met
    hours: list[HourResult]

    def agrees(self) -> bool | None:
        if self.planned is None:
            return None
        return self.worst.low <= self.planned <= self.worst.high


@dataclass(frozen=True, slots=True)
class DaySimulationResult:
    hours: float
    seed: int
    repair_hours: float
    window_s: float
    timezone: str
    classes: list[DayClassResult]


def read_day(raw: object) -> DayPlan:
    """The plan JSON's `day` as a `DayPlan`, refused naming the field where it is not one, or
    where its fleet cannot be simulated (servers, availability, rates and capacities range-
    checked)."""
    try:
        day = DayPlan.model_validate(raw)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SimulationInputError(f"day.{where}: {first['msg']}") from None
    if not day.fleet:
        raise SimulationInputError("the day plan has no fleet to simulate (day.fleet is empty)")
    for i, unit in enumerate(day.fleet):
        at = f"day.fleet[{i}]"
        if not (finite(unit.availability) and 0 < unit.availability <= 1):
            raise SimulationInputError(
                f"{at}.availability is {unit.availability!r}: a share above 0 and at most 1"
            )
        for j, share in enumerate(unit.classes):
            _check_share(share, f"{at}.classes[{j}]")
    for i, row in enumerate(day.attainment):
        for h, value in enumerate(row.by_hour):
            if value is not None and not (finite(value) and 0 <= value <= 1):
                raise SimulationInputError(
                    f"day.attainment[{i}].by_hour[{h}] is {value!r}: a share from 0 to 1"
                )
    return day


def _check_share(share: DayShare, here: str) -> None:
    for name, values in (
        ("servers_by_hour", share.servers_by_hour),
        ("rate_by_hour", share.rate_by_hour),
    ):
        if len(values) != HOURS:
            raise SimulationInputError(
                f"{here}.{name} has {len(values)} entries: one per hour, {HOURS}"
            )
    for h, n in enumerate(share.servers_by_hour):
        if not 0 <= n <= MAX_POOL_SERVERS:
            raise SimulationInputError(
                f"{here}.servers_by_hour[{h}] is {n!r}: a whole number of servers from "
                f"0 to {MAX_POOL_SERVERS:,}"
            )
    for h, rate in enumerate(share.rate_by_hour):
        if not (finite(rate) and rate >= 0):
            raise SimulationInputError(
                f"{here}.rate_by_hour[{h}] is {rate!r}: a finite rate, 0 or more"
            )
    for name, value in (
        ("capacity_rps_per_server", share.capacity_rps_per_server),
        ("full_capacity_rps_per_server", share.full_capacity_rps_per_server),
    ):
        if value is not None and not (finite(value) and value >= 0):
            raise SimulationInputError(
                f"{here}.{name} is {value!r}: a finite number of requests/s, 0 or more"
            )


@dataclass(frozen=True, slots=True)
class _Pool:
    unit: int
    offset: list[int]  # the unit's first server of this pool, each hour
    servers: list[int]
    rates: list[float]
    capacity: float  # one up server's, per second


def _pools(day: DayPlan) -> tuple[dict[str, list[_Pool]], list[int]]:
    """Each class's pools, and each unit's servers (the most it holds serving in an hour)."""
    by_class: dict[str, list[_Pool]] = {}
    sizes = []
    for u, unit in enumerate(day.fleet):
        offset = [0] * HOURS
        for share in sorted(unit.classes, key=lambda s: s.traffic_class):
            capacity = share.full_capacity_rps_per_server or share.capacity_rps_per_server
            pool = _Pool(u, list(offset), share.servers_by_hour, share.rate_by_hour, capacity)
            by_class.setdefault(share.traffic_class, []).append(pool)
            offset = [o + n for o, n in zip(offset, share.servers_by_hour, strict=True)]
        sizes.append(max(offset))
    return by_class, sizes


def check_day_work(
    day: DayPlan, *, hours: float, repair_hours: float, window_s: float, batches: int = 20
) -> None:
    """The peak's caps (`check_caps`) on the day's fleet, and windows of at most an hour, before
    any work is done."""
    _, sizes = _pools(day)
    failing = [(n, u.availability) for n, u in zip(sizes, day.fleet, strict=True)]
    check_caps(
        hours=hours,
        repair_hours=repair_hours,
        window_s=window_s,
        least_steps=batches * HOURS,
        failing=[(n, a) for n, a in failing if a < 1],
        pools=sum(len(unit.classes) for unit in day.fleet),
        top_rate=max((max(s.rate_by_hour) for u in day.fleet for s in u.classes), default=0.0),
        whose="day's",
        rate_field="day.fleet[].classes[].rate_by_hour",
        max_cells=MAX_DAY_CELLS,
        longest_window_s=3600.0,
    )


def simulate_day(
    day: DayPlan,
    *,
    hours: float = 2000.0,
    seed: int = 0,
    repair_hours: float = 1.0,
    window_s: float = 60.0,
    batches: int = 20,
) -> DaySimulationResult:
    check_day_work(day, hours=hours, repair_hours=repair_hours, window_s=window_s, batches=batches)
    rng = np.random.default_rng(seed)
    window_h = window_s / 3600.0
    steps = max(batches * HOURS, int(hours / window_h))
    hour_of = (np.floor(np.arange(steps) * window_h).astype(np.int64)) % HOURS
    by_class, sizes = _pools(day)
    # per unit: servers up so far, summed over its servers in order (a pool's up count is a
    # difference of two rows)
    # (None: every server always up)
    cumulative: list[np.ndarray | None] = []
    for n, unit in zip(sizes, day.fleet, strict=True):
        if unit.availability >= 1 or n == 0:
            cumulative.append(None)
            continue
        states = server_states(n, unit.availability, steps, window_h, repair_hours, rng)
        ups = np.cumsum(states, axis=0, dtype=np.int32)
        cumulative.append(np.vstack([np.zeros(steps, dtype=np.int32), ups]))
    attained = {a.traffic_class: a for a in day.attainment}
    results = []
    for name in sorted(by_class):
        pools = by_class[name]
        fallback = name in attained and attained[name].fallback
        hourly = []
        for h in range(HOURS):
            carried = [p for p in pools if p.rates[h] > 0 and p.servers[h] > 0]
            rate = sum(p.rates[h] for p in carried)
            if rate <= 0:
                continue
            at = np.nonzero(hour_of == h)[0]
            capacity = [_up(cumulative[p.unit], p, h, at) * p.capacity * window_s for p in carried]
            shares = np.array([p.rates[h] / rate for p in carried])
            met = windows_met(rng, rate, window_s, len(at), capacity, shares, fallback=fallback)
            planned = attained[name].by_hour[h] if name in attained else None
            hourly.append(HourResult(h, planned, *interval(met, batches)))
        if not hourly:
            continue
        worst = min(hourly, key=lambda r: (r.met, r.hour))
        planned = attained[name].attainment if name in attained else None
        results.append(DayClassResult(name, planned, worst, hourly))
    return DaySimulationResult(hours, seed, repair_hours, window_s, day.timezone, results)


def _up(cumulative: np.ndarray | None, pool: _Pool, h: int, at: np.ndarray) -> np.ndarray:
    """The pool's servers up in hour `h`'s windows `at`."""
    if cumulative is None:
        return np.full(len(at), pool.servers[h], dtype=np.int64)
    first = pool.offset[h]
    return cumulative[first + pool.servers[h], at] - cumulative[first, at]


def day_report(result: DaySimulationResult) -> str:
    lines = [
        f"Simulated the day plan over {result.hours:g} h (seed {result.seed}), the day repeated "
        f"from 00:00 ({result.timezone}): each hour's servers as the day schedules them, each "
        f"up its offer's availability share of the time and down for an exponential time of "
        f"mean {result.repair_hours:g} h; Poisson arrivals at each hour's rate counted per "
        f"{result.window_s:g} s window; a pool serves its up servers x their capacity at the "
        "targets (before the utilisation ceiling). Each class's worst hour is shown beside the "
        "day's attainment (its lowest hour).",
        "",
        f"  {'class':<16} {'worst hour':>10} {'met (share of time)':>20} {'95 % interval':>20} "
        f"{'planned':>10}",
    ]
    for c in result.classes:
        w = c.worst
        planned = "none" if c.planned is None else f"{c.planned:.5f}"
        lines.append(
            f"  {c.traffic_class:<16} {f'{w.hour:02d}h':>10} {w.met:>20.5f} "
            f"{f'{w.low:.5f}-{w.high:.5f}':>20} {planned:>10}  {verdict(c.planned, w.low, w.high)}"
        )
    return "\n".join(lines) + "\n"
