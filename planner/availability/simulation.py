"""A check of a plan's attainment by simulation: hosts fail and return, requests arrive, each pool
serves what its up servers can; the share of time each class met its targets, with a confidence
interval, beside the attainment the plan computed (planner.availability.probability).

The model (`fleetplan simulate` states it in its output):
- Each server of a pool is up or down, independently: up for an exponential time of mean
  U = D x a / (1 - a), then down for an exponential time of mean D (`repair_hours`), so that it
  is up a share a (the pool's `availability`) of the time; it starts in that stationary state.
- Requests of a class arrive as a Poisson process at the class's rate; in each window of
  `window_s` seconds the count is Poisson(rate x window). Without fallback each request goes to
  a pool with the probability of its planned share (the router's weights); with fallback the
  class's pools take its requests together.
- A pool serves up to (servers up) x one server's capacity at the class's targets (the capacity
  curve's, before the utilisation ceiling: `full_capacity_rps_per_server`) x window. The plan
  sizes to the capacity after the ceiling, so its attainment is the lower of the two where the
  headroom lets fewer servers than needed still carry the load. A class meets its targets in a
  window when every one of its pools (with fallback: the pools together) serves what arrived.
- The share of windows met is reported with a 95 % confidence interval from batch means (the
  run cut into `batches` consecutive batches; a batch is long against an outage, so batches
  are close to independent).
A Poisson count can exceed a pool sized exactly to its rate in a window (no headroom); such a
window counts as missed, which the plan's figure (a rate within capacity) does not see.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t

from fleetplan.planner.peak.results import Plan

DEFAULT_REPAIR_HOURS = 1.0
DEFAULT_WINDOW_S = 60.0
MAX_WINDOWS = 10_000_000  # windows simulated (--hours x 3600 / --window-s)
MAX_EVENTS = 50_000_000  # up/down changes drawn, one at a time, for the failing servers
MAX_CELLS = 1_000_000_000  # per-window figures computed: windows x (pools + failing servers)
MAX_POOL_SERVERS = 1_000_000
MAX_PER_WINDOW = 10**15  # a class's arrivals in one window (numpy's Poisson draws stop near 1e19)


def _class_rates(pools) -> dict[str, float]:
    rates: dict[str, float] = {}
    for p in pools:
        rates[p.traffic_class] = rates.get(p.traffic_class, 0.0) + p.rate_rps
    return rates


def _count(value: float) -> str:
    return f"{value:,.0f}" if value < 1e15 else f"{value:.3g}"


class SimulationInputError(ValueError):
    """An option (named) or the plan's fleet (the field's path named) the simulation refuses."""


def finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def check_plan(plan: Plan) -> None:
    """Refuse a fleet the simulation cannot run on, naming the field: servers an int 0 to
    MAX_POOL_SERVERS, availability in (0, 1], rates and capacities finite and >= 0, a class's
    rate above 0, attainments in [0, 1]."""
    fleet = plan.recommended
    where = "recommended.pools"
    if not fleet.pools:
        raise SimulationInputError("the plan has no fleet to simulate (recommended.pools is empty)")
    for i, p in enumerate(fleet.pools):
        at = f"{where}[{i}]"
        n = p.servers
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_POOL_SERVERS:
            raise SimulationInputError(
                f"{at}.servers is {n!r}: a whole number of servers from 0 to {MAX_POOL_SERVERS:,}"
            )
        a = p.availability
        if a is not None and not (finite(a) and 0 < a <= 1):
            raise SimulationInputError(f"{at}.availability is {a!r}: a share above 0 and at most 1")
        for name in ("rate_rps", "capacity_rps_per_server", "full_capacity_rps_per_server"):
            value = getattr(p, name)
            if name == "full_capacity_rps_per_server" and value is None:
                continue
            if not (finite(value) and value >= 0):
                raise SimulationInputError(
                    f"{at}.{name} is {value!r}: a finite number of requests/s, 0 or more"
                )
    for name, rate in _class_rates(fleet.pools).items():
        if not rate > 0:
            raise SimulationInputError(
                f"{where}: class {name!r} has a rate_rps of {rate:g} over its pools: nothing "
                "to simulate (a class's pools must carry a rate above 0)"
            )
    for i, c in enumerate(fleet.classes or []):
        att = getattr(c, "attainment", None)
        if att is not None and not (finite(att) and 0 <= att <= 1):
            raise SimulationInputError(
                f"recommended.classes[{i}].attainment is {att!r}: a share from 0 to 1"
            )


def check_work(plan: Plan, *, hours: float, repair_hours: float, window_s: float, batches=20):
    """Refuse options (named) that are not finite and above 0, or that ask for more work than
    the caps allow, before any is done."""
    pools = plan.recommended.pools
    failing = [
        (p.servers, p.availability)
        for p in pools
        if p.availability is not None and p.availability < 1
    ]
    check_caps(
        hours=hours,
        repair_hours=repair_hours,
        window_s=window_s,
        least_steps=batches,
        failing=failing,
        pools=len(pools),
        top_rate=max(_class_rates(pools).values()),
        whose="plan's",
        rate_field="recommended.pools[].rate_rps",
    )


def check_caps(
    *,
    hours: float,
    repair_hours: float,
    window_s: float,
    least_steps: int,
    failing: list[tuple[int, float]],
    pools: int,
    top_rate: float,
    whose: str,
    rate_field: str,
    max_cells: int = MAX_CELLS,
    longest_window_s: float | None = None,
) -> None:
    """The options finite and above 0 (named), and the work they ask of a fleet within the caps
    (windows, host failures and returns, arrivals in a window, per-window figures), before any
    is done. `failing`: (servers, availability) of each group of failing servers; `whose`: the
    fleet's owner in the messages ("plan's", "day's"); `longest_window_s`: a cap on --window-s."""
    for option, value in (
        ("--hours", hours),
        ("--repair-hours", repair_hours),
        ("--window-s", window_s),
    ):
        if not (finite(value) and value > 0):
            raise SimulationInputError(f"{option} must be a finite number above 0, not {value!r}")
    if longest_window_s is not None and window_s > longest_window_s:
        raise SimulationInputError(
            f"--window-s {window_s:g} is longer than an hour: a day plan changes every hour "
            f"(at most {longest_window_s:g})"
        )
    windows = hours * 3600.0 / window_s
    if not windows <= MAX_WINDOWS:
        raise SimulationInputError(
            f"--hours {hours:g} in windows of --window-s {window_s:g} make {_count(windows)} "
            f"windows, over the {MAX_WINDOWS:,} the simulation does: shorten --hours or widen "
            "--window-s"
        )
    steps = max(least_steps, int(windows))
    span_h = steps * window_s / 3600.0  # at least `least_steps` windows are simulated
    servers = sum(n for n, _ in failing)
    # each failing server changes state about 2 x span x (1 - a) / repair_hours times
    events = sum(2 * n * span_h * (1 - a) / repair_hours for n, a in failing)
    if not events <= MAX_EVENTS:
        raise SimulationInputError(
            f"--hours {hours:g} (windows of --window-s {window_s:g}) with --repair-hours "
            f"{repair_hours:g} make about {_count(events)} host failures and returns over the "
            f"{whose} {servers:,} failing servers, over the {MAX_EVENTS:,} the simulation draws: "
            "shorten --hours or --window-s, or lengthen --repair-hours"
        )
    if not top_rate * window_s <= MAX_PER_WINDOW:
        raise SimulationInputError(
            f"a class's rate of {top_rate:g} req/s makes {_count(top_rate * window_s)} "
            f"arrivals in a window of --window-s {window_s:g}, over the {MAX_PER_WINDOW:,} the "
            f"simulation counts: narrow --window-s (or check the plan's {rate_field})"
        )
    cells = steps * (pools + servers)
    if not cells <= max_cells:
        raise SimulationInputError(
            f"--hours {hours:g} in windows of --window-s {window_s:g} ({steps:,} windows) over "
            f"the {whose} {pools:,} pools and {servers:,} failing servers make "
            f"{cells:,} figures, over the {max_cells:,} the simulation computes: shorten "
            "--hours or widen --window-s"
        )


def windows_met(
    rng, rate: float, window_s: float, count: int, capacity: list, shares, *, fallback: bool
) -> np.ndarray:
    """Whether each of `count` windows was met: Poisson arrivals at `rate`, split over the pools
    by `shares` (with fallback, taken by the pools together), each pool serving up to its
    `capacity` (requests a window, one array a pool)."""
    arrivals = rng.poisson(rate * window_s, size=count)
    if fallback:
        return arrivals <= np.sum(capacity, axis=0) + 1e-9
    split = rng.multinomial(arrivals, shares) if len(capacity) > 1 else arrivals[:, None]
    return np.all(split <= np.stack(capacity, axis=1) + 1e-9, axis=1)


def interval(met: np.ndarray, batches: int) -> tuple[float, float, float]:
    """The share of windows met and its 95 % interval from the means of `batches` consecutive
    batches (none where fewer than two windows)."""
    mean = float(met.mean())
    count = min(batches, len(met))
    if count < 2:
        return mean, mean, mean
    batch = np.array([b.mean() for b in np.array_split(met.astype(float), count)])
    half = float(student_t.ppf(0.975, count - 1) * batch.std(ddof=1) / math.sqrt(count))
    return mean, max(0.0, mean - half), min(1.0, mean + half)


def verdict(planned: float | None, low: float, high: float) -> str:
    """What the simulated interval says of the plan's figure."""
    if low == high:
        return "no interval: every window alike (simulate longer to see misses)"
    if planned is None:
        return ""
    if low <= planned <= high:
        return "agrees"
    if planned < low:
        return "above the plan (the headroom carries some outages)"
    return "outside the interval"


@dataclass(frozen=True, slots=True)
class ClassResult:
    traffic_class: str
    planned: float | None  # the plan's attainment (None: the plan has none)
    met: float  # share of windows met
    low: float  # 95 % confidence interval
    high: float

    def agrees(self) -> bool | None:
        if self.planned is None:
            return None
        return self.low <= self.planned <= self.high


@dataclass(frozen=True, slots=True)
class SimulationResult:
    hours: float
    seed: int
    repair_hours: float
    window_s: float
    classes: list[ClassResult]


def _up_states(
    servers: int, a: float, steps: int, window_h: float, repair_h: float, rng
) -> np.ndarray:
    """Servers up at each window's start, as an array of counts (alternating renewal)."""
    if servers <= 0:
        return np.zeros(steps, dtype=np.int64)
    if a >= 1.0:
        return np.full(steps, servers, dtype=np.int64)
    return server_states(servers, a, steps, window_h, repair_h, rng).sum(axis=0, dtype=np.int64)


def server_states(
    servers: int, a: float, steps: int, window_h: float, repair_h: float, rng
) -> np.ndarray:
    """Whether each server is up at each window's start (servers x steps; alternating renewal:
    up an exponential time of mean repair_h x a / (1 - a), down one of mean repair_h, starting
    in the stationary state)."""
    up = np.ones((max(servers, 0), steps), dtype=bool)
    if servers <= 0 or a >= 1.0:
        return up
    mean_up = repair_h * a / (1 - a)
    horizon = steps * window_h
    times = np.arange(steps) * window_h
    for k in range(servers):
        state_up = rng.random() < a
        edges = []
        now = 0.0
        current = state_up
        while now < horizon:
            now += rng.exponential(mean_up if current else repair_h)
            edges.append(now)
            current = not current
        changes = np.searchsorted(np.array(edges), times, side="right")
        up[k] = (changes % 2 == 0) == state_up
    return up


def simulate(
    plan: Plan,
    *,
    hours: float = 2000.0,
    seed: int = 0,
    repair_hours: float = DEFAULT_REPAIR_HOURS,
    window_s: float = DEFAULT_WINDOW_S,
    batches: int = 20,
) -> SimulationResult:
    fleet = plan.recommended
    if not fleet.pools:
        raise SimulationInputError("the plan has no fleet to simulate")
    check_plan(plan)
    check_work(plan, hours=hours, repair_hours=repair_hours, window_s=window_s, batches=batches)
    rng = np.random.default_rng(seed)
    window_h = window_s / 3600.0
    steps = max(batches, int(hours / window_h))
    attained = {c.traffic_class: c for c in fleet.classes or []}
    results = []
    by_class: dict[str, list] = {}
    for p in fleet.pools:
        by_class.setdefault(p.traffic_class, []).append(p)
    for name, pools in by_class.items():
        rate = sum(p.rate_rps for p in pools)
        fallback = name in attained and attained[name].fallback
        capacity = [
            _up_states(p.servers, p.availability or 1.0, steps, window_h, repair_hours, rng)
            * (p.full_capacity_rps_per_server or p.capacity_rps_per_server)
            * window_s
            for p in pools
        ]
        shares = np.array([p.rate_rps / rate for p in pools])
        met = windows_met(rng, rate, window_s, steps, capacity, shares, fallback=fallback)
        planned = attained[name].attainment if name in attained else None
        results.append(ClassResult(name, planned, *interval(met, batches)))
    return SimulationResult(hours, seed, repair_hours, window_s, results)


def report(result: SimulationResult) -> str:
    lines = [
        f"Simulated {result.hours:g} h (seed {result.seed}): servers fail independently, up for an "
        f"exponential time, down for an exponential time of mean {result.repair_hours:g} h, "
        f"each up its offer's availability share of the time; Poisson arrivals counted per "
        f"{result.window_s:g} s window; a pool serves its up servers x their capacity at the "
        "targets (before the utilisation ceiling the plan sizes to, so the plan's attainment "
        "may be below this share where the headroom carries a lost host).",
        "",
        f"  {'class':<16} {'met (share of time)':>20} {'95 % interval':>20} {'planned':>10}",
    ]
    for c in result.classes:
        planned = "none" if c.planned is None else f"{c.planned:.5f}"
        lines.append(
            f"  {c.traffic_class:<16} {c.met:>20.5f} {f'{c.low:.5f}-{c.high:.5f}':>20} "
            f"{planned:>10}  {verdict(c.planned, c.low, c.high)}"
        )
    return "\n".join(lines) + "\n"
