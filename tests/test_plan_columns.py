"""Every column of the Plan page's three tables has a column configuration with the label the
page shows (issue 24: `attainment`, `fallback` and `availability` showed as raw field names),
and the availability columns keep the scenario's bounds."""

from __future__ import annotations

import pytest

from fleetplan.app.plan_columns import class_columns, gpu_columns, site_columns
from fleetplan.planner import Scenario
from fleetplan.planner.scenario.parts import MAX_ATTAINMENT, MIN_AVAILABILITY
from fleetplan.services.scenario_forms import (
    CLASS_LABELS,
    GPU_LABELS,
    SITE_LABELS,
    classes_table,
    gpus_table,
    sites_table,
)
from tests.support.paths import ROOT

SCENARIO = Scenario.model_validate_json((ROOT / "examples" / "chat-batch-qwen14b.json").read_text())


@pytest.mark.parametrize(
    ("table", "columns", "labels"),
    [
        (classes_table(SCENARIO), class_columns([]), CLASS_LABELS),
        (gpus_table(SCENARIO), gpu_columns(SCENARIO), GPU_LABELS),
        (sites_table(SCENARIO), site_columns(SCENARIO), SITE_LABELS),
    ],
    ids=["classes", "gpus", "sites"],
)
def test_every_column_of_a_plan_table_is_shown_by_its_label(table, columns, labels):
    assert len(table.columns) > 0  # a loop over nothing asserts nothing
    for name in table.columns:
        assert name in columns, f"{name} has no column configuration: its raw name would show"
        assert columns[name]["label"] == labels[name] != name


def test_the_availability_columns_keep_the_scenarios_bounds():
    attainment, availability = (
        class_columns([])["attainment"],
        gpu_columns(SCENARIO)["availability"],
    )
    assert attainment["type_config"]["max_value"] == MAX_ATTAINMENT
    assert availability["type_config"]["min_value"] == MIN_AVAILABILITY
    assert availability["type_config"]["max_value"] == 1.0
    assert class_columns([])["fallback"]["type_config"]["type"] == "checkbox"
