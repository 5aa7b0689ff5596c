"""The planner: known answers worked out by hand, one test per status, limits and objectives."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from fleetplan.core.errors import InputError
from fleetplan.planner import GpuFacts, PlanStatus, Scenario, plan
from fleetplan.planner.capacity.configuration import Configuration
from fleetplan.planner.capacity.rules import capacity_of
from tests.support.planner_points import gpu, level, points, scenario

FACTS = {
    "rtx-4090": GpuFacts("rtx-4090", rated_w=450, idle_w=20, embodied_kgco2e=150, lifetime_years=5),
    "h100-pcie": GpuFacts(
        "h100-pcie", rated_w=350, idle_w=50, embodied_kgco2e=170, lifetime_years=5
    ),
    "l40s": GpuFacts("l40s", rated_w=350, idle_w=30, embodied_kgco2e=100, lifetime_years=5),
}

# A: one H100 per server, 4 req/s at 20 ms TTFT.  B: two 4090s per server, 3 req/s at 300 ms.
POINTS = points(
    ("h100-pcie", 1, [level(1, 1, ttft=15), level(4, 4, ttft=20), level(8, 5, ttft=400)]),
    ("rtx-4090", 2, [level(1, 1, ttft=100), level(3, 3, ttft=300), level(8, 3.2, ttft=2000)]),
)


def run(classes, gpus, pts=POINTS, **extra):
    return plan(Scenario.model_validate(scenario(classes, gpus, **extra)), pts, FACTS)


def pools(result):
    return {
        (p.traffic_class, p.gpu_model): (p.servers, round(p.rate_rps, 6))
        for p in result.recommended.pools
    }


def test_cheapest_fleet_for_one_batch_class():
    # A serves 5 req/s ($2/server), B 3.2 req/s ($0.50/server): 10 req/s cost
    # 2 A = $4; 4 B = $2 (12.8); 3 B + 1 A = $3.50. Optimum: four B servers, $2/h.
    result = run(
        [{"name": "batch", "rate_rps": 10}], [gpu("h100-pcie", 2.0), gpu("rtx-4090", 0.25)]
    )
    assert result.status is PlanStatus.OPTIMAL
    assert pools(result) == {("batch", "rtx-4090"): (4, 10.0)}
    assert result.recommended.totals.hourly_cost_usd == pytest.approx(2.0)
    assert result.recommended.totals.monthly_cost_usd == pytest.approx(2.0 * 730)
    assert result.recommended.totals.gpus == {"rtx-4090": 8}


def test_latency_targets_route_classes_to_the_gpus_that_meet_them():
    result = run(
        [{"name": "chat", "rate_rps": 6, "ttft_p99_ms": 50}, {"name": "batch", "rate_rps": 6}],
        [gpu("h100-pcie", 2.0), gpu("rtx-4090", 0.25)],
    )
    # chat: only A's levels up to 4 req/s pass 50 ms -> capacity 4 -> 2 servers.
    # batch: B at 3.2 req/s -> 2 servers ($1) beats A.
    assert pools(result) == {("chat", "h100-pcie"): (2, 6.0), ("batch", "rtx-4090"): (2, 6.0)}
    assert result.recommended.totals.hourly_cost_usd == pytest.approx(5.0)


def test_capacity_is_the_best_passing_level_times_the_ceiling_without_extrapolation():
    config = Configuration("h100-pcie", 1)
    rows = POINTS[POINTS["gpu_model"] == "h100-pcie"]
    from fleetplan.planner.scenario.scenario import TrafficClass

    cap = capacity_of(rows, TrafficClass(name="c", rate_rps=1, ttft_p99_ms=50), config, 0.8)
    assert cap.capacity_rps == pytest.approx(4 * 0.8) and cap.level.offered_rate_rps == 4
    loose = capacity_of(rows, TrafficClass(name="c", rate_rps=1), config, 1.0)
    assert loose.capacity_rps == 5 and loose.level.behind  # 5 achieved of 8 offered
    none = capacity_of(rows, TrafficClass(name="c", rate_rps=1, ttft_p99_ms=10), config, 1.0)
    assert none.capacity_rps == 0 and "best 15.0 ms" in none.reason
    missing = rows.assign(tpot_p99_ms=None)
    unmeasured = capacity_of(
        missing, TrafficClass(name="c", rate_rps=1, tpot_p99_ms=100), config, 1
    )
    assert unmeasured.capacity_rps == 0 and "not measured" in unmeasured.reason


def test_behind_levels_are_flagged_in_the_plan():
    result = run([{"name": "batch", "rate_rps": 5}], [gpu("h100-pcie", 2.0)])
    assert pools(result) == {("batch", "h100-pcie"): (1, 5.0)}
    assert result.recommended.pools[0].behind
    assert any("fell behind" in note and "8 req/s offered" in note for note in result.notes)


def test_infeasible_targets_name_the_class_the_target_and_the_best_reached():
    result = run(
        [{"name": "chat", "rate_rps": 1, "ttft_p99_ms": 10}, {"name": "batch", "rate_rps": 1}],
        [gpu("h100-pcie", 2.0), gpu("rtx-4090", 0.25)],
    )
    assert result.status is PlanStatus.INFEASIBLE and result.recommended.totals is None
    assert "class 'chat'" in result.message and "P99 TTFT target 10 ms" in result.message
    assert "Best P99 TTFT of any configuration: 15.0 ms (1x h100-pcie)" in result.message
    assert "batch" not in result.message


def test_gpu_limit_that_makes_the_plan_impossible_is_named():
    result = run(
        [{"name": "batch", "rate_rps": 20}],
        [gpu("h100-pcie", 2.0, max_gpus=2), gpu("rtx-4090", 0.25, max_gpus=4)],
    )
    assert result.status is PlanStatus.INFEASIBLE
    assert "max_gpus of rtx-4090 is 4" in result.message


def test_gpu_limit_moves_traffic_to_the_other_gpu():
    result = run(
        [{"name": "batch", "rate_rps": 10}],
        [gpu("h100-pcie", 2.0), gpu("rtx-4090", 0.25, max_gpus=4)],
    )
    # Two B servers (4 GPUs) carry 6.4 req/s; one A carries the remaining 3.6: $3/h.
    assert result.recommended.totals.gpus == {"h100-pcie": 1, "rtx-4090": 4}
    assert result.recommended.totals.hourly_cost_usd == pytest.approx(3.0)


def test_budget_too_small_is_infeasible_with_the_cheapest_cost():
    result = run(
        [{"name": "batch", "rate_rps": 10}], [gpu("rtx-4090", 0.25)], budget_usd_per_hour=1.0
    )
    assert result.status is PlanStatus.INFEASIBLE
    assert "budget_usd_per_hour $1/h" in result.message and "$2.00/h" in result.message


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_time_limit_is_a_status_not_an_exception():
    import numpy as np

    rng = np.random.default_rng(0)
    configs = []
    for i in range(60):
        gpu_model = ("rtx-4090", "h100-pcie", "l40s")[i % 3]
        cap = float(rng.uniform(1, 9))
        configs.append((gpu_model, 1 + i // 3, [level(cap, cap, ttft=float(rng.uniform(10, 500)))]))
    pts = points(*configs)
    classes = [
        {
            "name": f"c{i}",
            "rate_rps": float(rng.uniform(5, 60)),
            "ttft_p99_ms": float(rng.uniform(100, 600)),
        }
        for i in range(40)
    ]
    gpus = [
        gpu("rtx-4090", 0.3, max_gpus=900),
        gpu("h100-pcie", 2.1, max_gpus=700),
        gpu("l40s", 0.9, max_gpus=800),
    ]
    result = plan(
        Scenario.model_validate(scenario(classes, gpus, time_limit_s=0.001)),
        pts,
        FACTS,
        baselines=False,
        pareto_points=0,
    )
    assert result.status is PlanStatus.TIME_LIMIT
    assert "time limit" in result.message


def test_ties_go_to_fewer_gpus():
    pts = points(("rtx-4090", 1, [level(2, 2)]), ("rtx-4090", 4, [level(8, 8)]))
    result = run([{"name": "batch", "rate_rps": 2}], [gpu("rtx-4090", 0.0)], pts=pts)
    assert result.recommended.totals.gpus == {"rtx-4090": 1}


def test_electricity_not_included_adds_energy_cost_by_hand():
    # One 1x H100 server at 4 req/s (modelled): 50 W idle + 4/5 x (350 - 50) W = 290 W.
    # With PUE 1.5 and $0.20/kWh: 0.29 x 1.5 x 0.2 = $0.087/h on top of $2/h.
    sites = [{"name": "dc", "electricity_usd_per_kwh": 0.2, "grid_gco2_per_kwh": 400, "pue": 1.5}]
    result = run(
        [{"name": "batch", "rate_rps": 4}],
        [gpu("h100-pcie", 2.0, electricity_included=False)],
        sites=sites,
    )
    (pool,) = result.recommended.pools
    assert pool.energy_basis.value == "modelled"
    assert pool.power_kw == pytest.approx(0.29)
    assert pool.hourly_cost_usd == pytest.approx(2.0 + 0.29 * 1.5 * 0.2)
    assert pool.operational_kgco2e_month == pytest.approx(0.29 * 1.5 * 0.4 * 730)
    assert pool.embodied_kgco2e_month == pytest.approx(170 / (5 * 8760) * 730)


def test_measured_power_is_preferred_and_labelled():
    pts = points(("h100-pcie", 1, [level(4, 4, power_w=250.0)]))
    result = run([{"name": "batch", "rate_rps": 2}], [gpu("h100-pcie", 2.0)], pts=pts)
    (pool,) = result.recommended.pools
    # 50 W idle + 2/4 x (250 - 50) W = 150 W
    assert pool.energy_basis.value == "measured" and pool.power_kw == pytest.approx(0.150)


def test_embodied_carbon_can_be_switched_off_for_existing_hardware():
    result = run(
        [{"name": "batch", "rate_rps": 3}], [gpu("rtx-4090", 0.25, include_embodied=False)]
    )
    assert result.recommended.totals.embodied_kgco2e_month == 0
    assert result.recommended.totals.operational_kgco2e_month > 0


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_carbon_objective_and_carbon_price_choose_the_cleaner_site():
    sites = [
        {"name": "coal", "electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 900},
        {"name": "hydro", "electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 20},
    ]
    gpus = [gpu("rtx-4090", 0.25, site="coal"), {**gpu("h100-pcie", 2.0), "site": "hydro"}]
    classes = [{"name": "batch", "rate_rps": 8}]
    cheap = run(classes, gpus, sites=sites)
    clean = run(classes, gpus, sites=sites, objective="carbon")
    assert set(cheap.recommended.totals.gpus) == {"rtx-4090"}
    assert set(clean.recommended.totals.gpus) == {"h100-pcie"}
    assert (
        clean.recommended.totals.carbon_kgco2e_month < cheap.recommended.totals.carbon_kgco2e_month
    )
    priced = run(classes, gpus, sites=sites, objective={"carbon_price_usd_per_t": 1e6})
    assert set(priced.recommended.totals.gpus) == {"h100-pcie"}
    free = run(classes, gpus, sites=sites, objective={"carbon_price_usd_per_t": 0})
    assert free.recommended.totals.gpus == cheap.recommended.totals.gpus


def test_carbon_objective_with_unknown_power_asks_for_the_figure():
    facts = {**FACTS, "h100-pcie": GpuFacts("h100-pcie", rated_w=350)}  # idle power unknown
    sc = Scenario.model_validate(
        scenario([{"name": "b", "rate_rps": 1}], [gpu("h100-pcie", 2.0)], objective="carbon")
    )
    with pytest.raises(InputError, match="idle power unknown"):
        plan(sc, POINTS, facts)
    sc_cost = Scenario.model_validate(
        scenario([{"name": "b", "rate_rps": 1}], [gpu("h100-pcie", 2.0)])
    )
    result = plan(sc_cost, POINTS, facts)
    assert result.status is PlanStatus.OPTIMAL
    assert result.recommended.totals.carbon_kgco2e_month is None  # unknown, not zero
    assert result.pareto == [] and "idle power unknown" in result.pareto_message
    overridden = scenario(
        [{"name": "b", "rate_rps": 1}],
        [gpu("h100-pcie", 2.0, idle_w=60, include_embodied=False)],
        objective="carbon",
    )
    assert plan(Scenario.model_validate(overridden), POINTS, facts).status is PlanStatus.OPTIMAL


def test_baselines_are_solved_under_the_same_rules():
    result = run(
        [{"name": "chat", "rate_rps": 4, "ttft_p99_ms": 150}, {"name": "batch", "rate_rps": 6}],
        [gpu("h100-pcie", 2.0), gpu("rtx-4090", 0.25)],
        pts=points(
            ("h100-pcie", 1, [level(4, 4, ttft=20), level(8, 5, ttft=400)]),
            ("rtx-4090", 2, [level(3, 3, ttft=100), level(8, 3.2, ttft=2000)]),
            ("rtx-4090", 4, [level(5, 5, ttft=120), level(9, 6, ttft=900)]),
        ),
    )
    by_name = {b.name.split(" ")[0]: b for b in result.baselines}
    # all-H100: chat 1 server (4 @ 20 ms), batch 6 / 5 -> 2 servers: $6
    assert by_name["all-H100"].totals.hourly_cost_usd == pytest.approx(6.0)
    # all-4090: chat on 2x (3 req/s @ 100 ms) -> 2 servers $1, or 4x (5 @ 120) -> 1 server $1:
    # fewer GPUs wins; batch on 4x at 6 req/s -> 1 server $1: $2 total
    assert by_name["all-RTX-4090"].totals.hourly_cost_usd == pytest.approx(2.0)
    # paper rule: chat (150 ms < 200) on H100 $2; batch on 4x 4090 $1
    assert by_name["paper"].totals.hourly_cost_usd == pytest.approx(3.0)
    assert result.recommended.totals.hourly_cost_usd <= min(
        b.totals.hourly_cost_usd for b in result.baselines
    )


def test_a_baseline_without_its_gpus_is_not_applicable():
    result = run([{"name": "batch", "rate_rps": 3}], [gpu("rtx-4090", 0.25)])
    statuses = {b.name.split(" ")[0]: b.status for b in result.baselines}
    assert statuses["all-H100"] is PlanStatus.NOT_APPLICABLE
    assert statuses["all-RTX-4090"] is PlanStatus.OPTIMAL


def test_pareto_frontier_trades_cost_for_carbon():
    sites = [
        {"name": "coal", "electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 900},
        {"name": "hydro", "electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 20},
    ]
    gpus = [gpu("rtx-4090", 0.25, site="coal"), {**gpu("h100-pcie", 2.0), "site": "hydro"}]
    result = run([{"name": "batch", "rate_rps": 20}], gpus, sites=sites)
    frontier = result.pareto
    assert len(frontier) >= 3
    costs = [p.hourly_cost_usd for p in frontier]
    carbons = [p.carbon_kg_per_hour for p in frontier]
    assert costs == sorted(costs) and carbons == sorted(carbons, reverse=True)
    assert costs[0] == pytest.approx(result.recommended.totals.hourly_cost_usd)
    assert len(set(costs)) == len(costs)


def test_plan_json_round_trip_keeps_inf_levels_readable():
    pts = points(("rtx-4090", 1, [level(math.inf, 3, ttft=900)]))
    result = run([{"name": "batch", "rate_rps": 3}], [gpu("rtx-4090", 0.25)], pts=pts)
    text = result.model_dump_json()
    assert '"level_offered_rate_rps":"inf"' in text
    assert result.recommended.pools[0].behind  # a burst at inf never kept up


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"classes": [{"name": "a", "rate_rps": -1}]}, "classes.0.rate_rps"),
        ({"classes": [{"name": "a", "rate_rps": 1, "colour": "red"}]}, "classes.0.colour"),
        ({"gpus": [gpu("Voodoo 5", 1.0)]}, "gpus.0.gpu_model"),
        ({"gpus": [gpu("H100", 1.0)]}, "gpus.0.gpu_model"),
        ({"gpus": [{**gpu("rtx-4090", 1.0), "site": "mars"}]}, "mars"),
        ({"gpus": [{"gpu_model": "rtx-4090", "site": "dc"}]}, "hourly_usd"),
        ({"gpus": [gpu("rtx-4090", 1.0, purchase_usd=1599)]}, "not both"),
        ({"max_utilization": 0}, "max_utilization"),
        ({"max_utilization": 1.5}, "max_utilization"),
        ({"objective": "speed"}, "objective"),
        ({"classes": [{"name": "a", "rate_rps": 1}, {"name": "a", "rate_rps": 2}]}, "twice"),
    ],
)
def test_bad_scenarios_are_rejected_naming_the_field(change, field):
    base = scenario([{"name": "a", "rate_rps": 1}], [gpu("rtx-4090", 0.25)])
    with pytest.raises(ValidationError) as caught:
        Scenario.model_validate({**base, **change})
    assert field in str(caught.value)


def test_purchase_price_and_lifetime_make_an_hourly_price():
    base = scenario(
        [{"name": "a", "rate_rps": 3}], [gpu("rtx-4090", None, purchase_usd=1752, lifetime_years=1)]
    )
    sc = Scenario.model_validate(base)
    assert sc.gpus[0].usd_per_gpu_hour() == pytest.approx(0.2)
    result = plan(sc, POINTS, FACTS)
    assert result.recommended.totals.hourly_cost_usd == pytest.approx(0.4)


def test_unknown_model_and_ambiguous_traffic_are_input_errors():
    with pytest.raises(InputError, match="several kinds of traffic"):
        mixed = POINTS.copy()
        mixed.loc[mixed.index[0], "dataset"] = "other"
        plan(
            Scenario.model_validate(
                scenario([{"name": "a", "rate_rps": 1}], [gpu("rtx-4090", 0.25)])
            ),
            mixed,
            FACTS,
        )
    # A model without results is bad input naming it and the models there are (issue 15), not
    # an infeasible plan.
    with pytest.raises(InputError, match=r"'acme/m'.*other/model"):
        only_other = POINTS.assign(model="other/model")
        run([{"name": "a", "rate_rps": 1}], [gpu("rtx-4090", 0.25)], pts=only_other)


def test_presets_are_valid_and_interactive_ones_bound_tpot():
    from fleetplan.planner.scenario.presets import PRESETS

    assert "chatbot + batch eval" in PRESETS and "embeddings backfill" in PRESETS
    for classes in PRESETS.values():
        assert len(classes) > 0  # a loop over nothing asserts nothing
        for traffic in classes:
            if traffic.ttft_p99_ms is not None:
                assert traffic.tpot_p99_ms is not None, traffic
        base = scenario([c.model_dump() for c in classes], [gpu("rtx-4090", 0.25)])
        Scenario.model_validate(base)


def test_the_public_scenario_example_validates_as_written():
    text = """{
      "name": "chat+batch on Qwen-14B",
      "model": "DeepSeek-R1-Distill-Qwen-14B",
      "classes": [
        {"name": "realtime", "rate_rps": 6.0, "ttft_p99_ms": 100, "tpot_p99_ms": null},
        {"name": "batch",    "rate_rps": 12.0, "ttft_p99_ms": null}
      ],
      "gpus": [
        {"gpu_model": "h100-pcie", "hourly_usd": 2.00, "electricity_included": true, "site": "dc",
         "max_gpus": null},
        {"gpu_model": "rtx-4090",  "hourly_usd": 0.25, "electricity_included": true,
         "site": "home", "max_gpus": 64}
      ],
      "sites": [
        {"name": "dc",   "electricity_usd_per_kwh": 0.12, "grid_gco2_per_kwh": 350, "pue": 1.2},
        {"name": "home", "electricity_usd_per_kwh": 0.30, "grid_gco2_per_kwh": 380, "pue": 1.0}
      ],
      "objective": "cost",
      "max_utilization": 1.0
    }"""
    parsed = Scenario.model_validate_json(text)
    assert parsed.offer("rtx-4090").max_gpus == 64 and parsed.objective == "cost"
    assert Scenario.model_validate_json(parsed.model_dump_json()) == parsed


def test_incomplete_levels_are_not_used_for_capacity():
    pts = points(("h100-pcie", 1, [level(4, 4, ttft=20), level(8, 6, ttft=30)]))
    pts.loc[pts["offered_rate_rps"] == 8, "complete"] = False
    pts["complete"] = pts["complete"].fillna(True)
    result = run([{"name": "batch", "rate_rps": 8}], [gpu("h100-pcie", 2.0)], pts=pts)
    # the 6 req/s level was cut short: capacity comes from the 4 req/s level, so two servers
    assert result.recommended.pools[0].servers == 2
    assert result.recommended.pools[0].capacity_rps_per_server == 4
