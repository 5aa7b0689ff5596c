"""fleetplan/services/: what the dashboard's pages show and what `fleetplan plan` loads, computed
without Streamlit; and the rule that pages draw while services decide."""

from __future__ import annotations

import ast
import json
import math

import pandas as pd
import pytest

from fleetplan.core.errors import FileTooLargeError, InputError
from fleetplan.planner import Scenario
from fleetplan.planner.scenario.defaults import DEFAULT_PRESET
from fleetplan.planner.scenario.presets import PRESETS
from fleetplan.planner.scenario.scenario import DEFAULT_HEADROOM
from fleetplan.services.benchmark_tables import (
    filter_choices,
    levels_meeting_ttft,
    load_curve_notes,
    measured_energy,
    priced_points,
    select_points,
)
from fleetplan.services.capacity import CapacityQuery, LatencyTargets, capacity_report
from fleetplan.services.load_tables import (
    CANNOT_TELL,
    KEPT_UP,
    benchmark_curves,
    curve_notes,
    operating_points,
    traffic_shapes,
)
from fleetplan.services.paper_check import paper_claims, rated_powers
from fleetplan.services.planning import load_scenario, plan_from_tables, plan_from_warehouse
from fleetplan.services.scenario_defaults import (
    default_price,
    default_scenario,
    describe_region,
    site_from_region,
    with_preset,
    with_region_site,
)
from fleetplan.services.scenario_forms import (
    CAPACITY_RULE_LABELS,
    CAPACITY_RULES,
    objective_choice,
    scenario_settings,
    site_names,
)
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points, gpu_catalog, gpu_prices, regions
from tests.support.paths import ROOT
from tests.support.planner_points import gpu, level, points, scenario

QWEN = "DeepSeek-R1-Distill-Qwen-14B"
SCENARIO = scenario([{"name": "chat", "rate_rps": 4, "ttft_p99_ms": 300}], [gpu("h100-pcie", 2)])


# -- the rule -------------------------------------------------------------------------------------


def _imports(path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


@pytest.mark.parametrize("path", sorted((ROOT / "fleetplan" / "services").glob("*.py")), ids=str)
def test_services_never_import_streamlit(path):
    assert not {n for n in _imports(path) if n.split(".")[0] == "streamlit"}


@pytest.mark.parametrize("path", sorted((ROOT / "app" / "views").glob("*.py")), ids=str)
def test_pages_leave_validation_to_the_services(path):
    """A page that validated a scenario itself could accept what `fleetplan plan` refuses."""
    text = path.read_text(encoding="utf-8")
    assert "model_validate" not in text and "ValidationError" not in text
    assert "pydantic" not in {n.split(".")[0] for n in _imports(path)}


# -- loading a scenario: the CLI's path and the page's upload -------------------------------------


def test_a_scenario_loads_the_same_from_a_file_and_from_an_upload(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCENARIO))
    assert load_scenario(path) == load_scenario(path.read_bytes(), name="s.json")


def test_a_broken_scenario_is_refused_naming_the_file_and_the_field(tmp_path):
    broken = json.dumps({**SCENARIO, "max_utilization": 3}).encode()
    with pytest.raises(InputError) as from_upload:
        load_scenario(broken, name="upload.json")
    path = tmp_path / "upload.json"
    path.write_bytes(broken)
    with pytest.raises(InputError) as from_file:
        load_scenario(path)
    assert from_upload.value.field == from_file.value.field == "max_utilization"
    assert from_upload.value.reason == from_file.value.reason
    assert str(from_upload.value).startswith("upload.json: field 'max_utilization'")


def test_an_upload_over_the_limit_is_refused_before_parsing():
    with pytest.raises(FileTooLargeError, match=r"big\.json: a scenario is small JSON; this file"):
        load_scenario(b"{" * 2_000, name="big.json", max_bytes=1_000)


# -- the Plan page's inputs -----------------------------------------------------------------------


def test_objective_choice_and_settings_go_both_ways():
    base = Scenario.model_validate(SCENARIO)
    for objective, price in (("cost", None), ("carbon", None), ("price", 120.0)):
        settings = scenario_settings(
            objective=objective,
            carbon_price_usd_per_t=price,
            max_utilization=0.7,
            budget_usd_per_hour=0.0,
            carbon_cap_kg_per_hour=2.5,
        )
        changed = Scenario.model_validate({**base.model_dump(), **settings})
        assert objective_choice(changed) == objective
        assert changed.budget_usd_per_hour is None  # 0 on the page means no budget
        assert changed.carbon_cap_kg_per_hour == 2.5 and changed.max_utilization == 0.7


def test_site_names_come_from_the_edited_table_else_the_scenario():
    base = Scenario.model_validate(SCENARIO)
    assert site_names(pd.DataFrame({"name": ["home", None, ""]}), base) == ["home"]
    assert site_names(pd.DataFrame({"name": [None]}), base) == ["dc"]


def test_presets_and_regions_replace_only_what_they_name():
    base = Scenario.model_validate(SCENARIO)
    assert with_preset(base, "batch only").classes == list(PRESETS["batch only"])
    region = {"electricity_usd_per_kwh": math.nan, "grid_gco2_per_kwh": 420.0, "pue_default": 1.4}
    changed = with_region_site(base, "dc", region)
    site = changed.sites[0]
    assert (site.electricity_usd_per_kwh, site.grid_gco2_per_kwh, site.pue) == (0.0, 420.0, 1.0)
    assert changed.model_dump(exclude={"sites"}) == base.model_dump(exclude={"sites"})
    assert site_from_region("x", {"pue_default": pd.NA})["pue"] == 1.0


@pytest.mark.parametrize("unknown", [None, math.nan, pd.NA])
def test_a_region_without_a_year_or_a_price_says_so(unknown):
    region = {
        "grid_gco2_per_kwh": 300.0,
        "grid_basis": "lifecycle",
        "grid_year": unknown,
        "grid_source": "somewhere",
        "electricity_usd_per_kwh": unknown,
    }
    grid, price = describe_region(region)
    assert grid == "Grid 300 gCO2e/kWh (lifecycle, year unknown) — somewhere"
    assert price.startswith("Electricity price: unknown for this region")
    region |= {
        "grid_year": 2024,
        "electricity_usd_per_kwh": 0.1234,
        "electricity_basis": "industrial",
        "electricity_year": 2023,
        "electricity_source": "a utility",
    }
    assert describe_region(region) == (
        "Grid 300 gCO2e/kWh (lifecycle, 2024) — somewhere",
        "$0.1234/kWh (industrial, 2023) — a utility",
    )


def test_default_price_is_the_papers_else_the_lowest():
    prices = pd.DataFrame(
        [
            ("h100-pcie", 2.79, "RunPod", "2026-05", "on-demand"),
            ("h100-pcie", 2.00, "io.net", "2025-05", "paper assumption"),
            ("l40s", 0.99, "A", "2026-01", "on-demand"),
            ("l40s", 0.79, "B", "2026-02", "on-demand"),
        ],
        columns=["gpu_id", "usd_per_gpu_hour", "provider", "price_date", "kind"],
    )
    assert default_price(prices, "h100-pcie") == (2.0, "io.net, 2025-05")
    assert default_price(prices, "l40s") == (0.79, "B, 2026-02")
    assert default_price(prices, "h200") == (None, None)


# -- on the bundled data --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample(sample_warehouse_template, sample_tables):
    with Warehouse.open(sample_warehouse_template, read_only=True) as wh:
        plan = plan_from_warehouse(wh, _default(wh), pareto_points=0)
    tables = ("points", "catalog", "prices", "regions")
    return {name: sample_tables[name] for name in tables} | {"plan": plan}


def _default(wh: Warehouse) -> Scenario:
    return default_scenario(benchmark_points(wh), gpu_catalog(wh), gpu_prices(wh), regions(wh))


def test_the_first_scenario_uses_the_papers_prices_and_the_default_preset(sample):
    first = default_scenario(
        sample["points"], sample["catalog"], sample["prices"], sample["regions"]
    )
    assert first.name.startswith(DEFAULT_PRESET) and first.max_utilization == DEFAULT_HEADROOM
    assert {g.gpu_model: g.hourly_usd for g in first.gpus} == {"h100-pcie": 2.0, "rtx-4090": 0.25}
    assert {g.gpu_model: g.site for g in first.gpus} == {
        "h100-pcie": "datacenter",
        "rtx-4090": "consumer",
    }
    # The page plans from the tables it read; the CLI from the warehouse: the same plan.
    from_tables = plan_from_tables(first, sample["points"], sample["catalog"], pareto_points=0)
    assert from_tables == sample["plan"]


def test_rated_powers_leave_out_unknown_figures_and_feed_the_paper_check(sample):
    catalog = sample["catalog"].copy()
    catalog.loc[catalog["gpu_id"] == "l4", "rated_power_w"] = math.nan
    rated = rated_powers(catalog)
    assert "l4" not in rated and rated["h100-pcie"] == 350.0
    claims = paper_claims(sample["points"], sample["catalog"])
    assert len(claims) == 8 and "350 W" in next(c for c in claims if c.key == "energy").recomputed


def test_benchmark_filters_keep_what_is_chosen(sample):
    frame = sample["points"]
    model = "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"
    choices = filter_choices(frame, model)
    assert choices.configurations == ["1x h100-pcie", "2x rtx-4090", "4x rtx-4090", "8x rtx-4090"]
    everything = select_points(
        frame,
        model=model,
        configurations_shown=choices.configurations,
        datasets=choices.datasets,
        sources=choices.sources,
    )
    assert len(everything) == 25 and set(everything["configuration"]) == set(choices.configurations)
    four = select_points(
        frame,
        model=model,
        configurations_shown=["4x rtx-4090"],
        datasets=choices.datasets,
        sources=choices.sources,
    )
    assert set(four["gpu_count"]) == {4}
    assert select_points(frame, model=model, configurations_shown=[], datasets=[], sources=[]).empty


def test_unnamed_datasets_can_be_chosen():
    frame = points(("h100-pcie", 1, [level(1, 1), level(2, 2)])).assign(
        dataset=[None, "sharegpt"], imported_from="a.json"
    )
    choices = filter_choices(frame, "acme/m")
    assert choices.datasets == ["(unnamed)", "sharegpt"]
    kept = select_points(
        frame,
        model="acme/m",
        configurations_shown=choices.configurations,
        datasets=["(unnamed)"],
        sources=["a.json"],
    )
    assert kept["offered_rate_rps"].tolist() == [1]


def test_levels_are_priced_flagged_and_measured():
    frame = points(
        ("h100-pcie", 1, [level(1, 1, ttft=35), level(4, 4, ttft=30)]),
        ("rtx-4090", 2, [level(1, 1, ttft=40), level(2, 2, ttft=math.nan)]),
    ).assign(duration_s=10.0, gpu_energy_j=[36_000.0, None, 72_000.0, None])
    costs = priced_points(frame, {"h100-pcie": 2.0, "rtx-4090": 0.2})
    assert costs["point"].tolist() == [
        "dominated",
        "Pareto-efficient",
        "Pareto-efficient",
        "dominated",  # its latency was not measured: never efficient
    ]
    assert levels_meeting_ttft(frame, 40) == 3  # the unmeasured level does not count
    measured, unmeasured = measured_energy(frame)
    assert unmeasured == 2 and measured["tokens_per_kwh"].tolist() == [300_000.0, 150_000.0]


def test_load_curve_notes_say_what_the_curve_leaves_out():
    curve = pd.DataFrame({"repeats": [1, 2]})
    curve.attrs["saturation_levels"] = 3
    assert load_curve_notes(curve) == (
        "3 saturation level(s) (all requests at once) are in the table only; "
        "levels measured more than once show the mean of the repeats (of one kind of source: "
        "your runs are never averaged with published ones)."
    )
    assert load_curve_notes(pd.DataFrame({"repeats": [1]})) is None


# -- the latency-against-load pictures -----------------------------------------------------------


def test_capacity_rule_setting_round_trips_and_none_keeps_the_scenarios():
    base = Scenario.model_validate({**SCENARIO, "capacity_rule": "measured"})
    common = {
        "objective": "cost",
        "carbon_price_usd_per_t": None,
        "max_utilization": 0.8,
        "budget_usd_per_hour": None,
        "carbon_cap_kg_per_hour": None,
    }
    kept = Scenario.model_validate({**base.model_dump(), **scenario_settings(**common)})
    assert kept.capacity_rule == "measured"
    chosen = scenario_settings(**common, capacity_rule="model")
    assert Scenario.model_validate({**base.model_dump(), **chosen}).capacity_rule == "model"
    assert CAPACITY_RULES == ("model", "measured") and set(CAPACITY_RULE_LABELS) == {
        "model",
        "measured",
    }


def test_benchmark_curves_judge_each_level_and_mark_the_capacity(sample):
    qwen = sample["points"][sample["points"]["model"].str.endswith(QWEN)]
    shapes = traffic_shapes(qwen)
    assert list(shapes) == ["sharegpt"]
    curves = {
        c.configuration: c for c in benchmark_curves(qwen, targets=LatencyTargets(ttft_p99_ms=46))
    }
    assert list(curves) == ["1x h100-pcie", "2x rtx-4090", "4x rtx-4090", "8x rtx-4090"]
    h100 = curves["1x h100-pcie"]
    statuses = [lv.status for lv in h100.levels]
    # 1 and 4 req/s kept up; 8 too short to prove its rate, 16 and 32 bursts: cannot tell
    assert statuses.count(KEPT_UP) == 4 and statuses.count(CANNOT_TELL) == 6
    report = capacity_report(
        sample["points"],
        CapacityQuery(
            model=QWEN, gpu="h100-pcie", gpu_count=1, targets=LatencyTargets(ttft_p99_ms=46)
        ),
    )
    assert h100.capacity_rps == report.capacity_rps and 1 < h100.capacity_rps < 4
    assert h100.capacity_ttft_p99_ms == pytest.approx(46)
    xs = [x for x, _ in h100.ttft]
    # from the lowest stable level toward the saturation (8.83 req/s: the 32 req/s bursts)
    assert xs[0] == 1 and 8 < xs[-1] < 8.83
    assert h100.saturation_rps == pytest.approx(8.83, abs=0.01)
    assert curves["2x rtx-4090"].capacity_rps == 0 and "1032 ms" in curves["2x rtx-4090"].note
    notes = curve_notes(list(curves.values()))
    assert notes[0].startswith(
        "1x h100-pcie: capacity 2.57 req/s per server (interpolated between kept-up levels at 1"
    )
    assert notes[1].startswith("2x rtx-4090: no capacity (even at its lowest stable level")
    assert notes[1].endswith("saturates at 4.36 req/s")


def test_traffic_shapes_are_told_apart():
    pts = pd.concat(
        [
            points(("h100-pcie", 1, [level(1, 1)]), dataset="sharegpt"),
            points(("h100-pcie", 1, [level(1, 1)])).assign(
                dataset=None, input_len=512, output_len=128
            ),
        ]
    )
    shapes = traffic_shapes(pts)
    assert sorted(shapes) == ["512/128 tokens", "sharegpt"]
    assert all(len(rows) == 1 for rows in shapes.values())


def test_operating_points_put_each_pool_on_its_curve(sample):
    scenario = Scenario.model_validate_json(
        (ROOT / "examples" / "chat-batch-qwen14b.json").read_text()
    )
    scenario = scenario.model_copy(update={"capacity_at": "mid"})  # the curves' own estimates
    result = plan_from_tables(scenario, sample["points"], sample["catalog"], pareto_points=0)
    pools = operating_points(result, scenario, sample["points"])
    # the example plans at the default headroom (0.8): realtime on one H100; batch (12 req/s, no
    # targets) at the rates each configuration proved it kept up with: H100s and 2x 4090s
    assert [p.label for p in pools] == [
        "realtime on 1x h100-pcie", "batch on 1x h100-pcie", "batch on 2x rtx-4090",
    ]  # fmt: skip
    for pool, planned in zip(pools, result.recommended.pools, strict=True):
        assert pool.load_rps == pytest.approx(planned.rate_rps / planned.servers)
        assert pool.predicted_ttft_p99_ms == planned.predicted_ttft_p99_ms
        # the curve's capacity at the class's targets is the pool's before the ceiling
        assert pool.curve.capacity_rps * scenario.max_utilization == pytest.approx(
            planned.capacity_rps_per_server
        )
    assert pools[0].targets == {"ttft": 100, "tpot": 50}
    assert pools[1].targets == {"ttft": None, "tpot": None}


def test_the_data_pages_headers_are_words_with_units():
    from fleetplan.services.headers import header, headers

    assert header("memory_bandwidth_gb_s") == "Memory bandwidth (GB/s)"
    assert header("host_embodied_kgco2e_per_gpu") == "Host embodied (kgCO2e per GPU)"
    assert header("grid_gco2_per_kwh") == "Grid (gCO2e/kWh)" and header("gpu_id") == "GPU ID"
    assert headers(["pue_default", "usd"]) == {"pue_default": "PUE default", "usd": "$"}


def test_pools_on_one_configuration_are_drawn_apart_and_their_labels_not_cut(sample):
    from fleetplan.app.charts import operating_points_figure

    scenario = Scenario.model_validate_json(
        (ROOT / "examples" / "chat-batch-qwen14b.json").read_text()
    )
    result = plan_from_tables(scenario, sample["points"], sample["catalog"], pareto_points=0)
    pools = operating_points(result, scenario, sample["points"])
    assert len({p.configuration for p in pools}) < len(pools)  # two pools, one configuration
    figure = operating_points_figure(pools, "ttft")
    lines = [t for t in figure.data if t.mode == "lines"]
    # one line each, told apart: a configuration's colour, and within it a dash of each pool's
    assert len(lines) == len(pools)
    assert len({(t.line.color, t.line.dash) for t in lines}) == len(pools)
    assert len({t.line.dash for t in lines}) == max(
        sum(p.configuration == q.configuration for q in pools) for p in pools
    )
    stars = [t for t in figure.data if t.mode == "markers+text"]
    assert len({(t.marker.color, t.marker.symbol) for t in stars}) == len(stars)
    assert all(t.cliponaxis is False and "right" in t.textposition for t in stars)


def test_the_cost_carbon_axes_read_sanely_when_the_fleets_nearly_coincide():
    from fleetplan.app.charts import padded_range, pareto_figure
    from fleetplan.planner.peak.results import ParetoPoint

    point = {"hourly_cost_usd": 0.45, "carbon_kg_per_hour": 0.45, "gpus": {"h100-pcie": 1}}
    pareto = [
        ParetoPoint(**point, monthly_cost_usd=330.4563705, carbon_kgco2e_month=330.4563705),
        ParetoPoint(**point, monthly_cost_usd=330.4563708, carbon_kgco2e_month=330.4563701),
    ]
    figure = pareto_figure(pareto, monthly_cost_usd=330.4563706, carbon_kgco2e_month=330.45637)
    low, high = figure.layout.yaxis.range
    assert high - low >= 2 * 0.02 * 330 and low < 330.4563701 < 330.4563705 < high
    assert figure.layout.xaxis.tickformat == ",.6~g"
    assert padded_range([100.0, 900.0]) is None  # a real spread: Plotly's own range
