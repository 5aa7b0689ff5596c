"""The Plan page's state: which scenario each group of input widgets starts from, and when the
widgets are renewed.

The widgets start from `st.session_state.s_base`, under keys that end in a generation number,
one per group of widgets (`s_gens`: top, classes, gpus, sites, limits; `widget_key`). A preset,
a region, a loaded file or a traffic shape filled in replaces the base (`restart`) and renews only
the groups whose values it changes: a table the change leaves as it is keeps its widget, its
data and the user's edits in progress (a table rebuilt while the page re-ran lost typed values,
or put them in the cell that took the old one's place). Streamlit forgets a widget's value
when a run does not draw it (another page was shown): `start` notices that the inputs are
gone and restarts them from the last scenario they made (`s_current`), so that nothing the user
typed is lost across pages. The
scenario also lives in the page's link (`keep_in_link`, `fleetplan.services.scenario_link`): a
reload or a sent link starts from it. What the tables hold and how they become a scenario is
fleetplan/services/scenario_forms.py.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from fleetplan.app import data
from fleetplan.core.errors import InputError
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.services.planning import for_the_page
from fleetplan.services.scenario_defaults import default_scenario
from fleetplan.services.scenario_forms import (
    classes_table,
    gpus_table,
    objective_choice,
    sites_table,
)
from fleetplan.services.scenario_link import scenario_from_link, scenario_to_link

LINK_PARAM, REGION_PARAM = "s", "region"


GROUPS = ("top", "classes", "gpus", "sites", "limits")
# Each widget's group (a widget not named here is in "top"); the region selectors follow the sites.
WIDGET_GROUPS = {
    "w_classes": "classes",
    "w_total_rps": "classes",
    "w_preset": "classes",
    "w_apply_preset": "classes",
    "w_gpus": "gpus",
    "w_currency": "gpus",
    "w_usd_per_eur": "gpus",
    "w_sites": "sites",
    "w_region_site": "sites",
    "w_region": "sites",
    "w_apply_region": "sites",
    "w_budget": "limits",
    "w_carbon_cap": "limits",
}


def widget_key(name: str, state=None) -> str:
    """The key a widget (`w_model`, `w_gpus`, ...) has in this run: its name and its group's
    generation."""
    gens = (st.session_state if state is None else state)["s_gens"]
    return f"{name}_{gens[WIDGET_GROUPS.get(name, 'top')]}"


def _signature(group: str, scenario: Scenario) -> str:
    """What a group of widgets shows of a scenario: equal signatures draw equal widgets."""
    if group == "classes":
        return classes_table(scenario).to_json()
    if group == "gpus":  # the prices shown, the currency and its rate
        currency = (scenario.currency, scenario.usd_per_eur)
        return repr(currency) + gpus_table(scenario, data.facts()).to_json()
    if group == "sites":
        return sites_table(scenario).to_json()
    if group == "limits":
        return repr(
            (
                scenario.budget_usd_per_hour,
                scenario.carbon_cap_kg_per_hour,
                scenario.currency,
                scenario.usd_per_eur,
            )
        )
    return repr(
        (
            scenario.name,
            scenario.model,
            objective_choice(scenario),
            scenario.objective,
            scenario.capacity_rule,
            scenario.max_utilization,
        )
    )


def start(points: pd.DataFrame) -> tuple[dict[str, Scenario], dict[str, int]]:
    """The scenario each group of widgets starts from, and the groups' generations: the link's
    (or the default) on a new session; the last scenario the inputs made when their widgets
    were forgotten (another page was shown)."""
    state = st.session_state
    if "s_base" not in state:
        state.s_gen, state.s_notes = 0, []
        state.s_base = _first_scenario(points)
        state.s_current = state.s_base
        state.s_gens = dict.fromkeys(GROUPS, 0)
        state.s_bases = dict.fromkeys(GROUPS, state.s_base)
        region = st.query_params.get(REGION_PARAM)
        if region in set(data.regions()["region_id"]):
            state.s_region = region
    elif widget_key("w_model") not in state:  # back from another page
        _renew(state.s_current, made=None)
    return state.s_bases, state.s_gens


def _renew(scenario: Scenario, made: Scenario | None) -> None:
    """`scenario` the new base; new widgets for the groups it shows otherwise than `made` (what
    the widgets made this run; None: every group)."""
    state = st.session_state
    for group in GROUPS:
        if made is None or _signature(group, scenario) != _signature(group, made):
            state.s_gens[group] += 1
            state.s_bases[group] = scenario
    state.s_base = state.s_current = scenario
    state.s_gen += 1


def _first_scenario(points: pd.DataFrame) -> Scenario:
    default = default_scenario(points, data.catalog(), data.prices(), data.regions())
    link = st.query_params.get(LINK_PARAM)
    if not link:
        return default
    try:
        loaded = scenario_from_link(link)
    except InputError as error:
        st.session_state.s_notes = [
            f"This page's link holds no plan that can be read ({error}): showing the default "
            "plan instead."
        ]
        return default
    scenario, notes = for_the_page(loaded, points, data.facts())
    st.session_state.s_notes = notes
    return scenario


def restart(scenario: Scenario, notes: Sequence[str] = (), made: Scenario | None = None) -> None:
    """New inputs (a preset, a loaded file, a region, a traffic shape filled in): fresh widgets
    for the groups that show `scenario` otherwise than `made` (the scenario the widgets made this
    run; None, a loaded file: every group), and what the page says about the change."""
    _renew(scenario, made)
    st.session_state.s_notes = list(notes)
    st.rerun()


def keep_in_link(scenario: Scenario) -> None:
    """The scenario (and the region preset chosen) in the page's URL, for a reload or a link."""
    link = scenario_to_link(scenario)
    if link is None:
        st.query_params.pop(LINK_PARAM, None)
        st.caption("This scenario is too large for the page's link: download it to share it.")
    elif st.query_params.get(LINK_PARAM) != link:
        st.query_params[LINK_PARAM] = link
    region = st.session_state.get("s_region")
    if region and st.query_params.get(REGION_PARAM) != region:
        st.query_params[REGION_PARAM] = region
