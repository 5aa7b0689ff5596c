"""The Plan page with availability (issue 23), through Streamlit's AppTest on the sample data: a
loaded scenario with flaky hosts shows servers needed and planned, the chance each pool carries
its load, one host lost and the classes' attainment, and offers the router configuration."""

from __future__ import annotations

import json

import pytest
import yaml
from streamlit.testing.v1 import AppTest

from fleetplan.warehouse.db import ENV_VAR
from tests.support.paths import MAIN

# Every test runs the dashboard in AppTest (tens of seconds each): slow, out of `make test-fast`.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_caches")]


def test_the_plan_page_says_the_risk_and_offers_the_router_config(
    monkeypatch, sample_warehouse_path
):
    monkeypatch.setenv(ENV_VAR, str(sample_warehouse_path))
    at = AppTest.from_file(MAIN, default_timeout=180).run()
    assert not at.exception, at.exception
    assert not [h for h in at.subheader if h.value == "Hosts that disappear"]  # none asked yet
    raw = at.session_state["s_current"].model_dump(mode="json")
    for offer in raw["gpus"]:
        offer["availability"] = 0.95 if offer["gpu_model"] == "rtx-4090" else 0.999
    for cls in raw["classes"]:
        cls["attainment"] = 0.999
    at.file_uploader(key="w_scenario_file").set_value(
        ("s.json", json.dumps(raw).encode(), "application/json")
    ).run()
    assert not at.exception, at.exception
    assert [h for h in at.subheader if h.value == "Hosts that disappear"]
    table = next(df.value for df in at.dataframe if "Needed" in df.value.columns)
    assert {"Planned", "Chance it carries its load", "One host lost"} <= set(table.columns)
    result = at.session_state["s_result"]
    assert all(c.attainment >= 0.999 for c in result.recommended.classes)
    assert (table["Planned"] >= table["Needed"]).all()
    words = " ".join(m.value for m in at.markdown)
    assert "served at its targets with probability" in words
    assert any("spare servers cost" in c.value for c in at.caption)
    from fleetplan.services.router_config import litellm_config

    config = yaml.safe_load(litellm_config(result))
    assert {d["model_name"] for d in config["model_list"]} >= {c["name"] for c in raw["classes"]}
