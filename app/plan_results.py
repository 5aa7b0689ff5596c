"""The Plan page's results: headline figures, the fleet, the comparisons, the cost/carbon frontier,
the capacities and the pools on their load curves, and the downloads. Drawing only: every figure
comes from the plan (planner/) or from fleetplan/services/."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fleetplan.app.charts import baselines_figures, operating_points_figure, pareto_figure
from fleetplan.core.tabular import to_csv
from fleetplan.planner.explain import explain
from fleetplan.planner.report import pool_table
from fleetplan.planner.results import FleetPlan, Plan
from fleetplan.planner.scenario import Scenario
from fleetplan.services.load_views import operating_points


def show_plan(result: Plan, scenario: Scenario, points: pd.DataFrame) -> None:
    """The plan's results, or why there is no fleet."""
    fleet = result.recommended
    if fleet.totals is None:
        st.error(f"No fleet can serve this workload: {result.message}", icon=":material/block:")
        return
    _headline(result)
    tabs = st.tabs(["Fleet", "Compared", "Cost vs carbon", "Capacities", "Load curves"])
    with tabs[0]:
        _fleet(result, scenario)
    with tabs[1]:
        _compared(result)
    with tabs[2]:
        _frontier(result)
    with tabs[3]:
        st.dataframe(
            [row.model_dump() for row in result.capacities],
            hide_index=True,
            key="table_capacities",
        )
    with tabs[4]:
        _load_curves(result, scenario, points)


def _show(value, fmt: str, unit: str = "") -> str:
    return "unknown" if value is None else fmt.format(value) + unit


def _headline(result: Plan) -> None:
    totals = result.recommended.totals
    kpis = st.columns(5)
    kpis[0].metric("Cost per month", _show(totals.monthly_cost_usd, "${:,.0f}"))
    kpis[1].metric(
        "$ per million output tokens", _show(totals.usd_per_million_output_tokens, "${:.3f}")
    )
    kpis[2].metric(
        "$ per million total tokens", _show(totals.usd_per_million_total_tokens, "${:.3f}")
    )
    kpis[3].metric(
        "kgCO2e per month",
        _show(totals.carbon_kgco2e_month, "{:,.0f}"),
        help="Operational (energy x PUE x grid) plus embodied (amortised by calendar "
        "hours over the lifetime).",
    )
    kpis[4].metric("GPUs", " + ".join(f"{n} {g}" for g, n in totals.gpus.items()))
    if result.status.value != "optimal":
        st.warning(f"Not proven optimal: {result.message}")


POOL_COLUMNS = {
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
}


def _fleet(result: Plan, scenario: Scenario) -> None:
    table = pool_table(result, include_baselines=False)
    st.dataframe(
        table.drop(columns=["scenario", "fleet"]),
        hide_index=True,
        key="table_pools",
        column_config=POOL_COLUMNS,
    )
    st.markdown("**Why this fleet**")
    for line in explain(result, scenario):
        st.markdown(f"- {line}")
    for note in result.notes:
        st.caption(note)


def _compared(result: Plan) -> None:
    fleets: list[FleetPlan] = [result.recommended, *result.baselines]
    cost_figure, carbon_figure = baselines_figures(fleets)
    st.plotly_chart(cost_figure, key="chart_baselines_cost")
    if carbon_figure is not None:
        st.plotly_chart(carbon_figure, key="chart_baselines_carbon")
    for base_fleet in result.baselines:
        if base_fleet.totals is None:
            st.caption(f"{base_fleet.name}: {base_fleet.status.value} — {base_fleet.message}")


def _frontier(result: Plan) -> None:
    totals = result.recommended.totals
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


def downloads(result: Plan | None, scenario: Scenario, column) -> None:
    """The plan (CSV, where there is a fleet) and the scenario (JSON) to download."""
    if result is not None and result.recommended.totals is not None:
        column[0].download_button(
            "Download plan (CSV)",
            data=to_csv(pool_table(result)),
            file_name="fleetplan-plan.csv",
            mime="text/csv",
            key="download_plan_csv",
            icon=":material/download:",
        )
    column[1].download_button(
        "Download scenario (JSON)",
        data=scenario.model_dump_json(indent=1),
        file_name="fleetplan-scenario.json",
        mime="application/json",
        key="download_scenario",
        icon=":material/download:",
    )
