"""Data: the GPU catalog and region presets with their sources, and what the warehouse holds."""

from __future__ import annotations

import streamlit as st

from fleetplan.app import data
from fleetplan.services.headers import headers
from fleetplan.services.plain_text import plain
from fleetplan.warehouse.db import resolve_path

st.title("Data")
counts = data.counts()
cols = st.columns(5)
for col, (label, key) in zip(
    cols,
    [
        ("Imported files", "sources"),
        ("Runs", "runs"),
        ("Load levels", "points"),
        ("GPU models", "gpu_catalog"),
        ("Regions", "regions"),
    ],
    strict=True,
):
    col.metric(label, f"{counts[key]:,}")
mode = " (read-only: uploads and deletions are off)" if data.read_only() else ""
st.caption(f"Warehouse: {plain(resolve_path())}{mode}")


def _table(frame, key: str) -> None:
    """A reference table with readable headers (the field names stay the data's)."""
    st.dataframe(frame, hide_index=True, key=key, column_config=headers(frame.columns))


st.subheader("GPU catalog")
st.caption(
    "Every figure with its source; empty = no public source found (unknown, not zero). "
    "“[2nd]” marks a figure seen only as quoted by a third party."
)
_table(data.catalog(), "table_catalog")
st.subheader("Reference GPU prices (per GPU-hour)")
_table(data.prices(), "table_prices")
st.subheader("Region presets")
st.caption("Grid intensity bases differ (lifecycle, direct, unknown): compare like with like.")
_table(data.regions(), "table_regions")
st.subheader("Imported files")
st.dataframe(data.sources(), hide_index=True, key="table_sources")
