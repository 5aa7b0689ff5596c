"""The Streamlit dashboard: thin pages over `warehouse/` and `planner/`."""
