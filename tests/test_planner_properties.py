"""Properties of the planner: the program's optimum equals an exhaustive search on small
instances, and more demand or tighter targets never make a fleet cheaper."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetplan.planner import GpuFacts, Scenario, plan
from fleetplan.planner.capacity.configuration import Capacity, Configuration, Level
from fleetplan.planner.peak.economics import EnergyBasis, PoolEconomics
from fleetplan.planner.peak.program import Limits, solve
from fleetplan.planner.solve.kernel import SolveStatus
from tests.support.planner_points import gpu, level, points, scenario

GPU_MODELS = ("rtx-4090", "h100-pcie")


def make_pool(traffic, gpu_model, n, cap, usd_server):
    lv = Level("r", cap, None, cap, 10.0, 5.0, 100.0, 100.0, None, "f.json")
    capacity = Capacity(traffic, Configuration(gpu_model, n), cap, lv)
    return PoolEconomics(
        capacity, n, usd_server, 0.0, None, None, None, None, None, EnergyBasis.UNKNOWN
    )


@st.composite
def instances(draw):
    classes = draw(st.integers(2, 3))
    configs = draw(st.integers(3, 4 if classes == 2 else 3))
    config_list = [
        (draw(st.sampled_from(GPU_MODELS)), draw(st.sampled_from((1, 2, 4))))
        for _ in range(configs)
    ]
    prices = {g: draw(st.floats(0.1, 3.0)) for g in GPU_MODELS}
    pools, demand = [], {}
    for k in range(classes):
        caps = [draw(st.one_of(st.just(0.0), st.floats(2.0, 8.0))) for _ in config_list]
        positive = [c for c in caps if c > 0] or [4.0]
        if not any(c > 0 for c in caps):
            caps[0] = 4.0
        demand[f"c{k}"] = draw(st.floats(0.5, 2 * min(positive)))
        for (g, n), cap in zip(config_list, caps, strict=True):
            if cap > 0:
                pools.append(make_pool(f"c{k}", g, n, cap, prices[g] * n))
    max_gpus = {g: draw(st.one_of(st.none(), st.integers(0, 12))) for g in GPU_MODELS}
    return pools, demand, {g: m for g, m in max_gpus.items() if m is not None}


def exhaustive(pools, demand, max_gpus):
    per_class = []
    for k, rate in demand.items():
        mine = [p for p in pools if p.capacity.traffic_class == k]
        ranges = [range(math.ceil(rate / p.capacity.capacity_rps - 1e-9) + 1) for p in mine]
        options = []
        for combo in itertools.product(*ranges):
            if (
                sum(y * p.capacity.capacity_rps for y, p in zip(combo, mine, strict=True))
                >= rate - 1e-9
            ):
                cost = sum(y * p.usd_per_server_hour for y, p in zip(combo, mine, strict=True))
                use = [
                    sum(
                        y * p.gpus_per_server
                        for y, p in zip(combo, mine, strict=True)
                        if p.gpu_model == g
                    )
                    for g in GPU_MODELS
                ]
                options.append((cost, use))
        if not options:
            return None
        per_class.append((np.array([c for c, _ in options]), np.array([u for _, u in options])))
    total_cost = np.zeros(1)
    total_use = np.zeros((1, len(GPU_MODELS)))
    for costs, uses in per_class:
        total_cost = (total_cost[:, None] + costs[None, :]).ravel()
        total_use = (total_use[:, None, :] + uses[None, :, :]).reshape(-1, len(GPU_MODELS))
    ok = np.ones(total_cost.shape, dtype=bool)
    for i, g in enumerate(GPU_MODELS):
        if g in max_gpus:
            ok &= total_use[:, i] <= max_gpus[g]
    return float(total_cost[ok].min()) if ok.any() else None


@pytest.mark.slow  # solves 60 programs and their exhaustive searches: about 10 s
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_program_optimum_equals_exhaustive_search(instance):
    pools, demand, max_gpus = instance
    expected = exhaustive(pools, demand, max_gpus)
    solution = solve(pools, demand, limits=Limits(max_gpus=max_gpus), time_limit_s=30)
    if expected is None:
        assert solution.status is SolveStatus.INFEASIBLE
        return
    assert solution.status is SolveStatus.OPTIMAL
    cost = sum(y * p.usd_per_server_hour for y, p in zip(solution.servers, pools, strict=True))
    assert cost == pytest.approx(expected, rel=1e-7, abs=1e-9)
    for k, rate in demand.items():  # every class fully served, no pool over capacity
        carried = [
            x for x, p in zip(solution.rates, pools, strict=True) if p.capacity.traffic_class == k
        ]
        assert sum(carried) == pytest.approx(rate, rel=1e-6)
    assert len(solution.servers) > 0  # a loop over nothing asserts nothing
    for y, x, p in zip(solution.servers, solution.rates, pools, strict=True):
        assert x <= y * p.capacity.capacity_rps + 1e-6


FACTS = {
    g: GpuFacts(g, rated_w=400, idle_w=40, embodied_kgco2e=150, lifetime_years=5)
    for g in GPU_MODELS
}
PTS = points(
    (
        "h100-pcie",
        1,
        [level(1, 1, ttft=15), level(4, 4, ttft=30), level(8, 6, ttft=90), level(16, 7, ttft=400)],
    ),
    (
        "rtx-4090",
        2,
        [
            level(1, 1, ttft=60),
            level(2, 2, ttft=110),
            level(4, 3, ttft=300),
            level(8, 3.5, ttft=1500),
        ],
    ),
    ("rtx-4090", 4, [level(2, 2, ttft=80), level(4, 4, ttft=150), level(8, 4.4, ttft=700)]),
)
GPUS = [gpu("h100-pcie", 2.0), gpu("rtx-4090", 0.25)]


def cost_of(rates, targets):
    classes = [
        {"name": f"c{i}", "rate_rps": r, "ttft_p99_ms": t}
        for i, (r, t) in enumerate(zip(rates, targets, strict=True))
    ]
    result = plan(
        Scenario.model_validate(scenario(classes, GPUS)),
        PTS,
        FACTS,
        baselines=False,
        pareto_points=0,
    )
    return result.recommended.totals.hourly_cost_usd if result.recommended.totals else math.inf


target_choices = st.sampled_from([None, 50.0, 100.0, 200.0, 500.0, 2000.0])


@pytest.mark.slow  # solves pairs of plans: about 15 s
@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0.1, 30.0), min_size=1, max_size=3),
    st.data(),
)
def test_more_demand_never_costs_less(rates, data):
    targets = [data.draw(target_choices) for _ in rates]
    extra = data.draw(st.floats(0.0, 20.0))
    which = data.draw(st.integers(0, len(rates) - 1))
    more = list(rates)
    more[which] += extra
    assert cost_of(more, targets) >= cost_of(rates, targets) - 1e-9


@pytest.mark.slow  # solves 40 pairs of plans: about 15 s
@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.1, 30.0), min_size=1, max_size=3), st.data())
def test_a_looser_target_never_costs_more(rates, data):
    targets = [data.draw(target_choices) for _ in rates]
    which = data.draw(st.integers(0, len(rates) - 1))
    looser = list(targets)
    looser[which] = (
        None if targets[which] is None else targets[which] * data.draw(st.floats(1.0, 10.0))
    )
    assert cost_of(rates, looser) <= cost_of(rates, targets) + 1e-9


def _exhaustive_frontier(pools, demand):
    """All fleets of a small instance: (cost, least carbon for that fleet), non-dominated."""
    per_class = []
    for k, rate in demand.items():
        mine = [p for p in pools if p.capacity.traffic_class == k]
        options = []
        ranges = [range(math.ceil(rate / p.capacity.capacity_rps - 1e-9) + 1) for p in mine]
        for combo in itertools.product(*ranges):
            room = [
                (p.kg_per_rps_hour, y * p.capacity.capacity_rps)
                for y, p in zip(combo, mine, strict=True)
            ]
            if sum(r for _, r in room) < rate - 1e-9:
                continue
            left, carbon = rate, 0.0
            for per_rps, r in sorted(room):  # cleanest pools carry the load first
                carried = min(r, left)
                carbon += carried * per_rps
                left -= carried
            carbon += sum(y * p.kg_per_server_hour for y, p in zip(combo, mine, strict=True))
            cost = sum(y * p.usd_per_server_hour for y, p in zip(combo, mine, strict=True))
            options.append((cost, carbon))
        per_class.append(options)
    points = [
        (sum(c for c, _ in choice), sum(k for _, k in choice))
        for choice in itertools.product(*per_class)
    ]
    frontier, best = [], math.inf
    for cost, carbon in sorted(points):
        if carbon < best - 1e-9:
            frontier.append((cost, carbon))
            best = carbon
    return frontier


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_frontier_is_exact_on_a_small_instance():
    from fleetplan.planner.capacity.rules import capacities
    from fleetplan.planner.peak.economics import pool_economics

    pts = points(
        ("h100-pcie", 1, [level(4, 4, ttft=30)]),
        ("rtx-4090", 2, [level(3, 3, ttft=300)]),
        ("rtx-4090", 4, [level(5, 5, ttft=250)]),
    )
    sites = [
        {"name": "coal", "electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 900},
        {"name": "hydro", "electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 15},
    ]
    raw = scenario(
        [{"name": "a", "rate_rps": 9}, {"name": "b", "rate_rps": 7}],
        [{**gpu("h100-pcie", 2.0), "site": "hydro"}, {**gpu("rtx-4090", 0.25), "site": "coal"}],
        sites=sites,
    )
    sc = Scenario.model_validate(raw)
    result = plan(sc, pts, FACTS, baselines=False, pareto_points=60)
    pools = [pool_economics(c, sc, FACTS) for c in capacities(pts, sc) if c.capacity_rps > 0]
    expected = _exhaustive_frontier(pools, {"a": 9.0, "b": 7.0})
    got = [(p.hourly_cost_usd, p.carbon_kg_per_hour) for p in result.pareto]
    assert len(got) == len(expected) >= 5
    for (cost, carbon), (e_cost, e_carbon) in zip(got, expected, strict=True):
        assert cost == pytest.approx(e_cost, rel=1e-6)
        assert carbon == pytest.approx(e_carbon, rel=1e-5)
    assert all(p.proven_optimal for p in result.pareto)
