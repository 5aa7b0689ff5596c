"""Servers and capacity intervals on the pages, through Streamlit's AppTest: the Upload page's
Variant field labels the runs it imports; the Plan page plans on the capacity end its "Plan on
capacity's" input names and shows each capacity's interval and server."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from fleetplan.warehouse.db import ENV_VAR, Warehouse
from tests.support.pages import open_tab
from tests.support.paths import MAIN
from tests.test_server_identity import run_file

# Every test runs the dashboard in AppTest (tens of seconds each): slow, out of `make test-fast`.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_caches")]


def test_the_upload_pages_variant_labels_the_runs_it_imports(monkeypatch, warehouse_path):
    monkeypatch.setenv(ENV_VAR, str(warehouse_path))
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    at.switch_page("views/upload.py").run()
    assert not at.exception, at.exception
    at.text_input(key="w_upload_variant").set_value("prefix-caching").run()
    data = json.dumps(run_file(4.0)).encode()
    at.file_uploader(key="w_upload_files").set_value([("mine.json", data, "application/json")])
    at.run()
    assert not at.exception, at.exception
    at.button(key="w_upload_commit").click().run()
    assert not at.exception, at.exception
    with Warehouse.open(warehouse_path, read_only=True) as warehouse:
        stored = warehouse.cursor().execute("SELECT variant FROM runs").fetchall()
    assert stored == [("prefix-caching",)]


def test_the_plan_page_plans_on_the_end_asked_for_and_shows_intervals(
    monkeypatch, sample_warehouse_path
):
    monkeypatch.setenv(ENV_VAR, str(sample_warehouse_path))
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    assert not at.exception, at.exception
    assert at.session_state["s_current"].capacity_at == "low"
    (end,) = [r for r in at.radio if r.label == "Plan on capacity's"]
    assert end.value == "low"
    end.set_value("high").run()
    assert not at.exception, at.exception
    assert at.session_state["s_current"].capacity_at == "high"
    (fleet,) = [df.value for df in at.dataframe if "Capacity interval (req/s)" in df.value.columns]
    assert "Overlaps with" not in fleet.columns  # the fleet's table (its tab is open first)
    open_tab(at, "Capacities")
    (capacities,) = [
        df.value for df in at.dataframe if "Capacity interval (req/s)" in df.value.columns
    ]
    assert "Overlaps with" in capacities.columns
    # the io.net servers: one vLLM over all GPUs of the host
    assert capacities["Engine / variant"].str.fullmatch(r"vllm 0\.8\.5, float16, TP \d").all()
    assert capacities["Capacity interval (req/s)"].str.len().gt(0).any()
