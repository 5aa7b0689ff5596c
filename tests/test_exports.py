"""Plan exports carry the inputs they rest on: `fleetplan plan --csv/--json` as a real process;
a reader recomputes every pool's cost, power, energy and carbon from the exported inputs alone.
And the scenario's name follows the model the page plans for."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest

from fleetplan.planner.report import POOL_COLUMNS
from fleetplan.planner.scenario import Scenario
from fleetplan.services.exports import plan_csv, plan_inputs, read_inputs
from fleetplan.services.planning import plan_from_tables
from fleetplan.services.scenario_forms import (
    classes_table,
    follow_model,
    gpus_table,
    scenario_from_forms,
    sites_table,
)
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points, gpu_catalog, gpu_prices, regions
from tests.support.processes import fleetplan

# Sites filled from region presets (us-va's figures, and the US average at PUE 1.0); the H100
# billed for its electricity (so its cost has an energy part), power from the scenario; the 4090
# at the paper's price with the catalog's power figures.
SCENARIO = {
    "name": "exports on Qwen-14B",
    "model": "DeepSeek-R1-Distill-Qwen-14B",
    "classes": [
        {"name": "realtime", "rate_rps": 6.0, "ttft_p99_ms": 100, "tpot_p99_ms": 50},
        {"name": "batch", "rate_rps": 12.0},
    ],
    "gpus": [
        {
            "gpu_model": "h100-pcie",
            "hourly_usd": 2.0,
            "site": "datacenter",
            "electricity_included": False,
            "idle_w": 60,
            "rated_w": 350,
            "embodied_kgco2e": 1500,
        },
        {"gpu_model": "rtx-4090", "hourly_usd": 0.25, "site": "consumer", "max_gpus": 64},
    ],
    "max_utilization": 0.8,
}


@pytest.fixture(scope="module")
def tables(_sample_warehouse_template):
    with Warehouse.open(_sample_warehouse_template, read_only=True) as wh:
        return {
            "points": benchmark_points(wh),
            "catalog": gpu_catalog(wh),
            "prices": gpu_prices(wh),
            "regions": regions(wh),
        }


def _scenario(tables) -> dict:
    by_id = {r["region_id"]: r for r in tables["regions"].to_dict("records")}
    sites = []
    for name, region, pue in (("datacenter", "us-va", None), ("consumer", "us", 1.0)):
        row = by_id[region]
        sites.append(
            {
                "name": name,
                "electricity_usd_per_kwh": row["electricity_usd_per_kwh"],
                "grid_gco2_per_kwh": row["grid_gco2_per_kwh"],
                "pue": pue or row["pue_default"],
            }
        )
    return {**SCENARIO, "sites": sites}


def _recompute(row: pd.Series, inputs: dict) -> dict[str, float]:
    """A pool's $/h, kW, kWh/month and kgCO2e/month from the exported inputs and the row's own
    servers, rate and measured level: what a reader of the files would do."""
    gpu = next(g for g in inputs["gpus"] if g["gpu_model"] == row["gpu_model"])
    site = next(s for s in inputs["sites"] if s["name"] == gpu["site"])
    n, servers, rate = row["gpus_per_server"], row["servers"], row["rate_rps"]
    throughput = row["level_throughput_rps"]
    if not pd.isna(row["level_power_w"]):
        fixed = n * gpu["idle_w"] / 1000
        per_rps = max(row["level_power_w"] / 1000 - fixed, 0) / throughput
    else:
        fixed = n * gpu["idle_w"] / 1000
        per_rps = n * (gpu["rated_w"] - gpu["idle_w"]) / 1000 / throughput
    power = servers * fixed + rate * per_rps
    cost = servers * n * gpu["usd_per_gpu_hour"]
    if not gpu["electricity_included"]:
        cost += power * site["pue"] * site["electricity_usd_per_kwh"]
    hours = inputs["hours_per_month"]
    embodied = host = 0.0
    if gpu["include_embodied"]:
        amortised = gpu["lifetime_years"] * inputs["hours_per_year"]
        host_kg = gpu["host_embodied_kgco2e_per_server"] or n * gpu["host_embodied_kgco2e_per_gpu"]
        host = servers * host_kg / amortised * hours
        embodied = servers * n * gpu["embodied_kgco2e"] / amortised * hours + host
    return {
        "hourly_cost_usd": cost,
        "power_kw": power,
        "gpu_energy_kwh_month": power * hours,
        "facility_energy_kwh_month": power * hours * site["pue"],
        "operational_kgco2e_month": power * hours * site["pue"] * site["grid_gco2_per_kwh"] / 1000,
        "embodied_kgco2e_month": embodied,
        "host_embodied_kgco2e_month": host,
        "utilization": rate / (servers * row["full_capacity_rps_per_server"]),
        "capacity_rps_per_server": row["full_capacity_rps_per_server"]
        * inputs["scenario"]["max_utilization"],
    }


def test_the_cli_exports_carry_the_inputs_and_every_row_can_be_recomputed(
    tmp_path, sample_warehouse_path, tables
):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_scenario(tables)))
    out_csv, out_json = tmp_path / "p.csv", tmp_path / "p.json"
    done = fleetplan("plan", "--warehouse", sample_warehouse_path, "--scenario", path,
                     "--csv", out_csv, "--json", out_json, check=True)  # fmt: skip
    assert "Trade-off: " in done.stdout  # cheapest against cleanest, in one sentence
    text = out_csv.read_text()
    assert text.startswith("# fleetplan plan: one row per pool")
    rows = pd.read_csv(out_csv, comment="#")
    assert list(rows.columns) == list(POOL_COLUMNS)
    plan = json.loads(out_json.read_text())
    pools = len(plan["recommended"]["pools"]) + sum(len(b["pools"]) for b in plan["baselines"])
    assert len(rows) == pools  # still one row per pool
    inputs = read_inputs(text)
    assert inputs == plan["inputs"]
    assert Scenario.model_validate(inputs["scenario"]) == Scenario.model_validate(_scenario(tables))
    assert "unknown" not in set(rows["energy_basis"])  # every pool's power is computed
    for _, row in rows.iterrows():
        for column, value in _recompute(row, inputs).items():
            assert row[column] == pytest.approx(value, rel=2e-4, abs=2e-3), (column, row["class"])
    # where the figures came from, in the files and in words
    gpus = {g["gpu_model"]: g for g in inputs["gpus"]}
    assert gpus["rtx-4090"]["price_source"].startswith("io.net (AIBC 2025 paper), 2025-05")
    assert gpus["h100-pcie"]["idle_w_source"] == "the scenario"
    assert gpus["rtx-4090"]["idle_w_source"].startswith("catalog: ")
    sites = {s["name"]: s for s in inputs["sites"]}
    assert sites["datacenter"]["grid_source"].startswith("region preset us-va")
    assert sites["consumer"]["grid_basis"] == "lifecycle"
    assert sites["consumer"]["pue_source"].startswith("entered: 1.0")
    assert "# site datacenter: electricity $" in text and "from region preset us-va" in text


def test_the_csv_stays_readable_with_hostile_names(tables):
    raw = _scenario(tables)
    # (a newline in a name is refused since issue 14: tests/test_hardening_inputs.py)
    raw["name"] = "#team, =sum(A1) plan; second part"
    raw["classes"][1]["name"] = "batch #2,=cmd"
    scenario = Scenario.model_validate(raw)
    plan = plan_from_tables(scenario, tables["points"], tables["catalog"])
    inputs = plan_inputs(
        scenario, catalog=tables["catalog"], prices=tables["prices"], regions=tables["regions"]
    )
    text = plan_csv(plan, inputs)
    header = [line for line in text.splitlines() if line.startswith("#")]
    rows = pd.read_csv(io.StringIO(text), comment="#")
    assert len(rows) == len(plan.recommended.pools) + sum(len(b.pools) for b in plan.baselines)
    assert "batch #2,=cmd" in set(rows["class"])
    assert set(rows["scenario"]) == {"#team, =sum(A1) plan; second part"}
    # no header line lets a spreadsheet cell start with a formula, none spills onto a row
    for line in header:
        assert ",=" not in line and ", =" not in line
    assert read_inputs(text)["scenario"]["classes"][1]["name"] == "batch #2,=cmd"
    assert sum(not line.startswith("#") for line in text.split("\n")[: len(header)]) == 0


DEFAULT = "chatbot + batch eval on "


@pytest.mark.parametrize(
    ("name", "old", "new", "expected"),
    [
        (DEFAULT + "Qwen-14B", "org/Qwen-14B", "meta/Llama-8B", DEFAULT + "Llama-8B"),
        ("our plan", "org/Qwen-14B", "meta/Llama-8B", "our plan"),
        ("x on Qwen-14B", "org/Qwen-14B", "org/Qwen-14B", "x on Qwen-14B"),
    ],
)
def test_a_default_name_follows_the_model(name, old, new, expected):
    assert follow_model(name, old_model=old, new_model=new) == expected


def test_changing_the_model_on_the_page_renames_the_scenario(tables):
    """The stale name: the page built the scenario from the previous one's name, which named
    the previous model; the exports carried it."""
    raw = _scenario(tables) | {"name": "chatbot + batch eval on DeepSeek-R1-Distill-Qwen-14B"}
    base = Scenario.model_validate(raw)
    other = "meta-llama/Llama-3.1-8B-Instruct"
    changed = scenario_from_forms(
        base,
        model=other,
        classes=classes_table(base),
        gpus=gpus_table(base),
        sites=sites_table(base),
        settings={},
    )
    assert changed.name == "chatbot + batch eval on Llama-3.1-8B-Instruct"
