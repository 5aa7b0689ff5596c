"""Plan exports a purchase request can use: `fleetplan plan --csv/--fleet-csv/--sources-csv/--xlsx/
--json` as a real process; every CSV has its header first (Python's csv module and pandas' defaults
read it), the workbook reads back with openpyxl, the fleet's TOTAL row adds up, and a reader
recomputes every pool's cost, power, energy and carbon from the exported inputs alone.
And the scenario's name follows the model the page plans for."""

from __future__ import annotations

import csv
import io
import json

import openpyxl
import pandas as pd
import pytest

from fleetplan.planner.report.table import POOL_COLUMNS
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.services.exports import plan_csv, plan_inputs, sources_csv
from fleetplan.services.planning import plan_from_tables
from fleetplan.services.scenario_forms import (
    classes_table,
    follow_model,
    gpus_table,
    scenario_from_forms,
    sites_table,
)
from fleetplan.services.workbook import plan_xlsx

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


def _scenario(sample_tables) -> dict:
    by_id = {r["region_id"]: r for r in sample_tables["regions"].to_dict("records")}
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


def _read_csv(path) -> tuple[list[str], list[dict[str, str]]]:
    """A CSV as Python's csv module reads it: (the first line's fields, the rows after it)."""
    with open(path, newline="", encoding="utf-8") as file:
        lines = list(csv.reader(file))
    return lines[0], [dict(zip(lines[0], line, strict=True)) for line in lines[1:]]


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_cli_exports_carry_the_inputs_and_every_row_can_be_recomputed(
    cli, tmp_path, sample_warehouse_path, sample_tables
):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(_scenario(sample_tables)))
    out = {name: tmp_path / name for name in ("p.csv", "f.csv", "s.csv", "p.xlsx", "p.json")}
    done = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", path,
                     "--csv", out["p.csv"], "--fleet-csv", out["f.csv"], "--sources-csv",
                     out["s.csv"], "--xlsx", out["p.xlsx"], "--json", out["p.json"],
                     check=True)  # fmt: skip
    assert "Trade-off: " in done.stdout  # cheapest against cleanest, in one sentence
    # RFC 4180: the header is the first line, for the csv module and for pandas' defaults
    header, _ = _read_csv(out["p.csv"])
    assert header == list(POOL_COLUMNS) and "#" not in out["p.csv"].read_text()[:1]
    rows = pd.read_csv(out["p.csv"])
    assert list(rows.columns) == list(POOL_COLUMNS)
    plan = json.loads(out["p.json"].read_text())
    pools = len(plan["recommended"]["pools"]) + sum(len(b["pools"]) for b in plan["baselines"])
    assert len(rows) == pools  # still one row per pool
    inputs = plan["inputs"]  # the inputs and their sources: in the JSON
    assert Scenario.model_validate(inputs["scenario"]) == Scenario.model_validate(
        _scenario(sample_tables)
    )
    assert "unknown" not in set(rows["energy_basis"])  # every pool's power is computed
    for _, row in rows.iterrows():
        recomputed = _recompute(row, inputs)
        assert len(recomputed) > 0  # a loop over nothing asserts nothing
        for column, value in recomputed.items():
            assert row[column] == pytest.approx(value, rel=2e-4, abs=2e-3), (column, row["class"])
    # where the figures came from, in the JSON and in the sources CSV
    gpus = {g["gpu_model"]: g for g in inputs["gpus"]}
    assert gpus["rtx-4090"]["price_source"].startswith("io.net (AIBC 2025 paper), 2025-05")
    assert gpus["h100-pcie"]["idle_w_source"] == "the scenario"
    assert gpus["rtx-4090"]["idle_w_source"].startswith("catalog: ")
    sites = {s["name"]: s for s in inputs["sites"]}
    assert sites["datacenter"]["grid_source"].startswith("region preset us-va")
    assert sites["consumer"]["grid_basis"] == "lifecycle"
    assert sites["consumer"]["pue_source"].startswith("entered: 1.0")
    header, sources = _read_csv(out["s.csv"])
    assert header == ["item", "figure", "value", "unit", "source"]
    by_figure = {(r["item"], r["figure"]): r for r in sources}
    electricity = by_figure[("site datacenter", "electricity price")]
    assert electricity["source"].startswith("region preset us-va")
    assert float(electricity["value"]) == sites["datacenter"]["electricity_usd_per_kwh"]
    assert by_figure[("GPU h100-pcie at datacenter", "idle_w")]["source"] == "the scenario"
    assert list(pd.read_csv(out["s.csv"]).columns) == header
    # the recommended fleet alone, with a TOTAL row that adds up
    fleet = pd.read_csv(out["f.csv"])
    totals = plan["recommended"]["totals"]
    (total,) = fleet[fleet["class"] == "TOTAL"].to_dict("records")
    pools = fleet[fleet["class"] != "TOTAL"]
    assert set(pools["fleet"]) == {plan["recommended"]["name"]}
    assert len(pools) == len(plan["recommended"]["pools"])
    assert total["gpus"] == pools["gpus"].sum() == sum(totals["gpus"].values())
    assert total["servers"] == pools["servers"].sum() == totals["servers"]
    assert total["monthly_cost_usd"] == pytest.approx(pools["monthly_cost_usd"].sum(), abs=0.02)
    assert total["monthly_cost_usd"] == pytest.approx(totals["monthly_cost_usd"], abs=0.01)
    assert total["carbon_kgco2e_month"] == pytest.approx(totals["carbon_kgco2e_month"], abs=1e-3)
    assert total["carbon_kgco2e_month"] == pytest.approx(
        (pools["operational_kgco2e_month"] + pools["embodied_kgco2e_month"]).sum(), abs=0.01
    )
    # the workbook: its sheets read back with openpyxl, each header on row 1
    book = openpyxl.load_workbook(out["p.xlsx"], read_only=True)
    assert book.sheetnames == ["fleet", "baselines", "inputs", "sources"]
    sheets = {name: list(book[name].iter_rows(values_only=True)) for name in book.sheetnames}
    assert list(sheets["fleet"][0]) == list(fleet.columns)
    assert sheets["fleet"][-1][list(fleet.columns).index("monthly_cost_usd")] == pytest.approx(
        total["monthly_cost_usd"]
    )
    assert len(sheets["baselines"]) - 1 == sum(len(b["pools"]) for b in plan["baselines"])
    assert {row[0] for row in sheets["baselines"][1:]} == {plan["scenario"]}
    assert sheets["sources"][0] == ("item", "figure", "value", "unit", "source")
    assert len(sheets["sources"]) - 1 == len(sources)
    assert ("settings", "max_utilization", 0.8) in sheets["inputs"]
    assert ("GPU offer h100-pcie", "idle_w", 60) in sheets["inputs"]


def test_the_exports_stay_readable_with_hostile_names(sample_tables, tmp_path):
    raw = _scenario(sample_tables)
    # (a newline in a name is refused since issue 14: tests/test_hardening_inputs.py)
    raw["name"] = "#team, =sum(A1) plan; second part"
    raw["classes"][1]["name"] = "batch #2,=cmd"
    scenario = Scenario.model_validate(raw)
    plan = plan_from_tables(scenario, sample_tables["points"], sample_tables["catalog"])
    inputs = plan_inputs(
        scenario,
        catalog=sample_tables["catalog"],
        prices=sample_tables["prices"],
        regions=sample_tables["regions"],
    )
    text = plan_csv(plan)
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert len(rows) == len(plan.recommended.pools) + sum(len(b.pools) for b in plan.baselines)
    assert "batch #2,=cmd" in {row["class"] for row in rows}
    # a name starting a formula is neutralised, one starting with '#' stays as it is
    assert {row["scenario"] for row in rows} == {"#team, =sum(A1) plan; second part"}
    assert pd.read_csv(io.StringIO(text))["scenario"].tolist() == [r["scenario"] for r in rows]
    sources = list(csv.DictReader(io.StringIO(sources_csv(plan, inputs), newline="")))
    rates = {row["item"]: row["value"] for row in sources if row["figure"] == "rate"}
    assert rates["class batch #2,=cmd"] == "12.0"
    # the workbook writes no text as a formula
    path = tmp_path / "p.xlsx"
    path.write_bytes(plan_xlsx(plan, inputs))
    book = openpyxl.load_workbook(path)
    assert len(book.worksheets) > 0  # a loop over nothing asserts nothing
    for sheet in book.worksheets:
        for row in sheet.iter_rows():
            assert not any(cell.data_type == "f" for cell in row), sheet.title
    names = {row[2].value for row in book["fleet"].iter_rows(min_row=2)}
    assert "batch #2,=cmd" in names or not plan.recommended.pools


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


def test_changing_the_model_on_the_page_renames_the_scenario(sample_tables):
    """The stale name: the page built the scenario from the previous one's name, which named
    the previous model; the exports carried it."""
    raw = _scenario(sample_tables) | {
        "name": "chatbot + batch eval on DeepSeek-R1-Distill-Qwen-14B"
    }
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
