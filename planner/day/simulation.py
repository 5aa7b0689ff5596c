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

import math
from dataclasses import dataclass

import numpy as np
from pydantic import ValidationError
from scipy.stats import t as student_t

from fleetplan.planner.availability.simulation import (
    MAX_CELLS,
    MAX_EVENTS,
    MAX_PER_WINDOW,
    MAX_POOL_SERVERS,
    MAX_WINDOWS,
    SimulationInputError,
    count_text,
    finite,
    server_states,
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
    """The peak's caps (`check_work`) on the day's fleet, before any work is done."""
    for option, value in (
        ("--hours", hours),
        ("--repair-hours", repair_hours),
        ("--window-s", window_s),
    ):
        if not (finite(value) and value > 0):
            raise SimulationInputError(f"{option} must be a finite number above 0, not {value!r}")
    if window_s > 3600:
        raise SimulationInputError(
            f"--window-s {window_s:g} is longer than an hour: a day plan changes every hour "
            "(at most 3600)"
        )
    windows = hours * 3600.0 / window_s
    if not windows <= MAX_WINDOWS:
        raise SimulationInputError(
            f"--hours {hours:g} in windows of --window-s {window_s:g} make {count_text(windows)} "
            f"windows, over the {MAX_WINDOWS:,} the simulation does: shorten --hours or widen "
            "--window-s"
        )
    steps = max(batches * HOURS, int(windows))
    span_h = steps * window_s / 3600.0
    _, sizes = _pools(day)
    failing = [(n, unit.availability) for n, unit in zip(sizes, day.fleet, strict=True)]
    failing = [(n, a) for n, a in failing if a < 1]
    servers = sum(n for n, _ in failing)
    events = sum(2 * n * span_h * (1 - a) / repair_hours for n, a in failing)
    if not events <= MAX_EVENTS:
        raise SimulationInputError(
            f"--hours {hours:g} (windows of --window-s {window_s:g}) with --repair-hours "
            f"{repair_hours:g} make about {count_text(events)} host failures and returns over the "
            f"day's {servers:,} failing servers, over the {MAX_EVENTS:,} the simulation draws: "
            "shorten --hours or --window-s, or lengthen --repair-hours"
        )
    top = max((max(s.rate_by_hour) for unit in day.fleet for s in unit.classes), default=0.0)
    if not top * window_s <= MAX_PER_WINDOW:
        raise SimulationInputError(
            f"a class's rate of {top:g} req/s makes {count_text(top * window_s)} arrivals in a "
            f"window of --window-s {window_s:g}, over the {MAX_PER_WINDOW:,} the simulation "
            "counts: narrow --window-s (or check the plan's day.fleet[].classes[].rate_by_hour)"
        )
    pools = sum(len(unit.classes) for unit in day.fleet)
    cells = steps * (pools + servers)
    if not cells <= MAX_DAY_CELLS:
        raise SimulationInputError(
            f"--hours {hours:g} in windows of --window-s {window_s:g} ({steps:,} windows) over "
            f"the day's {pools:,} pools and {servers:,} failing servers make {cells:,} figures, "
            f"over the {MAX_DAY_CELLS:,} the simulation computes: shorten --hours or widen "
            "--window-s"
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
            arrivals = rng.poisson(rate * window_s, size=len(at))
            if fallback:
                met = arrivals <= np.sum(capacity, axis=0) + 1e-9
            else:
                shares = np.array([p.rates[h] / rate for p in carried])
                split = rng.multinomial(arrivals, shares) if len(carried) > 1 else arrivals[:, None]
                met = np.all(split <= np.stack(capacity, axis=1) + 1e-9, axis=1)
            planned = attained[name].by_hour[h] if name in attained else None
            hourly.append(_hour_result(h, planned, met, batches))
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


def _hour_result(hour: int, planned: float | None, met: np.ndarray, batches: int) -> HourResult:
    mean = float(met.mean())
    count = min(batches, len(met))
    if count < 2:
        return HourResult(hour, planned, mean, mean, mean)
    batch = np.array([b.mean() for b in np.array_split(met.astype(float), count)])
    half = float(student_t.ppf(0.975, count - 1) * batch.std(ddof=1) / math.sqrt(count))
    return HourResult(hour, planned, mean, max(0.0, mean - half), min(1.0, mean + half))


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
        verdict = {True: "agrees", False: "outside the interval", None: ""}[c.agrees()]
        if c.agrees() is False and c.planned is not None and c.planned < w.low:
            verdict = "above the plan (the headroom carries some outages)"
        if w.low == w.high:
            verdict = "no interval: every window alike (simulate longer to see misses)"
        lines.append(
            f"  {c.traffic_class:<16} {f'{w.hour:02d}h':>10} {w.met:>20.5f} "
            f"{f'{w.low:.5f}-{w.high:.5f}':>20} {planned:>10}  {verdict}"
        )
    return "\n".join(lines) + "\n"
