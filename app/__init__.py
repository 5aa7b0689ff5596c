"""The Streamlit dashboard (`fleetplan app`): thin pages over fleetplan/services/, planner/ and
warehouse/. Pages draw; they do not decide.

- `main.py`: the entry point Streamlit runs; it only routes to the pages.
- `views/`: one script per page (not `pages/`: Streamlit would route a first request to such a
  folder itself, around `main.py`); the list of pages (path, title, icon) is `views/__init__.py`'s
  `PAGES`, read by the router, the tests and the benchmark.
- `data.py`: the warehouse connection and Streamlit's caches over queries and plans; nothing else.
- `style.py`: the shared look (one colour per GPU model on every chart).
- `charts.py`: figures that take more than a call or two (the load curves, the plan's
  comparisons), built from what services compute; a page passes them to `st.plotly_chart`;
  `day_charts.py`: the day plan's servers through the day; `replay_charts.py`: a trace
  replay's P99s hour by hour.
- `plan_inputs.py`, `plan_state.py`, `plan_results.py`, `plan_day.py` (a day: its tables and
  its plan), `plan_availability.py`, `plan_carry.py`, `plan_replay.py` (a request log replayed): the
  Plan page's parts.

To add a page: write `views/NAME.py` and add it to `PAGES`. Keep the page to widgets and charts:
whatever it computes (filtering, validation, defaults, unit costs, missing-value handling) goes
into a function in fleetplan/services/ (or planner/, warehouse/) with a test that needs no
Streamlit, and the page calls it. Widget keys (`key=`) are what tests/test_app.py finds elements
by; keep them when you change a page.
"""
