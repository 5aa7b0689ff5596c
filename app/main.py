"""Dashboard entry point: only routes to the pages."""

from __future__ import annotations

import sys
from pathlib import Path

import streamlit as st

# `streamlit run app/main.py` puts app/ on the path, not the project root.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

st.set_page_config(page_title="fleetplan", page_icon=":material/dns:", layout="wide")

pages = [
    st.Page("pages/benchmarks.py", title="Benchmarks", icon=":material/monitoring:", default=True),
]
st.navigation(pages).run()
