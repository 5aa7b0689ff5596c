"""The Plan page's tables and their way back to a scenario (`fleetplan.services.scenario_forms`;
no Streamlit needed)."""

from __future__ import annotations

import pandas as pd
import pytest

from fleetplan.core.errors import InputError
from fleetplan.planner import GpuFacts, Scenario
from fleetplan.services.scenario_forms import (
    classes_table,
    gpus_table,
    scenario_from_forms,
    sites_table,
)
from tests.support.planner_points import gpu, scenario

BASE = Scenario.model_validate(
    scenario(
        [
            {"name": "chat", "rate_rps": 4, "ttft_p99_ms": 300, "tpot_p99_ms": 80},
            {"name": "batch", "rate_rps": 9},
        ],
        [gpu("h100-pcie", 2.0), gpu("rtx-4090", 0.25, max_gpus=16)],
    )
)


def rebuild(classes=None, gpus=None, sites=None, **kwargs):
    return scenario_from_forms(
        BASE,
        model=BASE.model,
        classes=classes if classes is not None else classes_table(BASE),
        gpus=gpus if gpus is not None else gpus_table(BASE),
        sites=sites if sites is not None else sites_table(BASE),
        settings={},
        **kwargs,
    )


def test_unchanged_tables_give_back_the_same_scenario():
    assert rebuild() == BASE


def test_catalog_figures_fill_the_gpu_table_and_travel_with_the_scenario():
    facts = {"rtx-4090": GpuFacts("rtx-4090", rated_w=450, idle_w=21, embodied_kgco2e=150)}
    table = gpus_table(BASE, facts)
    row = table[table["gpu_model"] == "rtx-4090"].iloc[0]
    assert (row["idle_w"], row["rated_w"], row["embodied_kgco2e"]) == (21, 450, 150)
    assert pd.isna(table[table["gpu_model"] == "h100-pcie"].iloc[0]["idle_w"])  # unknown stays so
    rebuilt = rebuild(gpus=table)
    assert rebuilt.offer("rtx-4090").idle_w == 21 and rebuilt.offer("rtx-4090").max_gpus == 16


def test_shares_of_a_total_rate_become_rates():
    table = classes_table(BASE)
    table.loc[1, "rate_rps"] = None
    table.loc[1, "share_pct"] = 25
    assert rebuild(classes=table, total_rps=40).classes[1].rate_rps == 10
    with pytest.raises(InputError, match=r"Traffic classes, row 2, or % of total"):
        rebuild(classes=table)


def test_empty_rows_from_the_editor_are_ignored_and_errors_name_table_row_and_column_label():
    table = pd.concat([classes_table(BASE), pd.DataFrame([{}])], ignore_index=True)
    assert len(rebuild(classes=table).classes) == 2
    bad = classes_table(BASE)
    bad.loc[0, "rate_rps"] = -3
    with pytest.raises(InputError) as caught:
        rebuild(classes=bad)
    assert caught.value.field == "Traffic classes, row 1, Rate (req/s)"
    sites = sites_table(BASE)
    sites.loc[0, "pue"] = 0.5
    with pytest.raises(InputError, match="Sites, row 1, PUE"):
        rebuild(sites=sites)
    gpus = gpus_table(BASE)
    gpus.loc[0, "gpu_model"] = "Quantum 9"
    with pytest.raises(InputError, match="GPUs on offer, row 1, GPU"):
        rebuild(gpus=gpus)
