"""The Plan page's day (issue 22) through Streamlit's AppTest: the day example loaded from a link
keeps every field of version 2 and plans as the planner does; a class's hours, a volume class and
an on-demand offer are edited in the day tables (their edit state assigned as a browser sends
it); the schedule table is the plan's; the day survives the link and a reload; and a scenario of
version 1 is untouched by the day section."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from fleetplan.planner import Scenario
from fleetplan.planner.day.schedule import schedule_rows
from fleetplan.services.day_tables import SCHEDULE_LABELS
from fleetplan.services.planning import load_scenario, plan_from_warehouse
from fleetplan.services.scenario_link import scenario_from_link, scenario_to_link
from fleetplan.warehouse.db import Warehouse
from tests.support.pages import open_app, seen
from tests.support.paths import ROOT

EXAMPLE = ROOT / "examples" / "day-chat-nightly.json"

# Every test runs the dashboard in AppTest (tens of seconds each): slow, out of `make test-fast`.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_caches")]


def day_link() -> str:
    link = scenario_to_link(load_scenario(EXAMPLE))
    assert link is not None
    return link


def edit(at: AppTest, table: str, rows: dict[int, dict]) -> AppTest:
    """Cell edits to a day table, as the browser sends them (AppTest cannot type into a grid)."""
    key = f"w_day_{table}_{at.session_state['s_day_gen']}"
    edited = {}  # a browser sends every edit the grid holds, the earlier ones with the new
    if key in at.session_state:
        edited = {int(r): dict(c) for r, c in at.session_state[key]["edited_rows"].items()}
    for row, cells in rows.items():
        edited[row] = edited.get(row, {}) | cells
    at.session_state[key] = {"edited_rows": edited, "added_rows": [], "deleted_rows": []}
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def current(at: AppTest) -> Scenario:
    return at.session_state["s_current"]


def test_the_day_example_from_a_link_keeps_its_day_and_plans_as_the_planner(
    monkeypatch, sample_warehouse_path
):
    at = open_app(monkeypatch, sample_warehouse_path, link=day_link())
    shown, loaded = current(at), load_scenario(EXAMPLE)
    assert at.session_state["s_notes"] == []  # nothing dropped: the page keeps every day field
    assert [c.hourly_rps for c in shown.classes] == [c.hourly_rps for c in loaded.classes]
    assert shown.classes[1].daily_requests == 50_000
    assert shown.classes[1].window_hours == (22, 6)
    assert [g.commitment for g in shown.gpus] == ["reserved", "on_demand"]
    assert at.radio(key=f"w_day_mode_{at.session_state['s_day_gen']}").value == "day"
    result = at.session_state["s_result"]
    assert result.day is not None and result.day.cost_usd is not None
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Cost per day"] == f"${result.day.cost_usd:,.2f}"
    assert metrics["Saving a day vs peak"] == f"${result.day.saving_vs_peak_usd:,.2f}"

    said = " ".join(seen(md.value) for md in at.markdown)
    assert f"this day saves ${result.day.saving_vs_peak_usd:,.2f} a day" in said
    compared = next(d.value for d in at.dataframe if "GPU-hours / day" in d.value.columns)
    assert compared["$ / day"].tolist() == [
        result.day.cost_usd,
        *(c.cost_usd for c in result.day.compared),
    ]

    # the schedule table is the plan's schedule, row for row (the schedule CSV's rows)
    table = next(d.value for d in at.dataframe if "Class demand (req/s)" in d.value.columns)
    expected = pd.DataFrame(schedule_rows(result.day)).rename(columns=SCHEDULE_LABELS)
    assert len(table) == len(expected) > 24
    pd.testing.assert_frame_equal(
        table.reset_index(drop=True), expected, check_dtype=False, check_exact=False
    )

    # the chart: servers per configuration and hour (reserved and on demand apart), the
    # classes' demand and the sites' grid over them
    charts = {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    traces = {t["name"]: t for t in charts["chart_day_servers"]["data"]}
    bars = {n: t["y"] for n, t in traces.items() if t["type"] == "bar"}  # nothing rented
    serving, idle = (bars[f"1x h100-pcie, reserved, {s}"] for s in ("serving", "idle"))
    assert len(bars) == 2
    assert [a + b for a, b in zip(serving, idle, strict=True)] == [7] * 24  # paid all day
    assert idle == [h.idle_reserved_servers for h in result.day.schedule]
    assert serving[12] == 7 and idle[3] == 6  # chat's peak by day; one serves chat at night
    assert list(traces["chat demand"]["y"]) == list(loaded.classes[0].hourly_rps)
    assert traces["dc grid"]["yaxis"] == "y3" and set(traces["dc grid"]["y"]) == {350}

    # and the planner, called as `fleetplan plan` calls it, gives the same day
    st.cache_resource.clear()
    with Warehouse.open(sample_warehouse_path, read_only=True) as warehouse:
        cli = plan_from_warehouse(warehouse, shown)
    assert cli.day == result.day


def test_a_class_given_by_its_hours_is_edited_hour_by_hour(monkeypatch, sample_warehouse_path):
    at = open_app(monkeypatch, sample_warehouse_path, link=day_link())
    before = current(at).classes[0].hourly_rps
    edit(at, "hours", {0: {"3": 7.5}})  # an hour below the peak: the peak stays
    chat = current(at).classes[0]
    assert chat.hourly_rps[3] == 7.5 and chat.hourly_rps[:3] == before[:3]
    assert chat.rate_rps == 20
    assert at.session_state["s_result"].day.schedule[3].demand_rps["chat"] == 7.5
    edit(at, "hours", {0: {"12": 30.0}})  # a new peak: the Rate column follows it
    chat = current(at).classes[0]
    assert chat.rate_rps == 30 and chat.hourly_rps[3] == 7.5 and chat.hourly_rps[12] == 30
    assert at.query_params["s"] == scenario_to_link(current(at))
    # a preset shape instead of the 24 rates: the business day scaled to the peak Rate
    edit(at, "classes", {0: {"demand": "business-day"}})
    chat = current(at).classes[0]
    assert chat.shape == "business-day" and chat.hourly_rps is None and chat.rate_rps == 30


def test_a_volume_class_is_edited_and_planned_inside_its_window(monkeypatch, sample_warehouse_path):
    at = open_app(monkeypatch, sample_warehouse_path, link=day_link())
    edit(at, "classes", {1: {"daily_requests": 120_000.0, "window_from": 1, "window_to": 5}})
    nightly = current(at).classes[1]
    assert nightly.daily_requests == 120_000 and nightly.window_hours == (1, 5)
    day = at.session_state["s_result"].day
    served = [h.demand_rps.get("nightly eval", 0.0) for h in day.schedule]
    assert all(rate == 0 for hour, rate in enumerate(served) if hour not in (1, 2, 3, 4))
    assert sum(served) * 3600 == pytest.approx(120_000, rel=1e-6)
    # a class given by its hours made a volume keeps its requests a day, over the whole day
    edit(at, "classes", {0: {"demand": "volume"}})
    chat = current(at).classes[0]
    assert chat.window() == tuple(range(24))
    assert chat.daily_requests == pytest.approx(
        sum(load_scenario(EXAMPLE).classes[0].hourly_rps) * 3600
    )


def test_an_offer_made_on_demand_and_a_gpu_offered_both_ways(monkeypatch, sample_warehouse_path):
    at = open_app(monkeypatch, sample_warehouse_path, link=day_link())
    edit(at, "offers", {0: {"commitment": "on_demand", "name": "h100 rented"}})
    h100 = current(at).gpus[0]
    assert h100.commitment == "on_demand" and h100.offer_name == "h100 rented"
    day = at.session_state["s_result"].day
    assert day.reserved == []  # nothing reserved is left: every server is rented by the hour
    assert {s.offer for h in day.schedule for s in h.on_demand} <= {"h100 rented", "rtx-4090"}
    charts = {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    bars = [t for t in charts["chart_day_servers"]["data"] if t["type"] == "bar"]
    assert bars and all(t["name"].endswith(", on demand") for t in bars)  # hatched, no idle
    assert all(t["marker"]["pattern"]["shape"] == "/" for t in bars)
    assert "1x h100-pcie (h100 rented), on demand" in {t["name"] for t in bars}
    # the same GPU offered again, on demand at its own price, beside the reserved one
    edit(at, "offers", {0: {"commitment": "reserved", "name": None}})
    gen = at.session_state["s_day_gen"]
    at.selectbox(key=f"w_day_od_gpu_{gen}").set_value("h100-pcie").run()
    price = at.number_input(key=f"w_day_od_price_{gen}_h100-pcie")
    assert price.value == current(at).offer("h100-pcie").usd_per_gpu_hour() > 0  # not $0.00
    price.set_value(0.0)
    at.button(key=f"w_day_od_add_{gen}").click().run()
    assert any("would make every hour rented free" in e.value for e in at.error)
    assert [g.offer_name for g in current(at).gpus].count("h100-pcie on demand") == 0
    at.number_input(key=f"w_day_od_price_{gen}_h100-pcie").set_value(3.1)
    at.button(key=f"w_day_od_add_{gen}").click().run()
    assert not at.exception, at.exception
    offers = {g.offer_name: g for g in current(at).gpus}
    assert offers["h100-pcie on demand"].commitment == "on_demand"
    assert offers["h100-pcie on demand"].hourly_usd == 3.1
    assert offers["h100-pcie"].commitment == "reserved"
    day = at.session_state["s_result"].day
    assert day.cost_usd is not None  # planned with both offers of the H100
    table = next(d for d in at.dataframe if d.key.startswith("w_day_offers")).value
    assert table["name"].tolist()[-1] == "h100-pcie on demand"


def test_the_day_round_trips_through_the_link_and_a_reload(monkeypatch, sample_warehouse_path):
    at = open_app(monkeypatch, sample_warehouse_path, link=day_link())
    edit(at, "hours", {0: {"0": 4.0}})
    edit(at, "site_hours", {0: {str(h): 100.0 for h in range(6)}})
    edit(at, "offers", {1: {"name": "4090 cloud"}})
    scenario = current(at)
    assert scenario.sites[0].hourly_grid_gco2_per_kwh[:7] == [100.0] * 6 + [350.0]
    link = at.query_params["s"]
    assert scenario_from_link(link) == scenario
    cost = {m.label: m.value for m in at.metric}["Cost per day"]

    st.cache_data.clear()
    again = open_app(monkeypatch, sample_warehouse_path, link=link)  # a reload, a sent link
    assert current(again) == scenario
    assert again.session_state["s_notes"] == []
    assert {m.label: m.value for m in again.metric}["Cost per day"] == cost
    hours = next(d for d in again.dataframe if d.key.startswith("w_day_site_hours")).value
    dc = hours[hours["name"] == "dc"].iloc[0]
    assert [dc[str(h)] for h in range(7)] == [100.0] * 6 + [350.0]


def test_a_peak_scenario_is_planned_as_before_and_can_become_a_day(
    monkeypatch, sample_warehouse_path
):
    at = open_app(monkeypatch, sample_warehouse_path)
    peak = current(at)
    assert not peak.is_day and at.session_state["s_result"].day is None
    assert not [d for d in at.dataframe if (d.key or "").startswith("w_day_")]
    assert json.loads(peak.model_dump_json(exclude_defaults=True)).get("version") is None
    assert at.query_params["s"] == scenario_to_link(peak)
    gen = at.session_state["s_day_gen"]
    at.radio(key=f"w_day_mode_{gen}").set_value("day").run()
    assert not at.exception, at.exception
    day = current(at)
    assert day.is_day and day.classes == peak.classes  # a flat day: the same classes
    assert at.session_state["s_result"].day is not None
    at.radio(key=f"w_day_mode_{at.session_state['s_day_gen']}").set_value("peak").run()
    assert not at.exception, at.exception
    assert current(at) == peak and at.query_params["s"] == scenario_to_link(peak)


TWO_MODELS = ROOT / "examples" / "day-two-models-owned.json"


def test_a_two_model_day_draws_every_tab_and_routes_each_class_to_its_model(
    monkeypatch, sample_warehouse_path
):
    """The code assistant planned on its own model (issue 36): the page keeps the class's model,
    the Load curves tab draws each class on its model's curve (an IndexError before), and the
    router download names each class's model and the day's pools alone."""
    import yaml

    from fleetplan.app.plan_results import TABS
    from fleetplan.services.router_config import litellm_config
    from tests.support.pages import open_tab

    link = scenario_to_link(load_scenario(TWO_MODELS))
    at = open_app(monkeypatch, sample_warehouse_path, link=link)
    shown = current(at)
    assert shown.classes[1].model == "DeepSeek-R1-Distill-Qwen-7B"
    result = at.session_state["s_result"]
    assert result.day is not None and result.day.cost_usd is not None
    for tab in TABS:
        open_tab(at, tab)
        assert not at.error, (tab, [e.value for e in at.error])
    charts = [c for c in at.get("plotly_chart")]
    assert charts  # the load curves drew
    routed = yaml.safe_load(litellm_config(result, {"code assistant": "Qwen-7B"}))
    by_class = {d["model_name"]: d["litellm_params"]["model"] for d in routed["model_list"]}
    assert by_class["code assistant"] == "hosted_vllm/Qwen-7B"
    download = next(b for b in at.get("download_button") if "LiteLLM" in b.proto.label)
    assert download is not None


def test_a_day_with_availability_plans_on_the_page_with_its_attainment(
    monkeypatch, sample_warehouse_path
):
    """Availability 0.95 in a day (issue 36, item 4): planned, not refused; the day's
    Attainment tab holds each class's chance hour by hour; the peak/day switch and the
    scenario's download stay (a refusal used to remove its own way out)."""
    raw = json.loads(EXAMPLE.read_text())
    raw["gpus"][1]["availability"] = 0.95
    raw["classes"][0]["attainment"] = 0.99
    at = open_app(
        monkeypatch, sample_warehouse_path, link=scenario_to_link(Scenario.model_validate(raw))
    )
    assert not at.error, [e.value for e in at.error]
    shown = current(at)
    assert shown.gpus[1].availability == 0.95 and shown.classes[0].attainment == 0.99
    day = at.session_state["s_result"].day
    assert day is not None and day.cost_usd is not None and day.attainment
    table = next(d.value for d in at.dataframe if "Lowest at" in d.value.columns)
    assert table["Class"].tolist() == [a.traffic_class for a in day.attainment]
    assert at.radio(key=f"w_day_mode_{at.session_state['s_day_gen']}").value == "day"
    keys = {b.proto.id for b in at.get("download_button")}
    assert keys  # the scenario's download is there


def test_a_scenario_that_cannot_be_planned_keeps_its_way_out(monkeypatch, sample_warehouse_path):
    """A plan refused (a class on a model with no results here) says why and leaves the page's
    way out in place: the peak/day switch, the scenario's download and the upload."""
    raw = json.loads(EXAMPLE.read_text())
    raw["classes"][0]["model"] = "acme/none-such-model"
    at = open_app(
        monkeypatch, sample_warehouse_path, link=scenario_to_link(Scenario.model_validate(raw))
    )
    said = " ".join(seen(e.value) for e in at.error)
    assert "cannot be planned" in said and "acme/none-such-model" in said
    assert at.radio(key=f"w_day_mode_{at.session_state['s_day_gen']}").value == "day"
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels == ["Download scenario (JSON)"]
    assert at.get("file_uploader")


def test_a_row_of_hours_pasted_and_a_range_filled_on_the_page(monkeypatch, sample_warehouse_path):
    """A spreadsheet's row pasted into the chat's hours, then 0-6h filled with 2 req/s: the
    scenario and its plan follow, and the hours table starts again from them."""
    at = open_app(monkeypatch, sample_warehouse_path, link=day_link())
    gen = at.session_state["s_day_gen"]
    pasted = [float(h % 12 + 1) for h in range(24)]
    at.selectbox(key=f"w_day_paste_{gen}_row").set_value("chat")
    at.text_input(key=f"w_day_paste_{gen}_text").set_value("\t".join(f"{v:g}" for v in pasted))
    at.run()  # the button is enabled once there is text, as in a browser
    at.button(key=f"w_day_paste_{gen}_paste").click()
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert current(at).classes[0].hourly_rps == pasted
    assert at.session_state["s_day_gen"] > gen
    gen = at.session_state["s_day_gen"]
    at.number_input(key=f"w_day_paste_{gen}_to").set_value(6)
    at.number_input(key=f"w_day_paste_{gen}_value").set_value(2.0)
    at.button(key=f"w_day_paste_{gen}_fill").click()
    at.run()
    assert not at.exception, at.exception
    assert current(at).classes[0].hourly_rps == [2.0] * 6 + pasted[6:]
    result = at.session_state["s_result"]
    assert result.day.schedule[0].demand_rps["chat"] == pytest.approx(2.0)
