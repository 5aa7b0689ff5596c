"""The Plan page's inputs through Streamlit's AppTest: they survive a visit to another page, they
live in the page's link (a reload or a sent link restores the plan; a broken link gives the
default plan and says why), a region preset stays chosen, a loaded file's traffic shapes and
purchases are kept, and the page plans every scenario file as `fleetplan plan` does."""

from __future__ import annotations

import gc
import json

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from benchmarks.inputs.vllm_results import make_result
from fleetplan.app.plan_state import widget_key
from fleetplan.planner import Scenario
from fleetplan.services.scenario_link import scenario_to_link
from tests.support.pages import open_app, open_tab, seen
from tests.support.paths import ROOT

PLAN, BENCHMARKS = "views/plan.py", "views/benchmarks.py"


# Every test runs the dashboard in AppTest (tens of seconds each): slow, out of `make test-fast`.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_caches")]


def key(at: AppTest, name: str) -> str:
    return widget_key(name, at.session_state)


def metric(at: AppTest, label: str) -> str:
    return {m.label: m.value for m in at.metric}[label]


def test_inputs_survive_a_visit_to_another_page(monkeypatch, sample_warehouse_path):
    at = open_app(monkeypatch, sample_warehouse_path)
    at.slider(key=key(at, "w_headroom")).set_value(0.6).run()
    at.radio(key=key(at, "w_capacity_rule")).set_value("measured").run()
    changed: Scenario = at.session_state["s_current"]
    cost = metric(at, "Cost per month")
    assert changed.max_utilization == 0.6 and changed.capacity_rule == "measured"
    at.switch_page(BENCHMARKS).run()
    assert not at.exception, at.exception
    at.switch_page(PLAN).run()
    assert not at.exception, at.exception
    assert at.session_state["s_current"] == changed
    assert at.slider(key=key(at, "w_headroom")).value == 0.6
    assert at.radio(key=key(at, "w_capacity_rule")).value == "measured"
    assert metric(at, "Cost per month") == cost


def test_the_link_holds_the_plan_and_restores_it(monkeypatch, sample_warehouse_path):
    at = open_app(monkeypatch, sample_warehouse_path)
    at.slider(key=key(at, "w_headroom")).set_value(0.55).run()
    scenario: Scenario = at.session_state["s_current"]
    link = at.query_params["s"]
    assert link == scenario_to_link(scenario)
    cost = metric(at, "Cost per month")

    st.cache_data.clear()
    again = open_app(monkeypatch, sample_warehouse_path, link=link)  # a reload, a sent link
    assert again.session_state["s_current"] == scenario
    assert again.slider(key=key(again, "w_headroom")).value == 0.55
    assert metric(again, "Cost per month") == cost
    assert again.session_state["s_notes"] == []  # nothing to say about its own link


@pytest.mark.parametrize("link", ["1.garbage", "not-a-plan", "1." + "A" * 9000])
def test_a_broken_link_gives_the_default_plan_and_says_why(
    monkeypatch, sample_warehouse_path, link
):
    default = open_app(monkeypatch, sample_warehouse_path).session_state["s_current"]
    at = open_app(monkeypatch, sample_warehouse_path, link=link)
    assert at.session_state["s_current"] == default
    assert any("link holds no plan that can be read" in i.value for i in at.info)
    assert metric(at, "Cost per month").startswith("$")
    assert at.query_params["s"] == scenario_to_link(default)  # the link is mended


def test_a_region_preset_stays_chosen_after_it_is_applied(monkeypatch, sample_warehouse_path):
    at = open_app(monkeypatch, sample_warehouse_path)
    at.selectbox(key=key(at, "w_region_site")).set_value("datacenter")
    at.selectbox(key=key(at, "w_region")).set_value("eu-paper").run()
    at.button(key=key(at, "w_apply_region")).click().run()
    assert not at.exception, at.exception
    assert at.selectbox(key=key(at, "w_region")).value == "eu-paper"
    assert any(c.value.startswith("Grid 242 gCO2e/kWh") for c in at.caption)
    assert at.query_params["region"] == "eu-paper"


def upload(at: AppTest, scenario: dict, name: str) -> AppTest:
    at.file_uploader(key="w_scenario_file").set_value(
        (name, json.dumps(scenario).encode(), "application/json")
    ).run()
    assert not at.exception, at.exception
    return at


def scenario_files(default: Scenario) -> dict[str, dict]:
    """Scenario files a team might write: the bundled example, a bought GPU, a class with its
    dataset, a carbon price on today's measured rule, a budget and a power figure of its own."""
    example = json.loads((ROOT / "examples" / "chat-batch-qwen14b.json").read_text())
    base = default.model_dump(mode="json", exclude_none=True)
    bought = json.loads(json.dumps(base))
    h100 = next(g for g in bought["gpus"] if g["gpu_model"] == "h100-pcie")
    h100.pop("hourly_usd")
    h100 |= {"purchase_usd": 25_000, "lifetime_years": 4}
    shaped = json.loads(json.dumps(base))
    shaped["classes"][-1]["dataset"] = "sharegpt"
    priced = json.loads(json.dumps(example))
    priced |= {"objective": {"carbon_price_usd_per_t": 120}, "capacity_rule": "measured"}
    priced["gpus"][0] |= {"idle_w": 70}  # a carbon price needs both GPUs' power
    limited = json.loads(json.dumps(example))
    limited["gpus"][1] |= {"idle_w": 30, "rated_w": 400}
    limited["budget_usd_per_hour"] = 100
    return {
        "example.json": example,
        "bought.json": bought,
        "shaped.json": shaped,
        "priced.json": priced,
        "limited.json": limited,
    }


def test_the_page_and_the_command_line_plan_every_scenario_file_alike(
    cli, monkeypatch, sample_warehouse_path, tmp_path
):
    at = open_app(monkeypatch, sample_warehouse_path)
    files = scenario_files(at.session_state["s_current"])
    # the frontier's tab open, so that the page plans it too, as `fleetplan plan` does
    open_tab(at, "Cost vs carbon")
    on_the_page = {}
    assert len(files) > 0  # a loop over nothing asserts nothing
    for name, content in files.items():
        upload(at, content, name)
        shown: Scenario = at.session_state["s_current"]
        assert at.session_state["s_notes"] == []  # nothing dropped, nothing filled in
        assert shown.classes == Scenario.model_validate(content).classes
        offer = Scenario.model_validate(content).offer("h100-pcie")
        assert shown.offer("h100-pcie").purchase_usd == offer.purchase_usd
        on_the_page[name] = at.session_state["s_result"].model_dump(mode="json")

    st.cache_resource.clear()
    gc.collect()  # DuckDB: one process per file; the command line is another process
    assert len(files) > 0  # a loop over nothing asserts nothing
    for name, content in files.items():
        path = tmp_path / name
        path.write_text(json.dumps(content))
        cli(
            "plan",
            "--warehouse",
            sample_warehouse_path,
            "--scenario",
            path,
            "--json",
            tmp_path / f"{name}.plan.json",
            check=True,
        )
        planned = json.loads((tmp_path / f"{name}.plan.json").read_text())
        planned.pop("inputs")  # what the plan rests on, exported beside it (tests/test_exports.py)
        planned.pop("headline", None)  # a day plan's
        page = on_the_page[name]
        assert page["model"].endswith(planned["model"])  # the file may name the model short
        assert {**page, "model": planned["model"]} == planned, name


def test_runs_without_a_dataset_label_do_not_stop_the_plan(
    cli, monkeypatch, sample_warehouse_path, tmp_path
):
    """The issue's dead end: a vLLM file without a dataset label, imported for the bundled model,
    made the page stop with "measured with several kinds of traffic". Now each class is planned
    on the most-measured kind, written into its Dataset column and said."""
    model = "deepseek-ai/DeepSeek-R1-Distill-Llama-8B"
    for seed, rate in ((31, 2.0), (32, 4.0)):
        run = tmp_path / f"vllm-{seed}.json"
        run.write_text(json.dumps(make_result(seed=seed, rate=rate, model=model)))
        cli("ingest", "--warehouse", sample_warehouse_path, run, check=True)
    at = open_app(monkeypatch, sample_warehouse_path)
    shown: Scenario = at.session_state["s_current"]
    assert shown.model == model
    assert {c.dataset for c in shown.classes} == {"sharegpt"}  # the most measured
    notes = at.session_state["s_notes"]
    assert len(notes) == len(shown.classes)
    assert all("named no traffic shape" in n and "unlabelled" in n for n in notes)
    assert any("planned on sharegpt, the most measured" in seen(i.value) for i in at.info)
    assert not at.error, [e.value for e in at.error]
    assert metric(at, "Cost per month").startswith("$")


def test_the_benchmarks_page_starts_from_the_plans_targets_and_prices_and_carries_them_back(
    monkeypatch, sample_warehouse_path
):
    at = open_app(monkeypatch, sample_warehouse_path)
    plan: Scenario = at.session_state["s_current"]
    first = next(c for c in plan.classes if c.ttft_p99_ms is not None)
    offer = next(g for g in plan.gpus if g.hourly_usd is not None)
    at.switch_page(BENCHMARKS).run()
    assert not at.exception, at.exception
    # it started at 500 ms / none and $2.00 / $0.25 whatever the plan said
    assert at.number_input(key="w_ttft_target").value == first.ttft_p99_ms
    assert at.number_input(key="w_tpot_target").value == (first.tpot_p99_ms or 0.0)
    assert at.number_input(key=f"w_price_{offer.gpu_model}").value == offer.hourly_usd
    at.number_input(key="w_ttft_target").set_value(first.ttft_p99_ms + 50).run()
    at.number_input(key=f"w_price_{offer.gpu_model}").set_value(offer.hourly_usd + 0.5).run()
    assert not at.exception, at.exception
    at.switch_page(PLAN).run()
    assert not at.exception, at.exception
    back: Scenario = at.session_state["s_current"]
    assert next(c for c in back.classes if c.name == first.name).ttft_p99_ms == (
        first.ttft_p99_ms + 50
    )
    assert next(g for g in back.gpus if g.gpu_model == offer.gpu_model).hourly_usd == (
        offer.hourly_usd + 0.5
    )


def test_the_estimates_switch_fills_unmeasured_gpus_and_marks_them(
    monkeypatch, sample_warehouse_path
):
    at = open_app(monkeypatch, sample_warehouse_path)
    at.selectbox(key=key(at, "w_model")).set_value("microsoft/phi-4").run()  # H100 runs only
    assert not at.exception, at.exception

    def fleet():
        return next(df.value for df in at.dataframe if "Basis" in df.value.columns)

    assert at.session_state["s_current"].estimates == "off"
    assert set(fleet()["Basis"]) == {"measured"}
    assert not any("rest on estimates" in w.value for w in at.warning)
    at.toggle(key=key(at, "w_estimates")).set_value(True).run()
    assert not at.exception, at.exception
    scenario: Scenario = at.session_state["s_current"]
    assert scenario.estimates == "fill"
    assert "RTX 4090" in fleet()["Server"].str.cat()  # the 4090s the H100-only data left out
    estimated = fleet()[fleet()["Basis"].str.startswith("ESTIMATED: saturation")]
    assert not estimated.empty
    assert any("rest on estimates" in w.value for w in at.warning)
    explained = [e for e in at.expander if e.label == "What an estimate is"]
    assert explained and "leaving each model and GPU out" in explained[0].markdown[0].value
    link = at.query_params["s"]
    assert link == scenario_to_link(scenario)  # the switch lives in the link


def test_a_scenario_of_a_model_nobody_measured_plans_it_on_estimates(
    monkeypatch, sample_warehouse_path
):
    """A scenario file whose model has no runs here but whose config.json it carries
    (model_configs): the page keeps the model, in its Model box, and plans it on estimates."""
    from tests.test_estimate_fill import QWEN3_32B

    at = open_app(monkeypatch, sample_warehouse_path)
    loaded = at.session_state["s_current"].model_dump(mode="json")
    loaded |= {"model": "Qwen/Qwen3-32B", "model_configs": {"Qwen/Qwen3-32B": QWEN3_32B}}
    loaded["classes"] = [
        {"name": "chat", "rate_rps": 4, "ttft_p99_ms": 3000, "tpot_p99_ms": 150}
        | {"input_len": 1000, "output_len": 200}
    ]
    at.file_uploader(key="w_scenario_file").set_value(
        ("qwen3.json", json.dumps(loaded).encode(), "application/json")
    ).run()
    assert not at.exception, at.exception
    shown: Scenario = at.session_state["s_current"]
    assert shown.model == "Qwen/Qwen3-32B" and shown.estimates == "fill"
    assert at.selectbox(key=key(at, "w_model")).value == "Qwen/Qwen3-32B"
    said = [seen(e.value) for e in [*at.info, *at.warning, *at.caption, *at.markdown]]
    assert any("planned on estimates from the config.json" in text for text in said)
    assert not at.error, [e.value for e in at.error]
    assert metric(at, "Cost per month").startswith("$")


def test_a_model_nobody_measured_is_added_from_its_config_json_on_the_page(
    monkeypatch, sample_warehouse_path
):
    """The files' "A model nobody measured": an id and its config.json make the page plan that
    model on estimates; a config.json it cannot size is said, naming the key, and the plan
    shown stays the one before."""
    from tests.test_estimate_families import GLM4_9B

    at = open_app(monkeypatch, sample_warehouse_path)
    before: Scenario = at.session_state["s_current"]
    upload = at.file_uploader(key="w_model_config_file")
    broken = {k: v for k, v in GLM4_9B.items() if k != "num_layers"}
    upload.set_value(("config.json", json.dumps(broken).encode(), "application/json"))
    at.text_input(key="w_new_model").set_value("THUDM/glm-4-9b-chat").run()
    assert not at.exception, at.exception
    (error,) = [seen(e.value) for e in at.error]
    assert "cannot be planned" in error and "no num_hidden_layers (nor n_layer" in error
    assert at.session_state["s_current"].model == before.model

    at.file_uploader(key="w_model_config_file").set_value(
        ("config.json", json.dumps(GLM4_9B).encode(), "application/json")
    ).run()
    assert not at.exception, at.exception
    shown: Scenario = at.session_state["s_current"]
    assert shown.model == "THUDM/glm-4-9b-chat" and shown.estimates == "fill"
    assert shown.model_configs == {"THUDM/glm-4-9b-chat": GLM4_9B}
    assert at.selectbox(key=key(at, "w_model")).value == "THUDM/glm-4-9b-chat"
    said = [seen(e.value) for e in [*at.info, *at.warning, *at.caption, *at.markdown]]
    assert any("planned on estimates from the config.json" in text for text in said)
    assert not at.error, [e.value for e in at.error]
    assert metric(at, "Cost per month").startswith("$")


def test_a_scenario_file_that_cannot_be_loaded_is_said_naming_the_file(
    monkeypatch, sample_warehouse_path
):
    """The page's two uploads share one way of opening a file once (app/views/plan.py): a bad
    scenario file is said, naming it and its field, and the plan shown stays the one before."""
    at = open_app(monkeypatch, sample_warehouse_path)
    before: Scenario = at.session_state["s_current"]
    at.file_uploader(key="w_scenario_file").set_value(
        ("bad.json", b'{"classes": 3}', "application/json")
    ).run()
    assert not at.exception, at.exception
    (error,) = [seen(e.value) for e in at.error]
    assert error.startswith("This scenario cannot be loaded: bad.json: field 'model'")
    assert at.session_state["s_current"] == before
