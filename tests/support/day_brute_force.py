"""Small day instances (`SMALL`) and an independent brute force over them: the day program's
answers are checked against these (tests/test_planner_day.py, test_day_decomposition.py,
test_day_spread.py)."""

from __future__ import annotations

import itertools
import math

import pytest

from fleetplan.planner.capacity.rules import capacities
from fleetplan.planner.day.hourly_pools import DayLimits, day_pools
from fleetplan.planner.peak.economics import GpuFacts, pool_economics
from fleetplan.planner.peak.fleets import objective_weights
from fleetplan.planner.scenario.parts import HOURS
from fleetplan.planner.scenario.scenario import Scenario
from tests.support.planner_points import gpu, level, points, scenario

FACTS = {
    g: GpuFacts(g, rated_w=400, idle_w=50, embodied_kgco2e=150, lifetime_years=5)
    for g in ("h100-pcie", "rtx-4090")
}
# An H100 carries 4 req/s within 100 ms TTFT; an RTX 4090 1 req/s at 300 ms (not for chat).
POINTS = points(
    ("h100-pcie", 1, [level(4, 4, ttft=50, power_w=300.0)]),
    ("rtx-4090", 1, [level(1, 1, ttft=300, power_w=250.0)]),
)
SITES = [
    {"name": "dc", "electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 300, "pue": 1.0},
    {
        "name": "home",
        "electricity_usd_per_kwh": 0.1,
        "grid_gco2_per_kwh": 400,
        "hourly_grid_gco2_per_kwh": [100] * 6 + [400] * 18,
    },
]


def hours(values: dict[int, float]) -> list[float]:
    return [values.get(h, 0.0) for h in range(HOURS)]


CHAT = {"name": "chat", "ttft_p99_ms": 100, "hourly_rps": hours({9: 6, 10: 7, 11: 3, 20: 2})}
BATCH = {"name": "batch", "hourly_rps": hours({10: 2, 11: 3})}
NIGHTLY = {"name": "nightly", "daily_requests": 3.5 * 3600, "window_hours": [22, 1]}
H100 = gpu("h100-pcie", 2.0, commitment="reserved")
R4090 = gpu("rtx-4090", 0.3, site="home", commitment="on_demand")
H100_HOURLY = gpu("h100-pcie", 3.0, commitment="on_demand", name="h100 hourly")
BUDGET, CAP = 22.0, 0.8  # between the cheapest day and the cleanest one

SMALL = {
    "chat by day, a nightly volume": scenario([CHAT, NIGHTLY], [H100, R4090], sites=SITES),
    "two interactive classes share reserved servers": scenario(
        [CHAT, BATCH], [H100, R4090], sites=SITES
    ),
    "carbon objective with a daily budget": scenario(
        [CHAT, BATCH],
        [H100, H100_HOURLY, R4090],
        sites=SITES,
        objective="carbon",
        budget_usd_per_day=BUDGET,
    ),
    "cost objective with a daily carbon cap": scenario(
        [CHAT, BATCH], [H100, H100_HOURLY, R4090], sites=SITES, carbon_cap_kg_per_day=CAP
    ),
    "an on-demand offer limited each hour": scenario(
        [CHAT, BATCH, NIGHTLY],
        [H100, {**R4090, "max_gpus": 1}],
        sites=SITES,
    ),
    "one GPU offered twice": scenario(
        [CHAT, NIGHTLY],
        [
            {**H100, "name": "h100 reserved"},
            gpu("h100-pcie", 3.0, commitment="on_demand", name="h100 on demand"),
        ],
        sites=SITES,
    ),
}


def candidates(raw: dict):
    day = Scenario.model_validate({**raw, "capacity_rule": "measured"})
    caps = [c for c in capacities(POINTS, day) if c.capacity_rps > 0]
    econ = [
        pool_economics(c, day, FACTS, o)
        for c in caps
        for o in day.offers_of(c.configuration.gpu_model)
    ]
    return day, day_pools(econ, day)


def brute_force(day: Scenario, pools) -> float:
    """The least objective by enumeration: reserved servers per unit, then per hour every way to
    rent and assign servers, combined hour by hour keeping only undominated partial days."""
    weights = objective_weights(day)
    limits = DayLimits.of(day)
    units = sorted({p.unit for p in pools if p.reserved})
    best = math.inf
    for reserved in itertools.product(range(5), repeat=len(units)):
        have = dict(zip(units, reserved, strict=True))
        if any(
            o in limits.max_gpus and sum(n * u[2] for u, n in have.items() if u[0] == o) > m
            for o, m in limits.max_gpus.items()
        ):
            continue
        best = min(best, best_day(day, pools, have, weights, limits))
    return best


def idle_cost(pools, unit, hour, kind):
    values = {round(p.usd_server[hour] if kind == "usd" else p.kg_server[hour], 12)
              for p in pools if p.unit == unit}  # fmt: skip
    assert len(values) == 1, "the brute force assumes one idle figure per configuration"
    return values.pop()


def best_day(day, pools, have, weights, limits) -> float:
    need = {c.name: c.daily_requests for c in day.classes if c.is_volume}
    states = [(0.0, 0.0, 0.0, tuple(0.0 for _ in need))]  # objective, $, kg, volume served
    for hour in range(HOURS):
        options = hour_options(day, pools, have, hour, weights, limits)
        if not options:
            return math.inf
        merged = []
        for (obj, usd, kg, vol), (o2, u2, k2, v2) in itertools.product(states, options):
            served = tuple(min(a + b, n) for a, b, n in zip(vol, v2, need.values(), strict=True))
            merged.append((obj + o2, usd + u2, kg + k2, served))
        states = undominated_states(merged, limits)
    done = [
        s for s in states if all(v >= n - 1e-6 for v, n in zip(s[3], need.values(), strict=True))
    ]
    return min((s[0] for s in done), default=math.inf)


def undominated_states(states, limits):
    kept = []
    for s in sorted(set(states)):
        if limits.budget_usd_per_day is not None and s[1] > limits.budget_usd_per_day + 1e-9:
            continue
        if limits.carbon_cap_kg_per_day is not None and s[2] > limits.carbon_cap_kg_per_day + 1e-9:
            continue
        if not any(
            k[0] <= s[0] and k[1] <= s[1] and k[2] <= s[2]
            and all(a >= b for a, b in zip(k[3], s[3], strict=True))
            for k in kept
        ):  # fmt: skip
            kept.append(s)
    return kept


def hour_options(day, pools, have, hour, weights, limits):
    """Every way to serve `hour`: (objective, $, kg, requests of each volume class served)."""
    classes = {c.name: c for c in day.classes}
    active = [
        p
        for p in pools
        if (p.traffic.is_volume and hour in p.traffic.window())
        or (not p.traffic.is_volume and p.traffic.hourly_demand()[hour] > 0)
    ]
    bounds = []
    for p in active:
        most = (
            p.traffic.daily_requests / 3600
            if p.traffic.is_volume
            else p.traffic.hourly_demand()[hour]
        )
        bounds.append(range(math.ceil(most / p.capacity - 1e-9) + 1))
    idle_usd = sum(n * idle_cost(pools, u, hour, "usd") for u, n in have.items())
    idle_kg = sum(n * idle_cost(pools, u, hour, "kg") for u, n in have.items())
    options = []
    for servers in itertools.product(*bounds):
        used: dict = {}
        for p, s in zip(active, servers, strict=True):
            key = p.unit if p.reserved else (p.offer.offer_name, "hour")
            used[key] = used.get(key, 0) + s * (1 if p.reserved else p.econ.gpus_per_server)
        if any(used.get(u, 0) > n for u, n in have.items()):
            continue
        if any(
            used.get((o, "hour"), 0) > m for o, m in limits.max_gpus.items()
        ):  # on-demand GPUs this hour
            continue
        usd, kg = idle_usd, idle_kg
        ok = True
        volume = {c: 0.0 for c in classes if classes[c].is_volume}
        for name, traffic in classes.items():
            mine = [(p, s) for p, s in zip(active, servers, strict=True) if p.traffic.name == name]
            for p, s in mine:
                if not p.reserved:
                    usd += s * p.usd_server[hour]
                    kg += s * p.kg_server[hour]
            if traffic.is_volume:
                volume[name] = sum(p.capacity * s for p, s in mine) * 3600
                continue
            left = traffic.hourly_demand()[hour]
            for p, s in sorted(mine, key=lambda ps: ps[0].kg_rps[hour]):  # cleanest rate first
                carried = min(left, p.capacity * s)
                kg += carried * p.kg_rps[hour]
                left -= carried
            ok = ok and left <= 1e-9
        if not ok:
            continue
        if limits.budget_usd_per_hour is not None and usd > limits.budget_usd_per_hour + 1e-9:
            continue
        options.append((weights.usd * usd + weights.kg * kg, usd, kg, tuple(volume.values())))
    return undominated_states(options, DayLimits({}))


def objective(day, pools, solution) -> float:
    """The objective of the program's answer, evaluated here from its servers and rates."""
    weights = objective_weights(day)
    total = 0.0
    for hour in range(HOURS):
        usd = kg = 0.0
        for u, n in solution.reserved.items():
            usd += n * idle_cost(pools, u, hour, "usd")
            kg += n * idle_cost(pools, u, hour, "kg")
        for (i, h), s in solution.servers.items():
            if h != hour:
                continue
            p = pools[i]
            if not p.reserved:
                usd += s * p.usd_server[h]
                kg += s * p.kg_server[h]
            kg += solution.rates[(i, h)] * p.kg_rps[h]
        total += weights.usd * usd + weights.kg * kg
    return total


def check_served(day, pools, solution) -> None:
    """Every hour's capacity covers that hour's demand; every volume inside its window; no more
    reserved servers busy than reserved, no pool above its capacity."""
    for traffic in day.classes:
        served = {h: 0.0 for h in range(HOURS)}
        for (i, h), rate in solution.rates.items():
            p = pools[i]
            if p.traffic.name == traffic.name:
                assert rate <= p.capacity * solution.servers[(i, h)] + 1e-6
                served[h] += rate
        if traffic.is_volume:
            inside = set(traffic.window())
            assert all(served[h] == 0 for h in range(HOURS) if h not in inside)
            assert sum(served.values()) * 3600 == pytest.approx(traffic.daily_requests)
        else:
            demand = traffic.hourly_demand()
            assert all(served[h] == pytest.approx(demand[h]) for h in range(HOURS))
    for hour in range(HOURS):
        for unit, count in solution.reserved.items():
            busy = sum(
                s for (i, h), s in solution.servers.items() if h == hour and pools[i].unit == unit
            )
            assert busy <= count
