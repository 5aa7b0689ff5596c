"""The dashboard's access to the warehouse: one connection per process, cached queries."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fleetplan.errors import WarehouseError
from warehouse.db import Warehouse, resolve_path
from warehouse.queries import benchmark_points


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


@st.cache_data(show_spinner=False, ttl=60)
def points() -> pd.DataFrame:
    return benchmark_points(warehouse_or_stop())
