"""Dashboard entry point: only routes to the pages."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

# `streamlit run app/main.py` puts app/ on the path, not the project root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

st.set_page_config(page_title="fleetplan", page_icon=":material/dns:", layout="wide")

pages = [
    st.Page("pages/plan.py", title="Plan", icon=":material/hub:", default=True),
    st.Page("pages/benchmarks.py", title="Benchmarks", icon=":material/monitoring:"),
    st.Page("pages/upload.py", title="Upload runs", icon=":material/upload_file:"),
    st.Page("pages/paper.py", title="Paper check", icon=":material/fact_check:"),
    st.Page("pages/data.py", title="Data", icon=":material/database:"),
]
st.navigation(pages).run()
