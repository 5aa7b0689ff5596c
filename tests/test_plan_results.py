"""Plan results for people, without Streamlit: labels and rounding of the readable tables, the
explanation of a pool that carries little, and the trade-off between the cheapest and the
cleanest plan of the frontier."""

from __future__ import annotations

import json
import re

import pytest

from fleetplan.planner.peak.economics import EnergyBasis
from fleetplan.planner.peak.pools import totals_of
from fleetplan.planner.peak.results import FleetPlan, ParetoPoint, Plan, PlanStatus, PoolPlan
from fleetplan.planner.report.explain import explain, trade_off
from fleetplan.planner.report.table import (
    CSV_DIGITS,
    gpu_label,
    gpus_text,
    pool_table,
    rate_text,
    rounded,
    share_text,
)
from fleetplan.planner.scenario.scenario import Scenario, TrafficClass
from fleetplan.services.plan_tables import (
    capacities_view,
    energy_view,
    fleet_view,
    levels_view,
    pool_notes,
)
from fleetplan.services.planning import plan_from_tables
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points, gpu_catalog
from tests.support.paths import ROOT

EXAMPLE = ROOT / "examples" / "chat-batch-qwen14b.json"


@pytest.fixture(scope="module")
def example_plan(sample_tables) -> tuple[Plan, Scenario]:
    """The example scenario with every GPU's power known, so that carbon and its frontier are."""
    # at full capacity the cheapest fleet mixes GPUs: the frontier has a trade-off to show
    raw = json.loads(EXAMPLE.read_text()) | {"max_utilization": 1.0}
    for offer in raw["gpus"]:
        if offer["gpu_model"] == "h100-pcie":
            offer |= {"idle_w": 60, "rated_w": 350}
    scenario = Scenario.model_validate(raw)
    return plan_from_tables(scenario, sample_tables.points, sample_tables.catalog), scenario


@pytest.mark.parametrize(
    ("rps", "text"),
    [(0.02, "0.02"), (0.021345, "0.0213"), (5.98271, "5.98"), (12.0, "12"), (1234.5, "1,234")],
)
def test_rates_are_written_with_enough_digits_to_be_true(rps, text):
    assert rate_text(rps) == text


def test_shares_below_one_percent_are_not_zero():
    assert share_text(0.002) == "0.2%"
    assert share_text(0.8000000000000002) == "80%"
    assert share_text(0) == "0%"


def test_gpus_are_named_as_people_write_them():
    assert gpu_label("h100-pcie") == "H100 PCIe"
    assert gpu_label("rtx-4090") == "RTX 4090"
    assert gpus_text({"h100-pcie": 3, "rtx-4090": 4}) == "3 x H100 PCIe + 4 x RTX 4090"


def _pool(**changes) -> PoolPlan:
    fields = {
        "traffic_class": "batch",
        "gpu_model": "h100-pcie",
        "gpus_per_server": 1,
        "servers": 2,
        "gpus": 2,
        "rate_rps": 12.8,
        "capacity_rps_per_server": 6.4,
        "utilization": 0.8,
        "hourly_cost_usd": 4.0,
        "monthly_cost_usd": 2920.0,
        "power_kw": 0.5,
        "gpu_energy_kwh_month": 365.0,
        "operational_kgco2e_month": 100.0,
        "embodied_kgco2e_month": 20.0,
        "energy_basis": EnergyBasis.MODELLED,
        "output_tokens_per_s": None,
        "total_tokens_per_s": None,
        "level_offered_rate_rps": 8.0,
        "level_throughput_rps": 8.0,
        "level_ttft_p99_ms": 50.0,
        "level_tpot_p99_ms": 20.0,
        "level_source_file": "run.json",
        "behind": False,
    }
    return PoolPlan(**(fields | changes))


def _plan(pools: list[PoolPlan], objective: str = "carbon") -> Plan:
    fleet = FleetPlan(
        name="recommended",
        status=PlanStatus.OPTIMAL,
        message="optimal",
        pools=pools,
        totals=totals_of(pools),
    )
    return Plan(
        scenario="s",
        model="m",
        objective=objective,
        status=PlanStatus.OPTIMAL,
        message="optimal",
        recommended=fleet,
    )


SCENARIO = Scenario.model_validate(
    {
        "model": "m",
        "classes": [{"name": "batch", "rate_rps": 12.82}],
        "gpus": [
            {"gpu_model": "h100-pcie", "hourly_usd": 2.0, "site": "dc"},
            {"gpu_model": "rtx-4090", "hourly_usd": 0.25, "site": "dc"},
        ],
        "sites": [{"name": "dc", "electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 400}],
        "objective": "carbon",
    }
)


def test_a_server_bought_for_a_tiny_rate_is_explained_with_true_digits():
    """A lowest-carbon plan whose H100s are at the ceiling buys a 4090 server for 0.02 req/s."""
    full = _pool()
    tiny = _pool(
        gpu_model="rtx-4090",
        servers=1,
        gpus=1,
        rate_rps=0.02,
        capacity_rps_per_server=1.6,
        utilization=0.02 / 2.0,
    )
    lines = explain(_plan([full, tiny]), SCENARIO)
    text = " ".join(lines)
    assert "(0.0 req/s, 0%" not in text
    assert "1 x 1x rtx-4090 (0.02 req/s, 1% utilisation" in text  # the fleet table's meaning
    (why,) = [line for line in lines if "carries only" in line]
    # one meaning of utilisation (rate over full capacity), the same as the fleet table's
    assert "0.02 req/s (1% utilisation; 1.6 req/s is what its 1 server may carry" in why
    assert "other pools (1x h100-pcie) are at the utilisation ceiling (80%)" in why
    assert "adds less carbon" in why


def test_a_class_smaller_than_one_server_says_servers_come_whole():
    alone = _pool(servers=1, gpus=1, rate_rps=0.5, utilization=0.5 / 8)
    scenario = SCENARIO.model_copy(update={"classes": [SCENARIO.classes[0].model_copy()]})
    (why,) = [line for line in explain(_plan([alone]), scenario) if "carries only" in line]
    assert "needs less than one server" in why


def test_the_trade_off_between_the_cheapest_and_the_cleanest_plan():
    def point(usd: float, kg: float, gpus: dict[str, int]) -> ParetoPoint:
        return ParetoPoint(
            hourly_cost_usd=usd / 730,
            carbon_kg_per_hour=kg / 730,
            monthly_cost_usd=usd,
            carbon_kgco2e_month=kg,
            gpus=gpus,
        )

    plan = _plan([_pool()]).model_copy(
        update={
            "pareto": [
                point(1000, 500, {"rtx-4090": 8}),
                point(1200, 420, {"h100-pcie": 1, "rtx-4090": 4}),
                point(1500, 300, {"h100-pcie": 2}),
            ]
        }
    )
    between = trade_off(plan)
    assert between is not None
    assert between.extra_usd_month == pytest.approx(500)
    assert between.saved_kgco2e_month == pytest.approx(200)
    assert between.usd_per_tonne == pytest.approx(2500)
    sentence = between.sentence()
    assert "$500 more per month" in sentence and "200 kgCO2e less per month" in sentence
    assert "$2,500 per tonne" in sentence and "2 x H100 PCIe" in sentence
    single = plan.model_copy(update={"pareto": plan.pareto[:1]})
    assert "no trade-off" in trade_off(single).sentence()
    assert trade_off(plan.model_copy(update={"pareto": []})) is None


def test_the_trade_off_on_the_example_reads_the_frontier_ends(example_plan):
    plan, _ = example_plan
    # since issue 19 the all-H100 fleet is both cheapest and cleanest on the bundled data (the
    # RTX 4090s are credited only the rates their levels prove): a frontier of one point
    assert len(plan.pareto) >= 1
    between = trade_off(plan)
    if len(plan.pareto) == 1:
        assert between.cheapest == between.cleanest == plan.pareto[0]
        return
    cheapest = min(p.monthly_cost_usd for p in plan.pareto)
    cleanest = min(plan.pareto, key=lambda p: p.carbon_kgco2e_month)
    assert between.cheapest.monthly_cost_usd == cheapest
    assert between.extra_usd_month == pytest.approx(cleanest.monthly_cost_usd - cheapest)
    saved = between.cheapest.carbon_kgco2e_month - cleanest.carbon_kgco2e_month
    assert between.usd_per_tonne == pytest.approx(between.extra_usd_month / saved * 1000)


def test_readable_tables_have_labels_with_units_and_rounded_numbers(example_plan):
    plan, _ = example_plan
    for view in (fleet_view(plan), energy_view(plan), levels_view(plan), capacities_view(plan)):
        assert not view.empty
        for label in view.columns:
            assert "_" not in label, label  # a label, not an internal field name
        numbers = view.select_dtypes("number").columns
        assert len(numbers) > 0  # a loop over nothing asserts nothing
        for column in numbers:
            for value in view[column].dropna():
                assert len(repr(float(value)).split(".")[-1]) <= 4, (column, value)
    fleet = fleet_view(plan)
    assert {"Rate (req/s)", "Cost ($/month)", "Utilisation (%)"} <= set(fleet)
    assert all(re.fullmatch(r"\d+x [A-Z0-9]+( [A-Za-z0-9]+)?", s) for s in fleet["Server"])
    # one meaning of utilisation: the rate over the full capacity shown beside it (issue 24: the
    # table showed the planned capacity, 12.8 req/s, beside 62.5 %, which is 20 / (2 x 16))
    for row in fleet.to_dict("records"):
        full = row["Servers"] * row["Full capacity/server (req/s)"]
        assert row["Utilisation (%)"] == pytest.approx(100 * row["Rate (req/s)"] / full, abs=0.2)
        ceiling = row["Planned capacity/server (req/s)"] / row["Full capacity/server (req/s)"]
        assert ceiling == pytest.approx(plan_ceiling(plan), rel=1e-3)
    said = levels_view(plan)["The server at that level"]
    assert all(s == "kept up" or s.startswith("fell behind: its queue grew") for s in said)


def plan_ceiling(plan) -> float:
    (ceiling,) = {
        round(p.capacity_rps_per_server / p.full_capacity_rps_per_server, 6)
        for p in plan.recommended.pools
    }
    return ceiling


def test_pool_notes_are_shown_per_server(example_plan):
    plan, _ = example_plan
    pools = [
        p.model_copy(update={"notes": ["idle power unknown: x"]}) for p in plan.recommended.pools
    ]
    fleet = plan.recommended.model_copy(update={"pools": pools})
    noted = plan.model_copy(update={"recommended": fleet})
    notes = pool_notes(noted)
    assert notes and all("idle power unknown" in n for n in notes)
    assert "idle power unknown: x" in energy_view(noted)["Notes"].iloc[0]


def test_the_csv_has_no_float_noise(example_plan):
    """The pool CSV and the fleet CSV (its carbon column and TOTAL row too) round every figure
    to the one definition of its digits, `CSV_DIGITS`."""
    from fleetplan.services.exports import TOTAL, fleet_table

    plan, _ = example_plan
    fleet = fleet_table(plan)
    assert fleet["class"].iloc[-1] == TOTAL and "carbon_kgco2e_month" in fleet.columns
    for table in (rounded(pool_table(plan)), fleet):
        _rounded_to_csv_digits(table)


def _rounded_to_csv_digits(table) -> None:
    for column, digits in CSV_DIGITS.items():
        if column not in table.columns:
            assert column == "carbon_kgco2e_month"  # the fleet CSV's alone
            continue
        for value in table[column].dropna():
            if value != float("inf"):
                assert value == round(value, digits), (column, value)
                assert len(repr(value).split(".")[-1]) <= digits, (column, value)


def test_the_level_behind_each_pool_says_what_traffic_it_was_measured_with(
    sample_warehouse_template,
):
    """Next to each pool: the traffic its capacity rests on (issue 13: a class planned on data
    of another shape must say so next to its pool), the one kind the planner keeps for it."""
    from fleetplan.planner.capacity.rules import points_for_model, traffic_measured

    with Warehouse.open(sample_warehouse_template, read_only=True) as warehouse:
        points, catalog = benchmark_points(warehouse), gpu_catalog(warehouse)
    scenario = Scenario.model_validate_json(EXAMPLE.read_text())
    result = plan_from_tables(scenario, points, catalog, pareto_points=0)
    model_points = points_for_model(points, scenario.model)
    traffic = {c.name: traffic_measured(model_points, c) for c in scenario.classes}
    assert set(traffic.values()) == {"sharegpt"}  # the bundled Qwen-14B data is ShareGPT only
    view = levels_view(result, traffic)
    assert list(view["Traffic measured"]) == ["sharegpt"] * len(result.recommended.pools)
    assert "Traffic measured" not in levels_view(result).columns
    shaped = TrafficClass(name="long", rate_rps=1, input_len=4096, output_len=512)
    assert traffic_measured(model_points, shaped) == "none measured"
