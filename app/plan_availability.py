"""The Plan page's availability part (issue 23): per pool the servers needed and planned, the
chance it carries its load and what one host lost does; each class's attainment; what the
redundancy costs beside the all-H100 fleet; and the plan's routing as a router configuration to
download. Shown only for a plan with availability; the words are planner.availability.summary's,
the files services.router_config's."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fleetplan.planner.availability.probability import one_host_lost
from fleetplan.planner.availability.summary import has_availability, redundancy_sentence
from fleetplan.planner.peak.results import Plan
from fleetplan.services.plain_text import plain
from fleetplan.services.router_config import litellm_config, routing_json


def availability_view(result: Plan) -> pd.DataFrame:
    rows = []
    for pool in result.recommended.pools:
        lost = one_host_lost(pool.servers, pool.rate_rps, pool.capacity_rps_per_server)
        rows.append(
            {
                "Class": pool.traffic_class,
                "Servers": f"{pool.gpus_per_server}x {pool.gpu_model}",
                "Needed": pool.servers_needed,
                "Planned": pool.servers,
                "Host up (share of time)": pool.availability,
                "Chance it carries its load": pool.probability,
                "One host lost": lost.sentence(),
            }
        )
    return pd.DataFrame(rows)


def show_availability(result: Plan) -> None:
    """Nothing for a plan without availability."""
    if not has_availability(result) or result.recommended.totals is None:
        return
    st.subheader("Hosts that disappear")
    st.dataframe(availability_view(result), hide_index=True, key="table_availability")
    for c in result.recommended.classes or []:
        target = "none asked" if c.attainment_target is None else f"{c.attainment_target:g}"
        how = "its pools together (fallback)" if c.fallback else "each pool its own share"
        st.markdown(
            plain(
                f"- **{c.traffic_class}**: served at its targets with probability "
                f"{c.attainment:.6f} (target {target}; {how})"
            )
        )
    redundancy = redundancy_sentence(result)
    if redundancy:
        st.caption(plain(f"Redundancy: {redundancy}."))
    st.caption(
        "Servers are taken to fail independently: a provider-wide outage is outside this "
        "estimate (enter a lower availability to cover it). Check by simulation: fleetplan "
        "simulate --plan fleetplan-plan.json."
    )


def router_downloads(result: Plan | None, column, models: dict[str, str]) -> None:
    """The plan's routing as a LiteLLM proxy configuration and as a plain table (a day plan's:
    the day's pools), each class to its model (`models`)."""
    if result is None:
        return
    planned = result.day.cost_usd is not None if result.day else result.recommended.totals
    if not planned:
        return
    column.download_button(
        "Download router config (LiteLLM)",
        data=litellm_config(result, models),
        file_name="fleetplan-litellm.yaml",
        mime="application/x-yaml",
        key="download_router_litellm",
        icon=":material/download:",
        on_click="ignore",  # no re-run (app/plan_results.downloads)
        help="One deployment per pool, weighted by its planned share (a day plan: of its class's "
        "requests over the day, its servers hour by hour beside it); set each FLEETPLAN_..._URL "
        "to the pool's servers (fleetplan plan --router litellm writes the same).",
    )
    column.download_button(
        "Download routing table (JSON)",
        data=routing_json(result, models),
        file_name="fleetplan-routing.json",
        mime="application/json",
        key="download_router_json",
        icon=":material/download:",
        on_click="ignore",  # no re-run (app/plan_results.downloads)
    )
