"""Dashboard entry point: only routes to the pages (`fleetplan.app.views.PAGES`)."""

from __future__ import annotations

import streamlit as st

from fleetplan.app import data
from fleetplan.app.views import navigation

st.set_page_config(page_title="fleetplan", page_icon=":material/dns:", layout="wide")
page = navigation()
if data.read_only():
    st.sidebar.caption(":material/lock: Read-only: uploading and deleting runs are turned off.")
page.run()
