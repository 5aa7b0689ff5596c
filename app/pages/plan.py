"""Plan: the workload mix, prices and sites in; the recommended fleet, its comparisons and the
cost/carbon frontier out. Logic lives in planner/ and fleetplan/services/ (the forms' tables,
defaults, loading a scenario file); this page only arranges."""

from __future__ import annotations

import streamlit as st

from fleetplan.app import data
from fleetplan.app.charts import baselines_figures, operating_points_figure, pareto_figure
from fleetplan.core.errors import InputError
from fleetplan.core.tabular import to_csv
from fleetplan.planner.defaults import DEFAULT_CARBON_PRICE_USD_PER_T, DEFAULT_REGION
from fleetplan.planner.explain import explain
from fleetplan.planner.presets import PRESETS
from fleetplan.planner.report import pool_table
from fleetplan.planner.scenario import CarbonPrice, Scenario
from fleetplan.services.load_views import operating_points
from fleetplan.services.planning import MAX_SCENARIO_BYTES, load_scenario
from fleetplan.services.scenario_defaults import (
    default_scenario,
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
if "s_base" not in state:
    state.s_base = default_scenario(points, data.catalog(), data.prices(), data.regions())
    state.s_gen = 0
base: Scenario = state.s_base
gen: int = state.s_gen


def restart(scenario: Scenario) -> None:
    """New inputs for every widget (a preset, a loaded file, a region): fresh widget keys."""
    state.s_base = scenario
    state.s_gen += 1
    st.rerun()


# -- inputs -------------------------------------------------------------------------------------
models = models_by_coverage(points)
top = st.columns([3, 3, 2, 2])
model = top[0].selectbox(
    "Model",
    models,
    index=models.index(base.model) if base.model in models else 0,
    key=f"w_model_{gen}",
    help="Plans use this model's measured load levels.",
)
objectives = {"cost": "Lowest cost", "carbon": "Lowest carbon", "price": "Cost + carbon price"}
objective = top[1].radio(
    "Objective",
    OBJECTIVE_CHOICES,
    format_func=objectives.get,
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
    help="Latency model: the highest rate whose P99s each configuration's latency-against-load "
    "curve predicts within the targets. Measured levels: the best achieved throughput among "
    "the measured levels that meet the targets (the rule before the model).",
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

left, right = st.columns(2)
with left:
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
        column_config={
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
        },
    )
    total_rps = st.number_input(
        "Total rate for the shares (req/s)",
        0.0,
        1e6,
        0.0,
        key=f"w_total_rps_{gen}",
        help="Only used by classes given as a share of the total.",
    )
with right:
    st.markdown("**GPUs on offer** — price per GPU-hour; blank power = the catalog has none")
    gpus = st.data_editor(
        gpus_table(base, data.facts()),
        num_rows="dynamic",
        hide_index=True,
        key=f"w_gpus_{gen}",
        column_config={
            "gpu_model": st.column_config.TextColumn("GPU", required=True),
            "hourly_usd": st.column_config.NumberColumn(
                "$ / GPU-hour", min_value=0.0, format="%.2f"
            ),
            "electricity_included": st.column_config.CheckboxColumn("Power in price"),
            "site": st.column_config.TextColumn("Site", required=True),
            "max_gpus": st.column_config.NumberColumn("Max GPUs", min_value=0, step=1),
            "include_embodied": st.column_config.CheckboxColumn("Count embodied"),
            "idle_w": st.column_config.NumberColumn("Idle W", min_value=0.0),
            "rated_w": st.column_config.NumberColumn("Rated W", min_value=0.0),
            "embodied_kgco2e": st.column_config.NumberColumn("Embodied kgCO2e", min_value=0.0),
        },
    )

left, right = st.columns(2)
with left:
    st.markdown("**Sites** — electricity price, grid carbon intensity, PUE")
    sites = st.data_editor(
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
with right:
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

state.s_current = scenario  # what the downloads hold; tests read it too

if apply_preset:
    restart(with_preset(scenario, preset))
if apply_region:
    restart(with_region_site(scenario, target_site, region))

# -- the plan -----------------------------------------------------------------------------------
try:
    result = data.plan_for(scenario.model_dump_json())
except InputError as error:
    st.error(f"The scenario cannot be planned: {error.detail}", icon=":material/error:")
    st.stop()

fleet = result.recommended
if fleet.totals is None:
    st.error(f"No fleet can serve this workload: {result.message}", icon=":material/block:")
else:
    totals = fleet.totals

    def show(value, fmt, unit=""):
        return "unknown" if value is None else fmt.format(value) + unit

    kpis = st.columns(5)
    kpis[0].metric("Cost per month", show(totals.monthly_cost_usd, "${:,.0f}"))
    kpis[1].metric(
        "$ per million output tokens", show(totals.usd_per_million_output_tokens, "${:.3f}")
    )
    kpis[2].metric(
        "$ per million total tokens", show(totals.usd_per_million_total_tokens, "${:.3f}")
    )
    kpis[3].metric(
        "kgCO2e per month",
        show(totals.carbon_kgco2e_month, "{:,.0f}"),
        help="Operational (energy x PUE x grid) plus embodied (amortised by calendar "
        "hours over the lifetime).",
    )
    kpis[4].metric("GPUs", " + ".join(f"{n} {g}" for g, n in totals.gpus.items()))
    if result.status.value != "optimal":
        st.warning(f"Not proven optimal: {result.message}")

    tabs = st.tabs(["Fleet", "Compared", "Cost vs carbon", "Capacities", "Load curves"])
    with tabs[0]:
        table = pool_table(result, include_baselines=False)
        st.dataframe(
            table.drop(columns=["scenario", "fleet"]),
            hide_index=True,
            key="table_pools",
            column_config={
                "rate_rps": st.column_config.NumberColumn("Rate (req/s)", format="%.2f"),
                "capacity_rps_per_server": st.column_config.NumberColumn(
                    "Capacity / server (req/s)", format="%.2f"
                ),
                "utilization": st.column_config.NumberColumn("Utilisation", format="percent"),
                "hourly_cost_usd": st.column_config.NumberColumn("$/h", format="$%.2f"),
                "monthly_cost_usd": st.column_config.NumberColumn("$/month", format="$%.0f"),
                "power_kw": st.column_config.NumberColumn("kW", format="%.2f"),
                "capacity_basis": st.column_config.TextColumn("Capacity basis"),
                "predicted_ttft_p99_ms": st.column_config.NumberColumn(
                    "Predicted P99 TTFT (ms)", format="%.1f"
                ),
                "predicted_tpot_p99_ms": st.column_config.NumberColumn(
                    "Predicted P99 TPOT (ms)", format="%.1f"
                ),
            },
        )
        st.markdown("**Why this fleet**")
        for line in explain(result, scenario):
            st.markdown(f"- {line}")
        for note in result.notes:
            st.caption(note)
    with tabs[1]:
        cost_figure, carbon_figure = baselines_figures([fleet, *result.baselines])
        st.plotly_chart(cost_figure, key="chart_baselines_cost")
        if carbon_figure is not None:
            st.plotly_chart(carbon_figure, key="chart_baselines_carbon")
        for base_fleet in result.baselines:
            if base_fleet.totals is None:
                st.caption(f"{base_fleet.name}: {base_fleet.status.value} — {base_fleet.message}")
    with tabs[2]:
        if result.pareto:
            frontier = pareto_figure(
                result.pareto,
                monthly_cost_usd=totals.monthly_cost_usd,
                carbon_kgco2e_month=totals.carbon_kgco2e_month,
            )
            st.plotly_chart(frontier, key="chart_pareto")
            if result.pareto_message:
                st.caption(result.pareto_message)
        else:
            st.info(
                f"No cost/carbon frontier: {result.pareto_message}. Fill the missing power or "
                "embodied figures in the GPU table to get one."
            )
    with tabs[3]:
        st.dataframe(
            [row.model_dump() for row in result.capacities],
            hide_index=True,
            key="table_capacities",
        )
    with tabs[4]:
        pools_on_curves = operating_points(result, scenario, points)
        st.plotly_chart(operating_points_figure(pools_on_curves, "ttft"), key="chart_pool_ttft")
        st.plotly_chart(operating_points_figure(pools_on_curves, "tpot"), key="chart_pool_tpot")
        st.caption(
            "Stars: each pool's planned load per server and the P99 its configuration's curve "
            "predicts there (no star: the curve says nothing at that load). Dotted lines: the "
            "capacity at the class's targets before the utilisation ceiling; the curve ends at "
            "the highest rate the server kept up with."
        )

# -- files --------------------------------------------------------------------------------------
files = st.columns(3)
if fleet.totals is not None:
    files[0].download_button(
        "Download plan (CSV)",
        data=to_csv(pool_table(result)),
        file_name="fleetplan-plan.csv",
        mime="text/csv",
        key="download_plan_csv",
        icon=":material/download:",
    )
files[1].download_button(
    "Download scenario (JSON)",
    data=scenario.model_dump_json(indent=1),
    file_name="fleetplan-scenario.json",
    mime="application/json",
    key="download_scenario",
    icon=":material/download:",
)
uploaded = files[2].file_uploader("Load a scenario (JSON)", type=["json"], key="w_scenario_file")
if uploaded is not None and uploaded.file_id != state.get("s_loaded_file"):
    state.s_loaded_file, state.s_load_error = uploaded.file_id, None
    try:
        loaded = load_scenario(
            uploaded.getvalue(), name=uploaded.name, max_bytes=MAX_SCENARIO_BYTES
        )
    except InputError as error:
        state.s_load_error = str(error)
    else:
        restart(loaded)
if uploaded is not None and state.get("s_load_error"):
    st.error(f"This scenario cannot be loaded: {state.s_load_error}", icon=":material/error:")
