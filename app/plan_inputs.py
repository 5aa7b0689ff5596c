"""The Plan page's inputs: model, objective, capacity rule and headroom; traffic classes; GPUs on
offer; sites and region presets; budget and carbon limits. `scenario_inputs` draws them and
returns the scenario they make. The scenario the widgets start from is `st.session_state.s_base`;
a preset, a region or a loaded file replaces it and renews every widget (`restart`). What the
tables hold and how they become a scenario is fleetplan/services/scenario_forms.py."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fleetplan.app import data
from fleetplan.core.errors import InputError
from fleetplan.planner.defaults import DEFAULT_CARBON_PRICE_USD_PER_T, DEFAULT_REGION
from fleetplan.planner.presets import PRESETS
from fleetplan.planner.scenario import CarbonPrice, Scenario
from fleetplan.services.scenario_defaults import (
    describe_region,
    region_preset,
    with_preset,
    with_region_site,
)
from fleetplan.services.scenario_forms import (
    CAPACITY_RULE_LABELS,
    CAPACITY_RULES,
    OBJECTIVE_CHOICES,
    classes_table,
    gpus_table,
    objective_choice,
    scenario_from_forms,
    scenario_settings,
    site_names,
    sites_table,
)
from fleetplan.warehouse.queries import models_by_coverage

OBJECTIVES = {"cost": "Lowest cost", "carbon": "Lowest carbon", "price": "Cost + carbon price"}


def restart(scenario: Scenario) -> None:
    """New inputs for every widget (a preset, a loaded file, a region): fresh widget keys."""
    st.session_state.s_base = scenario
    st.session_state.s_gen += 1
    st.rerun()


def scenario_inputs(base: Scenario, gen: int, points: pd.DataFrame) -> Scenario:
    """Every input of the page, drawn; the scenario they make (the page stops with the reason
    when they make none). Applies a preset or a region when its button was pressed."""
    model, objective, capacity_rule, headroom, carbon_price = _top(base, gen, points)
    left, right = st.columns(2)
    with left:
        preset, apply_preset, classes, total_rps = _classes(base, gen)
    with right:
        gpus = _gpus(base, gen)
    left, right = st.columns(2)
    with left:
        sites = _sites(base, gen)
    with right:
        target_site, region, apply_region = _regions(base, gen, sites)
        budget, carbon_cap = _limits(base, gen)
    settings = scenario_settings(
        objective=objective,
        carbon_price_usd_per_t=carbon_price,
        max_utilization=headroom,
        capacity_rule=capacity_rule,
        budget_usd_per_hour=budget,
        carbon_cap_kg_per_hour=carbon_cap,
    )
    try:
        scenario = scenario_from_forms(
            base,
            model=model,
            classes=classes,
            gpus=gpus,
            sites=sites,
            settings=settings,
            total_rps=total_rps or None,
        )
    except InputError as error:
        st.error(f"Check the inputs: {error}", icon=":material/edit:")
        st.stop()
    if apply_preset:
        restart(with_preset(scenario, preset))
    if apply_region:
        restart(with_region_site(scenario, target_site, region))
    return scenario


def _top(base: Scenario, gen: int, points: pd.DataFrame):
    models = models_by_coverage(points)
    top = st.columns([3, 3, 2, 2])
    model = top[0].selectbox(
        "Model",
        models,
        index=models.index(base.model) if base.model in models else 0,
        key=f"w_model_{gen}",
        help="Plans use this model's measured load levels.",
    )
    objective = top[1].radio(
        "Objective",
        OBJECTIVE_CHOICES,
        format_func=OBJECTIVES.get,
        index=OBJECTIVE_CHOICES.index(objective_choice(base)),
        key=f"w_objective_{gen}",
        horizontal=True,
    )
    capacity_rule = top[2].radio(
        "Capacity from",
        CAPACITY_RULES,
        format_func=CAPACITY_RULE_LABELS.get,
        index=CAPACITY_RULES.index(base.capacity_rule),
        key=f"w_capacity_rule_{gen}",
        help="Latency model: the highest rate whose P99s each configuration's latency-against-"
        "load curve predicts within the targets. Measured levels: the best achieved throughput "
        "among the measured levels that meet the targets (the rule before the model).",
    )
    headroom = top[3].slider(
        "Utilisation ceiling",
        0.3,
        1.0,
        float(base.max_utilization),
        0.05,
        key=f"w_headroom_{gen}",
        help="Servers are planned to carry at most this share of their capacity: headroom for "
        "bursts and for the model's error.",
    )
    carbon_price = None
    if objective == "price":
        carbon_price = st.number_input(
            "Carbon price ($ per tCO2e)",
            0.0,
            10_000.0,
            base.objective.carbon_price_usd_per_t
            if isinstance(base.objective, CarbonPrice)
            else DEFAULT_CARBON_PRICE_USD_PER_T,
            step=10.0,
            key=f"w_carbon_price_{gen}",
        )
    return model, objective, capacity_rule, headroom, carbon_price


CLASS_COLUMNS = {
    "name": st.column_config.TextColumn("Class", required=True),
    "rate_rps": st.column_config.NumberColumn("Rate (req/s)", min_value=0.0, format="%.2f"),
    "share_pct": st.column_config.NumberColumn(
        "or % of total",
        min_value=0.0,
        max_value=100.0,
        format="%.0f%%",
        help="Leave the rate empty and give a share of the total rate below.",
    ),
    "ttft_p99_ms": st.column_config.NumberColumn("P99 TTFT (ms)", min_value=0.0),
    "tpot_p99_ms": st.column_config.NumberColumn("P99 TPOT (ms)", min_value=0.0),
}


def _classes(base: Scenario, gen: int):
    st.markdown("**Traffic classes** — peak request rate and P99 targets (empty = no target)")
    preset_row = st.columns([3, 1])
    preset = preset_row[0].selectbox(
        "Preset", list(PRESETS), key=f"w_preset_{gen}", label_visibility="collapsed"
    )
    apply_preset = preset_row[1].button("Use preset", key=f"w_apply_preset_{gen}")
    classes = st.data_editor(
        classes_table(base),
        num_rows="dynamic",
        hide_index=True,
        key=f"w_classes_{gen}",
        column_config=CLASS_COLUMNS,
    )
    total_rps = st.number_input(
        "Total rate for the shares (req/s)",
        0.0,
        1e6,
        0.0,
        key=f"w_total_rps_{gen}",
        help="Only used by classes given as a share of the total.",
    )
    return preset, apply_preset, classes, total_rps


GPU_COLUMNS = {
    "gpu_model": st.column_config.TextColumn("GPU", required=True),
    "hourly_usd": st.column_config.NumberColumn("$ / GPU-hour", min_value=0.0, format="%.2f"),
    "electricity_included": st.column_config.CheckboxColumn("Power in price"),
    "site": st.column_config.TextColumn("Site", required=True),
    "max_gpus": st.column_config.NumberColumn("Max GPUs", min_value=0, step=1),
    "include_embodied": st.column_config.CheckboxColumn("Count embodied"),
    "idle_w": st.column_config.NumberColumn("Idle W", min_value=0.0),
    "rated_w": st.column_config.NumberColumn("Rated W", min_value=0.0),
    "embodied_kgco2e": st.column_config.NumberColumn("Embodied kgCO2e", min_value=0.0),
}


def _gpus(base: Scenario, gen: int) -> pd.DataFrame:
    st.markdown("**GPUs on offer** — price per GPU-hour; blank power = the catalog has none")
    return st.data_editor(
        gpus_table(base, data.facts()),
        num_rows="dynamic",
        hide_index=True,
        key=f"w_gpus_{gen}",
        column_config=GPU_COLUMNS,
    )


def _sites(base: Scenario, gen: int) -> pd.DataFrame:
    st.markdown("**Sites** — electricity price, grid carbon intensity, PUE")
    return st.data_editor(
        sites_table(base),
        num_rows="dynamic",
        hide_index=True,
        key=f"w_sites_{gen}",
        column_config={
            "name": st.column_config.TextColumn("Site", required=True),
            "electricity_usd_per_kwh": st.column_config.NumberColumn("$ / kWh", format="%.4f"),
            "grid_gco2_per_kwh": st.column_config.NumberColumn("gCO2e / kWh", format="%.0f"),
            "pue": st.column_config.NumberColumn(
                "PUE", min_value=1.0, max_value=5.0, format="%.2f"
            ),
        },
    )


def _regions(base: Scenario, gen: int, sites: pd.DataFrame):
    st.markdown("**Region presets** — fill a site from public figures")
    regions = data.regions()
    labels = dict(zip(regions["region_id"], regions["name"], strict=True))
    row = st.columns([2, 3, 1])
    target_site = row[0].selectbox("Site", site_names(sites, base), key=f"w_region_site_{gen}")
    region_ids = list(labels)
    region_id = row[1].selectbox(
        "Region",
        region_ids,
        index=region_ids.index(DEFAULT_REGION) if DEFAULT_REGION in region_ids else 0,
        format_func=lambda r: f"{labels[r]} ({r})",
        key=f"w_region_{gen}",
    )
    apply_region = row[2].button("Apply", key=f"w_apply_region_{gen}")
    region = region_preset(regions, region_id)
    for line in describe_region(region):
        st.caption(line)
    return target_site, region, apply_region


def _limits(base: Scenario, gen: int) -> tuple[float, float]:
    limits = st.columns(2)
    budget = limits[0].number_input(
        "Budget ($/h, 0 = none)", 0.0, value=base.budget_usd_per_hour or 0.0, key=f"w_budget_{gen}"
    )
    carbon_cap = limits[1].number_input(
        "Carbon cap (kgCO2e/h, 0 = none)",
        0.0,
        value=base.carbon_cap_kg_per_hour or 0.0,
        key=f"w_carbon_cap_{gen}",
    )
    return budget, carbon_cap
