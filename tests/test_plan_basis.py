"""One basis per figure (issue 15): energy before and after PUE in their own columns, utilisation
beside the capacity it is measured against, sites that carry their grid basis and a plan that
warns when they mix; an unknown model is bad input naming the models there are; an offered GPU
without measurements is said to be left out; no stray spaces in the text report."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from fleetplan.planner import GpuFacts, Scenario, plan
from fleetplan.planner.report.table import POOL_COLUMNS, summary
from fleetplan.services.exports import plan_inputs, sources_table
from fleetplan.services.plan_tables import energy_view
from fleetplan.services.planning import plan_from_tables
from fleetplan.services.scenario_defaults import default_scenario
from tests.support.paths import MAIN, ROOT
from tests.support.planner_points import gpu, level, points, scenario

EXAMPLE = ROOT / "examples" / "chat-batch-qwen14b.json"
FACTS = {
    "h100-pcie": GpuFacts(
        "h100-pcie", rated_w=350, idle_w=50, embodied_kgco2e=170, lifetime_years=5
    )
}
POINTS = points(("h100-pcie", 1, [level(1, 1), level(4, 4)]))
SITE = {"electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 300, "pue": 1.5}


def test_energy_and_capacity_columns_say_their_basis():
    sc = scenario(
        [{"name": "batch", "rate_rps": 6}],
        [gpu("h100-pcie", 2.0) | {"electricity_included": False}],
        sites=[{"name": "dc", **SITE}],
        max_utilization=0.75,
    )
    result = plan(Scenario.model_validate(sc), POINTS, FACTS, pareto_points=0)
    (pool,) = result.recommended.pools
    # capacity 4 req/s before the ceiling, 3 after it: two servers carry 6 req/s
    assert pool.full_capacity_rps_per_server == pytest.approx(4)
    assert pool.capacity_rps_per_server == pytest.approx(3)
    assert pool.servers == 2 and pool.utilization == pytest.approx(6 / (2 * 4))
    # energy before PUE, and with it: cost and carbon rest on the latter
    assert pool.facility_energy_kwh_month == pytest.approx(pool.gpu_energy_kwh_month * 1.5)
    assert pool.operational_kgco2e_month == pytest.approx(
        pool.facility_energy_kwh_month * 300 / 1000
    )
    energy_usd = pool.facility_energy_kwh_month * 0.1
    assert pool.monthly_cost_usd == pytest.approx(2 * 2.0 * 730 + energy_usd)
    totals = result.recommended.totals
    assert totals.facility_energy_kwh_month == pytest.approx(totals.gpu_energy_kwh_month * 1.5)
    # adjacent columns share a basis: utilisation sits right after the capacity it is against
    columns = list(POOL_COLUMNS)
    assert "energy_kwh_month" not in columns
    assert columns.index("utilization") == columns.index("full_capacity_rps_per_server") + 1
    assert columns.index("facility_energy_kwh_month") == columns.index("gpu_energy_kwh_month") + 1
    view = energy_view(result)
    assert {"GPU energy before PUE (kWh/month)", "Facility energy x PUE (kWh/month)"} <= set(view)


def _two_sites(basis_dc: str | None, basis_home: str | None) -> Scenario:
    raw = json.loads(EXAMPLE.read_text())
    sites = []
    for site in raw["sites"]:
        basis = basis_dc if site is raw["sites"][0] else basis_home
        sites.append(site | ({"grid_basis": basis} if basis else {}))
    return Scenario.model_validate(raw | {"sites": sites})


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_plan_whose_sites_mix_grid_bases_warns(sample_tables):
    mixed = plan_from_tables(
        _two_sites("direct", "lifecycle"), sample_tables["points"], sample_tables["catalog"]
    )
    warning = [n for n in mixed.notes if n.startswith("grid carbon intensity mixes bases")]
    assert len(warning) == 1 and "direct: " in warning[0] and "lifecycle: " in warning[0]
    assert "grid carbon intensity mixes bases" in summary(mixed)
    inputs = plan_inputs(_two_sites("direct", "lifecycle"), **_reference(sample_tables))
    assert [s["grid_basis"] for s in inputs["sites"]] == ["direct", "lifecycle"]
    notes = sources_table(mixed, inputs).query("figure == 'note'")["value"]
    assert any(note.startswith("grid carbon intensity mixes bases") for note in notes)
    same = plan_from_tables(
        _two_sites("lifecycle", "lifecycle"), sample_tables["points"], sample_tables["catalog"]
    )
    assert not any("mixes bases" in n for n in same.notes)


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_default_scenario_carries_its_regions_bases_and_warns_of_the_mix(sample_tables):
    # us-va (EPA eGRID, direct) for the datacenter, us (Ember, lifecycle) for homes
    sc = default_scenario(
        sample_tables["points"],
        sample_tables["catalog"],
        sample_tables["prices"],
        sample_tables["regions"],
    )
    assert {s.name: s.grid_basis for s in sc.sites} == {
        "datacenter": "direct",
        "consumer": "lifecycle",
    }
    result = plan_from_tables(sc, sample_tables["points"], sample_tables["catalog"])
    assert any(n.startswith("grid carbon intensity mixes bases") for n in result.notes)


def _reference(sample_tables) -> dict[str, pd.DataFrame]:
    return {k: sample_tables[k] for k in ("catalog", "prices", "regions")}


def test_an_unknown_model_is_bad_input_naming_it_and_the_models_there_are(
    cli, tmp_path, sample_warehouse_path
):
    raw = json.loads(EXAMPLE.read_text()) | {"model": "acme/no-such-model"}
    path = tmp_path / "unknown.json"
    path.write_text(json.dumps(raw))
    done = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", path)
    assert done.returncode == 1, done.stderr  # bad input, not "infeasible" (2)
    assert "'acme/no-such-model'" in done.stderr
    assert "DeepSeek-R1-Distill-Qwen-14B" in done.stderr  # a model that is there
    assert "Traceback" not in done.stderr


def test_an_offered_gpu_without_measurements_is_said_to_be_left_out(sample_tables):
    raw = json.loads(EXAMPLE.read_text())
    offer = {"gpu_model": "l40s", "hourly_usd": 1.0, "site": raw["gpus"][0]["site"]}
    sc = Scenario.model_validate(raw | {"gpus": [*raw["gpus"], offer]})
    result = plan_from_tables(sc, sample_tables["points"], sample_tables["catalog"])
    left_out = [n for n in result.notes if n.startswith("l40s is offered but has no benchmark")]
    assert len(left_out) == 1 and sc.model in left_out[0]
    assert "l40s is offered but has no benchmark results" in summary(result)
    assert "l40s" not in result.recommended.totals.gpus


def test_the_text_report_has_no_stray_spaces(sample_tables):
    result = plan_from_tables(
        _two_sites(None, None), sample_tables["points"], sample_tables["catalog"]
    )
    text = summary(result)
    assert "embodied" in text
    assert not re.search(r"\S +[,)]", text), [
        line for line in text.splitlines() if re.search(r"\S +[,)]", line)
    ]
    assert not any(line != line.rstrip() for line in text.splitlines())


def test_the_plan_page_shows_the_mix_and_the_energy_bases(monkeypatch, sample_warehouse_path):
    from streamlit.testing.v1 import AppTest

    from fleetplan.warehouse.db import ENV_VAR

    monkeypatch.setenv(ENV_VAR, str(sample_warehouse_path))
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    captions = [c.value for c in at.caption]
    assert any(c.startswith("grid carbon intensity mixes bases") for c in captions), captions
    energy = next(
        d.value for d in at.dataframe if "Facility energy x PUE (kWh/month)" in d.value.columns
    )
    assert "GPU energy before PUE (kWh/month)" in energy.columns
    assert energy["of which hosts (kgCO2e/month)"].notna().all()
    shown = at.session_state["s_current"]
    assert {s.grid_basis for s in shown.sites} == {"direct", "lifecycle"}
