"""The Plan page's results: headline figures, the fleet, the comparisons, the cost/carbon frontier,
the capacities and the pools on their load curves, and the downloads. Drawing only: every figure
comes from the plan (planner/) or from fleetplan/services/."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from fleetplan.app import data
from fleetplan.app.charts import (
    baselines_figures,
    operating_points_figure,
    pareto_figure,
)
from fleetplan.app.plan_inputs import ESTIMATES_HELP
from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.rules import points_for_model, traffic_measured
from fleetplan.planner.peak.results import FleetPlan, Plan
from fleetplan.planner.report.explain import explain, trade_off
from fleetplan.planner.report.table import gpus_text
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.services import exports, workbook
from fleetplan.services.currency import labelled, money, rate_note
from fleetplan.services.load_tables import operating_points
from fleetplan.services.plain_text import plain
from fleetplan.services.plan_tables import (
    capacities_view,
    energy_view,
    fleet_view,
    levels_view,
    pool_notes,
)
from fleetplan.services.scenario_forms import page_message

# The results' tabs. Only the open tab is drawn (`on_change="rerun"`: choosing another re-runs
# the page, its plan cached), and the frontier is planned only when its tab is open: three
# quarters of a plan's solves on the bundled data, and the load-curve figures a third of the
# page's drawing (benchmarks/RESULTS.md).
TABS = ("Fleet", "Compared", "Cost vs carbon", "Capacities", "Load curves")
TAB_KEY = "plan_tab"
FRONTIER_TAB = "Cost vs carbon"


def show_plan(
    result: Plan, scenario: Scenario, points: pd.DataFrame, with_frontier: Callable[[], Plan]
) -> Plan:
    """The plan's results, or why there is no fleet; `with_frontier()` is the same plan with its
    cost/carbon frontier. The plan shown is returned (with its frontier where its tab is open)."""
    fleet = result.recommended
    if fleet.totals is None:
        st.error(
            f"No fleet can serve this workload: {plain(result.message)}", icon=":material/block:"
        )
        return result
    _headline(result, scenario)
    tabs = dict(zip(TABS, st.tabs(TABS, on_change="rerun", key=TAB_KEY), strict=True))
    if tabs["Fleet"].open:
        with tabs["Fleet"]:
            _fleet(result, scenario, points)
    if tabs["Compared"].open:
        with tabs["Compared"]:
            _compared(result)
    if tabs[FRONTIER_TAB].open:
        with tabs[FRONTIER_TAB]:
            try:
                result = with_frontier()
            except InputError as error:
                st.error(
                    f"No cost/carbon frontier: {plain(page_message(error))}",
                    icon=":material/error:",
                )
            else:
                _frontier(result)
    if tabs["Capacities"].open:
        with tabs["Capacities"]:
            readable_table(capacities_view(result), "table_capacities")
    if tabs["Load curves"].open:
        with tabs["Load curves"]:
            _load_curves(result, scenario, points)
    return result


def _show(value, fmt: str, unit: str = "") -> str:
    return "unknown" if value is None else fmt.format(value) + unit


def _headline(result: Plan, scenario: Scenario) -> None:
    """The fleet's headline figures, money in the scenario's currency (services.currency)."""
    totals = result.recommended.totals
    kpis = st.columns(5)
    kpis[0].metric("Cost per month", money(totals.monthly_cost_usd, scenario, "{:,.0f}"))
    kpis[1].metric(
        labelled("$ per million output tokens", scenario),
        money(totals.usd_per_million_output_tokens, scenario, "{:.3f}"),
    )
    kpis[2].metric(
        labelled("$ per million total tokens", scenario),
        money(totals.usd_per_million_total_tokens, scenario, "{:.3f}"),
    )
    kpis[3].metric(
        "kgCO2e per month",
        _show(totals.carbon_kgco2e_month, "{:,.0f}"),
        help="Operational (energy x PUE x grid) plus embodied (amortised by calendar "
        "hours over the lifetime).",
    )
    kpis[4].metric(
        "GPUs (servers)",
        f"{sum(totals.gpus.values())} ({totals.servers})",
        help="GPUs in the fleet, and the servers they sit in. Which GPUs: the line below.",
    )
    st.caption(f"Fleet: {plain(gpus_text(totals.gpus))}")
    note = rate_note(scenario)
    if note:
        st.caption(plain(note))
    if result.status.value != "optimal":
        st.warning(f"Not proven optimal: {plain(result.message)}")


# Display formats of the readable tables' columns (services.plan_tables), by label.
_FORMATS = {
    "Rate (req/s)": "%g",
    "Capacity/server (req/s)": "%g",
    "Full capacity/server (req/s)": "%g",
    "Planned capacity/server (req/s)": "%g",
    "Load per server (req/s)": "%g",
    "Utilisation (%)": "%.1f%%",
    "Cost ($/h)": "$%.2f",
    "Cost ($/month)": "localized",
    "Power (kW)": "%.2f",
    "GPU energy before PUE (kWh/month)": "localized",
    "Facility energy x PUE (kWh/month)": "localized",
    "Operational (kgCO2e/month)": "%.1f",
    "Embodied, GPUs + hosts (kgCO2e/month)": "%.1f",
    "of which hosts (kgCO2e/month)": "%.1f",
    "Predicted P99 TTFT (ms)": "%.1f",
    "Predicted P99 TPOT (ms)": "%.1f",
}
_HELP = {
    "Capacity/server (req/s)": "The rate one server is planned to carry at the class's "
    "targets, after the utilisation ceiling.",
    "Full capacity/server (req/s)": "The rate one server can carry at the class's targets, "
    "before the utilisation ceiling: what Utilisation is measured against.",
    "Utilisation (%)": "The pool's rate over its servers' full capacity (before the "
    "utilisation ceiling): at most the ceiling.",
    "Planned capacity/server (req/s)": "Full capacity x the utilisation ceiling: the most one "
    "server is planned to carry.",
    "Capacity from": "The latency model (at a measured level, or interpolated between levels) "
    "or the measured rule (the best measured level meeting the targets).",
    "Power from": "measured: the server's power at the level; modelled: idle + load x (rated "
    "- idle) from the GPU table; unknown: neither.",
    "The server at that level": "Whether the server kept up with the load offered at the "
    "measured level its capacity rests on.",
}


def readable_table(table: pd.DataFrame, key: str) -> None:
    """A table of services.plan_tables, with each column's format and help."""
    config = {}
    for label in table.columns:
        if label in _FORMATS:
            config[label] = st.column_config.NumberColumn(
                label, format=_FORMATS[label], help=_HELP.get(label)
            )
        elif label in _HELP:
            config[label] = st.column_config.TextColumn(label, help=_HELP[label])
    st.dataframe(table, hide_index=True, key=key, column_config=config)


def _fleet(result: Plan, scenario: Scenario, points: pd.DataFrame) -> None:
    estimated = [p for p in result.recommended.pools if p.basis != "measured"]
    if estimated:
        st.warning(
            f"{len(estimated)} of {len(result.recommended.pools)} pools rest on estimates, not on "
            "runs of their own configuration (the Basis column says which, with each estimate's "
            "error band, and the plan rests on the band's low end). Measure them before you buy: "
            "`fleetplan collect --find-capacity` with the class's targets.",
            icon=":material/science:",
        )
        with st.expander("What an estimate is"):
            st.markdown(ESTIMATES_HELP + " More: docs/estimates.md.")
    readable_table(fleet_view(result), "table_pools")
    st.markdown("**Energy and carbon per pool**")
    readable_table(energy_view(result), "table_pool_energy")
    st.markdown("**The measured level behind each pool** (simulated, for an estimated pool)")
    traffic = {
        c.name: traffic_measured(points_for_model(points, scenario.model_of(c)), c)
        for c in scenario.classes
    }
    readable_table(levels_view(result, traffic), "table_pool_levels")
    st.markdown("**Why this fleet**")
    for line in explain(result, scenario):
        st.markdown(f"- {plain(line)}")
    for note in [*pool_notes(result), *result.notes]:
        st.caption(plain(note))


def _compared(result: Plan) -> None:
    fleets: list[FleetPlan] = [result.recommended, *result.baselines]
    cost_figure, carbon_figure = baselines_figures(fleets)
    st.plotly_chart(cost_figure, key="chart_baselines_cost")
    if carbon_figure is not None:
        st.plotly_chart(carbon_figure, key="chart_baselines_carbon")
    for base_fleet in result.baselines:
        if base_fleet.totals is None:
            st.caption(
                plain(f"{base_fleet.name}: {base_fleet.status.value} — {base_fleet.message}")
            )


def _frontier(result: Plan) -> None:
    totals = result.recommended.totals
    if result.pareto:
        between = trade_off(result)
        if between is not None:
            st.markdown(between.sentence())
        frontier = pareto_figure(
            result.pareto,
            monthly_cost_usd=totals.monthly_cost_usd,
            carbon_kgco2e_month=totals.carbon_kgco2e_month,
        )
        st.plotly_chart(frontier, key="chart_pareto")
        if result.pareto_message:
            st.caption(plain(result.pareto_message))
    else:
        st.info(
            f"No cost/carbon frontier: {result.pareto_message}. Fill the missing power or "
            "embodied figures in the GPU table to get one."
        )


def _load_curves(result: Plan, scenario: Scenario, points: pd.DataFrame) -> None:
    pools_on_curves = operating_points(result, scenario, points)
    st.plotly_chart(operating_points_figure(pools_on_curves, "ttft"), key="chart_pool_ttft")
    st.plotly_chart(operating_points_figure(pools_on_curves, "tpot"), key="chart_pool_tpot")
    st.caption(
        "Stars: each pool's planned load per server and the P99 its configuration's curve "
        "predicts there (no star: the curve says nothing at that load). Dotted lines: the "
        "capacity at the class's targets before the utilisation ceiling; the curve ends at "
        "the highest rate the server kept up with."
    )


# The plan's files: (label, build(plan, inputs), file name, MIME type, key, help).
PLAN_FILES = (
    (
        "Download plan (CSV)",
        lambda plan, _: exports.plan_csv(plan),
        "fleetplan-plan.csv",
        "text/csv",
        "download_plan_csv",
        "Every pool, recommended and baselines, one row each (a day plan: each configuration "
        "the day reserves or rents, and each compared fleet's day).",
    ),
    (
        "Download fleet (CSV)",
        lambda plan, _: exports.fleet_csv(plan),
        "fleetplan-fleet.csv",
        "text/csv",
        "download_fleet_csv",
        "The recommended fleet alone, with a TOTAL row (GPUs, servers, $/month, kgCO2e/month; "
        "a day plan: the day's fleet, servers hour by hour, the day's cost and carbon).",
    ),
    (
        "Download sources (CSV)",
        exports.sources_csv,
        "fleetplan-sources.csv",
        "text/csv",
        "download_sources_csv",
        "Every price, power, embodied and site figure the plan rests on, with where it came from.",
    ),
    (
        "Download workbook (XLSX)",
        workbook.plan_xlsx,
        "fleetplan-plan.xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "download_plan_xlsx",
        "Sheets fleet, baselines, inputs and sources (a day plan: fleet, schedule, compared, "
        "inputs and sources).",
    ),
    (
        "Download plan (JSON)",
        exports.plan_json,
        "fleetplan-plan.json",
        "application/json",
        "download_plan_json",
        "The whole plan, with its inputs and their sources in 'inputs'.",
    ),
)


# The files that hold the cost/carbon frontier: built from the plan with it (planned when the
# file is asked for, unless the frontier's tab planned it already).
WITH_FRONTIER = {"download_plan_json"}


def downloads(
    result: Plan | None,
    scenario: Scenario,
    column,
    with_frontier: Callable[[], Plan],
) -> None:
    """The plan's files (where there is a fleet) and the scenario (JSON) to download: the files
    `fleetplan plan --csv/--fleet-csv/--sources-csv/--xlsx/--json` writes. Each is built when
    its button is clicked, not on every run of the page. No download button re-runs the page
    (`on_click="ignore"`): a run gives every file built on click a new id and forgets the old,
    so a second download clicked while the page still showed the first run's buttons failed
    ("Deferred file ... not found"), which is how the workbook after the scenario got lost."""
    planned = result is not None and (
        result.day.cost_usd is not None if result.day else result.recommended.totals is not None
    )
    if planned:
        tables = {"catalog": data.catalog(), "prices": data.prices(), "regions": data.regions()}
        inputs: dict = {}

        def built(make, frontier: bool):
            def build():
                if not inputs:  # once per run of the page, whichever file is asked for first
                    inputs.update(exports.plan_inputs(scenario, **tables))
                whole = with_frontier() if frontier else result
                return make(whole, inputs)

            return build

        for label, make, name, mime, key, help_text in PLAN_FILES:
            column[0].download_button(
                label,
                data=built(make, key in WITH_FRONTIER),
                file_name=name,
                mime=mime,
                key=key,
                icon=":material/download:",
                help=help_text,
                on_click="ignore",
            )
    column[1].download_button(
        "Download scenario (JSON)",
        data=scenario.model_dump_json(indent=1),
        file_name="fleetplan-scenario.json",
        mime="application/json",
        key="download_scenario",
        icon=":material/download:",
        on_click="ignore",  # see `downloads`
    )
