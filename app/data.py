"""The dashboard's access to the warehouse, and nothing else: one connection per process, and
Streamlit's caches over the warehouse's queries and over plans. What to do with the data is in
fleetplan/services/ (and planner/, warehouse/), where it is tested without Streamlit."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fleetplan.core.errors import WarehouseError
from fleetplan.planner.economics import GpuFacts
from fleetplan.planner.results import Plan
from fleetplan.services.planning import facts_from_catalog, load_scenario, plan_from_tables
from fleetplan.warehouse import queries
from fleetplan.warehouse.db import Warehouse, resolve_path


@st.cache_resource(show_spinner=False)
def warehouse() -> Warehouse:
    return Warehouse.open(resolve_path())


def warehouse_or_stop() -> Warehouse:
    """The warehouse, or a clear message on the page (busy, unreadable) and the page stops."""
    try:
        return warehouse()
    except WarehouseError as error:
        st.error(f"The warehouse cannot be opened. {error}", icon=":material/error:")
        st.stop()
        raise  # unreachable: st.stop() raises


def refresh() -> None:
    """After the warehouse changed (an upload, a deletion): drop cached query results."""
    st.cache_data.clear()


@st.cache_data(show_spinner=False, ttl=300)
def points() -> pd.DataFrame:
    return queries.benchmark_points(warehouse_or_stop())


@st.cache_data(show_spinner=False, ttl=300)
def run_origins() -> dict[str, str]:
    return queries.run_origins(warehouse_or_stop())


@st.cache_data(show_spinner=False, ttl=300)
def catalog() -> pd.DataFrame:
    return queries.gpu_catalog(warehouse_or_stop())


@st.cache_data(show_spinner=False, ttl=300)
def prices() -> pd.DataFrame:
    return queries.gpu_prices(warehouse_or_stop())


@st.cache_data(show_spinner=False, ttl=300)
def regions() -> pd.DataFrame:
    return queries.regions(warehouse_or_stop())


@st.cache_data(show_spinner=False, ttl=300)
def sources() -> pd.DataFrame:
    return queries.sources(warehouse_or_stop())


@st.cache_data(show_spinner=False, ttl=300)
def counts() -> dict[str, int]:
    return queries.counts(warehouse_or_stop())


def facts() -> dict[str, GpuFacts]:
    return facts_from_catalog(catalog())


@st.cache_data(show_spinner=False, max_entries=64)
def plan_for(scenario_json: str) -> Plan:
    """Plans are cached by scenario (its JSON is the cache key): going back to an earlier input
    is instant. Planned as `fleetplan plan` plans, from the same tables."""
    scenario = load_scenario(scenario_json.encode(), name="scenario")
    return plan_from_tables(scenario, points(), catalog())
