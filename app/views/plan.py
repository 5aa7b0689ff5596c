"""Plan: the workload mix, prices and sites in (`app/plan_inputs.py`); the recommended fleet, its
comparisons and the cost/carbon frontier out (`app/plan_results.py`). Logic lives in planner/ and
fleetplan/services/ (the forms' tables, defaults, loading a scenario file or link); this page
only arranges. The scenario survives a visit to another page (session state) and a reload or a
sent link (the URL): see `app/plan_inputs.py`."""

from __future__ import annotations

import streamlit as st

from fleetplan.app import data
from fleetplan.app.plan_availability import router_downloads, show_availability
from fleetplan.app.plan_day import day_inputs, schedule_download, show_day
from fleetplan.app.plan_inputs import scenario_inputs
from fleetplan.app.plan_replay import show_replay
from fleetplan.app.plan_results import FRONTIER_TAB, TAB_KEY, downloads, show_plan
from fleetplan.app.plan_state import keep_in_link, restart, start
from fleetplan.core.errors import InputError
from fleetplan.services.plain_text import plain
from fleetplan.services.planning import (
    MAX_SCENARIO_BYTES,
    class_models,
    for_the_page,
    load_scenario,
    with_model_config,
)
from fleetplan.services.scenario_forms import page_message, power_cleared

st.title("Plan a fleet")
points = data.points()
if points.empty:
    st.info(
        "No benchmark results yet, so there is nothing to plan from. Build the warehouse from "
        "the bundled sample data (`make run` or `fleetplan build`), or upload your runs on the "
        "Upload page.",
        icon=":material/inbox:",
    )
    st.stop()

state = st.session_state
bases, gens = start(points)
scenario = day_inputs(scenario_inputs(bases, gens, points))  # a day: app/plan_day.py
cleared, cleared_notes = power_cleared(scenario, bases["gpus"])
if cleared_notes:  # a purchase price or owned GPUs entered with Power in price ticked
    restart(cleared, cleared_notes, made=scenario)
state.s_current = scenario  # what the downloads and the link hold; tests read it too
keep_in_link(scenario)

# -- the plan -----------------------------------------------------------------------------------
state.pop("s_result", None)
asked = scenario.model_dump_json()
# With the frontier's tab open the plan is asked for with its frontier at once (one plan, not two).
frontier_open = state.get(TAB_KEY) == FRONTIER_TAB
try:
    result = data.plan_for(asked, frontier=frontier_open)
except InputError as error:
    # said, and the page goes on: the scenario's download and upload below are the way out
    st.error(
        f"The scenario cannot be planned: {plain(page_message(error))}", icon=":material/error:"
    )
    result = None
if result is not None:
    show_day(result, scenario)  # nothing for a scenario of version 1
    # the plan shown, its frontier too where that tab is open (tests compare it with the CLI's)
    state.s_result = show_plan(
        result, scenario, points, lambda: data.plan_for(asked, frontier=True)
    )
    show_availability(result)
    show_replay(result, scenario, points)

# -- files --------------------------------------------------------------------------------------
files = st.columns(3)
# A download is built outside the page's run: its plan is named (and ended) by this session.
download_plan = data.download_session()
downloads(
    result,
    scenario,
    files,
    lambda: data.plan_for(asked, frontier=True, session=download_plan),
)
router_downloads(result, files[1], class_models(scenario, sorted(points["model"].unique())))
if result is not None:
    schedule_download(result, files[1])


def open_once(kind: str, upload: object, make) -> None:
    """Put on the page the scenario `make()` builds from an upload, once per upload (`upload`:
    what identifies it); what stops it is kept, to be said while the upload is there (`said`)."""
    if upload == state.get(f"s_opened_{kind}"):
        return
    state[f"s_opened_{kind}"], state[f"s_refused_{kind}"] = upload, None
    try:
        opened = make()
    except InputError as error:
        state[f"s_refused_{kind}"] = str(error)
    else:
        restart(*for_the_page(opened, points, data.facts()))


def said(kind: str, words: str) -> None:
    if state.get(f"s_refused_{kind}"):
        st.error(f"{words}: {plain(state[f's_refused_{kind}'])}", icon=":material/error:")


uploaded = files[2].file_uploader("Load a scenario (JSON)", type=["json"], key="w_scenario_file")
if uploaded is not None:
    open_once(
        "scenario",
        uploaded.file_id,
        lambda: load_scenario(
            uploaded.getvalue(), name=uploaded.name, max_bytes=MAX_SCENARIO_BYTES
        ),
    )
    said("scenario", "This scenario cannot be loaded")

# A model nobody measured: its id and its Hugging Face config.json, planned on estimates.
with files[2].expander("A model nobody measured"):
    st.caption(
        "Plan a model with no runs here from its Hugging Face config.json: every GPU on offer "
        "gets an estimated capacity (labelled so in the plan)."
    )
    new_model = st.text_input("Its model id", key="w_new_model", placeholder="Qwen/Qwen3-32B")
    config_file = st.file_uploader("Its config.json", type=["json"], key="w_model_config_file")
    if config_file is not None and new_model.strip():
        open_once(
            "config",
            (config_file.file_id, new_model.strip()),
            lambda: with_model_config(
                scenario, new_model, config_file.getvalue(), name=config_file.name
            ),
        )
    elif config_file is not None:
        st.caption("Name the model the config.json is of to plan it.")
    if config_file is not None:
        said("config", "This config.json cannot be planned")
