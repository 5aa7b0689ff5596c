"""The Plan page's results through Streamlit's AppTest: readable tables (labels with units, no
internal names), the fleet in words, bars that say their values and their fleets' sizes, the
trade-off sentence, and the pools' notes."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from fleetplan.planner import Scenario
from fleetplan.planner.report.explain import trade_off
from fleetplan.services.planning import plan_from_tables
from fleetplan.warehouse.db import ENV_VAR
from fleetplan.warehouse.queries import benchmark_points, gpu_catalog
from tests.support.pages import open_tab, read_warehouse
from tests.support.paths import MAIN

# Every test runs the dashboard in AppTest (tens of seconds each): slow, out of `make test-fast`.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_caches")]


@pytest.fixture
def page(monkeypatch, sample_warehouse_path) -> AppTest:
    """The Plan page on the sample data, with the H100's power given so that carbon is known."""
    monkeypatch.setenv(ENV_VAR, str(sample_warehouse_path))
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    assert not at.exception, at.exception
    raw = at.session_state["s_current"].model_dump(mode="json")
    for offer in raw["gpus"]:
        if offer["gpu_model"] == "h100-pcie":
            offer |= {"idle_w": 60, "rated_w": 350}
    at.file_uploader(key="w_scenario_file").set_value(
        ("s.json", json.dumps(raw).encode(), "application/json")
    ).run()
    assert not at.exception, at.exception
    return at


def _plan(at: AppTest):
    scenario: Scenario = at.session_state["s_current"]
    points, catalog = read_warehouse(benchmark_points), read_warehouse(gpu_catalog)
    return plan_from_tables(scenario, points, catalog)


def results_tables(page: AppTest) -> list:
    """The results' tables of the open tab (the inputs above them are editors with their own
    column labels)."""
    return [df for df in page.dataframe if "Server" in df.value.columns]


def test_the_tables_speak_in_labels_with_units(page):
    fleet_tab = results_tables(page)
    assert len(fleet_tab) == 3  # fleet, energy, levels
    (capacities_tab,) = results_tables(open_tab(page, "Capacities"))
    for table in [*fleet_tab, capacities_tab]:
        assert len(table.value.columns) > 0  # a loop over nothing asserts nothing
        for label in table.value.columns:
            assert "_" not in label, label
    fleet = next(df.value for df in fleet_tab if "Rate (req/s)" in df.value.columns)
    assert "Utilisation (%)" in fleet.columns
    capacities = capacities_tab.value
    assert set(capacities["Meets the targets"]) <= {"yes", "no"}
    assert (capacities.loc[capacities["Meets the targets"] == "no", "Why not"] != "").all()


def test_the_fleet_is_said_in_words_and_the_trade_off_in_one_sentence(page):
    result = _plan(page)
    (fleet,) = [c.value for c in page.caption if c.value.startswith("Fleet: ")]
    assert " x H100 PCIe" in fleet or " x RTX 4090" in fleet
    gpus = {m.label: m.value for m in page.metric}["GPUs (servers)"]
    totals = result.recommended.totals
    assert gpus == f"{sum(totals.gpus.values())} ({totals.servers})"  # short: never cut off
    between = trade_off(result)
    assert between is not None
    assert between.sentence() not in [md.value for md in page.markdown]  # its tab is closed
    assert page.session_state["s_result"].pareto == []  # ... and the frontier not planned
    open_tab(page, "Cost vs carbon")  # ... and the frontier is planned when it is opened
    assert between.sentence() in [md.value for md in page.markdown]
    assert page.session_state["s_result"] == result  # the plan shown: the command line's


def test_the_comparison_bars_say_their_values_and_their_fleets(page):
    result = _plan(page)
    charts = {
        c.key: json.loads(c.proto.spec) for c in open_tab(page, "Compared").get("plotly_chart")
    }
    for key in ("chart_baselines_cost", "chart_baselines_carbon"):
        (bars,) = charts[key]["data"]
        fleets = [result.recommended, *result.baselines]
        assert len(bars["x"]) == len(fleets)
        for label, text, fleet in zip(bars["x"], bars["text"], fleets, strict=True):
            assert fleet.name.split(" ")[0] in label
            if fleet.totals is not None:
                assert f"({fleet.totals.servers} server" in label
                assert text[0].isdigit() or text.startswith("$"), text
    carbon = charts["chart_baselines_carbon"]["data"][0]["text"]
    assert f"{result.recommended.totals.carbon_kgco2e_month:,.0f} kgCO2e" == carbon[0]
