"""The planner on the bundled io.net data, and `fleetplan plan` as a real process."""

from __future__ import annotations

import csv
import io
import json

import pytest

from fleetplan.planner.paper.unit_costs import server_unit_costs
from fleetplan.planner.report.table import CSV_DIGITS
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points
from tests.support.paths import ROOT

PAPER_PRICES = {"h100-pcie": 2.00, "rtx-4090": 0.25}


@pytest.mark.parametrize(
    ("gpu_model", "gpus", "rate", "paper_usd"),
    [("h100-pcie", 1, 16.0, 0.185), ("rtx-4090", 4, 8.0, 0.149), ("rtx-4090", 2, 4.0, 0.111)],
)
def test_paper_cost_per_million_tokens_of_one_loaded_server(
    sample_warehouse_path, gpu_model, gpus, rate, paper_usd
):
    with Warehouse.open(sample_warehouse_path) as wh:
        frame = benchmark_points(wh, model="DeepSeek-R1-Distill-Qwen-14B")
    costs = server_unit_costs(frame, PAPER_PRICES)
    rows = costs[
        (costs["gpu_model"] == gpu_model)
        & (costs["gpu_count"] == gpus)
        & (costs["offered_rate_rps"] == rate)
        & (costs["source_index"] == 0)  # the first run of a file (the paper's)
    ]
    assert len(rows) == 1
    assert round(rows.iloc[0]["usd_per_million_total_tokens"], 3) == paper_usd


SCENARIO = {
    "name": "chat+batch on Qwen-14B",
    "model": "DeepSeek-R1-Distill-Qwen-14B",
    "classes": [
        {"name": "realtime", "rate_rps": 6.0, "ttft_p99_ms": 100, "tpot_p99_ms": 50},
        {"name": "batch", "rate_rps": 12.0},
    ],
    "gpus": [
        {"gpu_model": "h100-pcie", "hourly_usd": 2.0, "site": "dc", "idle_w": 60},
        {"gpu_model": "rtx-4090", "hourly_usd": 0.25, "site": "home", "max_gpus": 64},
    ],
    "sites": [
        {"name": "dc", "electricity_usd_per_kwh": 0.12, "grid_gco2_per_kwh": 350, "pue": 1.2},
        {"name": "home", "electricity_usd_per_kwh": 0.30, "grid_gco2_per_kwh": 380, "pue": 1.0},
    ],
    # at full capacity the cheapest fleet mixes GPUs and the frontier has a trade-off to show
    "max_utilization": 1.0,
}


def test_plan_command_prints_writes_csv_and_json(cli, tmp_path, sample_warehouse_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCENARIO))
    done = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", path,
                     "--csv", tmp_path / "p.csv", "--json", tmp_path / "p.json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Recommended fleet:" in done.stdout and "all-H100" in done.stdout
    rows = plan_rows(tmp_path / "p.csv")
    recommended = [r for r in rows if r["fleet"] == "recommended"]
    assert {r["class"] for r in recommended} == {"realtime", "batch"}
    required = [
        "scenario",
        "class",
        "gpu_model",
        "gpus_per_server",
        "servers",
        "gpus",
        "rate_rps",
        "capacity_rps_per_server",
        "utilization",
        "hourly_cost_usd",
        "monthly_cost_usd",
        "power_kw",
        "gpu_energy_kwh_month",
        "operational_kgco2e_month",
        "embodied_kgco2e_month",
        "energy_basis",
    ]
    assert set(required) <= set(rows[0])
    realtime = next(r for r in recommended if r["class"] == "realtime")
    assert realtime["gpu_model"] == "h100-pcie"  # only the H100 meets 100 ms P99 TTFT
    plan = json.loads((tmp_path / "p.json").read_text())
    assert plan["status"] == "optimal" and len(plan["pareto"]) >= 1
    assert plan["recommended"]["totals"]["hourly_cost_usd"] == pytest.approx(
        sum(float(r["hourly_cost_usd"]) for r in recommended)
    )


def plan_rows(path) -> list[dict[str, str]]:
    """The rows of a plan CSV (the header on its first line)."""
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


def _rounded(column: str, value: str) -> str:
    digits = CSV_DIGITS.get(column)
    if digits is None or value in ("", "inf"):
        return value
    return repr(round(float(value), digits))


def test_plan_command_exit_codes(cli, tmp_path, sample_warehouse_path):
    infeasible = {**SCENARIO, "classes": [{"name": "instant", "rate_rps": 1, "ttft_p99_ms": 5}]}
    path = tmp_path / "inf.json"
    path.write_text(json.dumps(infeasible))
    done = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", path)
    assert done.returncode == 2
    assert "instant" in done.stderr and "Best P99 TTFT" in done.stderr

    bad = {**SCENARIO, "max_utilization": 2}
    path.write_text(json.dumps(bad))
    done = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", path)
    assert done.returncode == 1 and "max_utilization" in done.stderr
    assert "Traceback" not in done.stderr

    path.write_text("{not json")
    done = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", path)
    assert done.returncode == 1 and "Traceback" not in done.stderr


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_formula_class_names_are_neutralised_in_the_plan_csv(cli, tmp_path, sample_warehouse_path):
    scenario = {**SCENARIO, "classes": [{"name": "=cmd|' /C calc'!A0", "rate_rps": 2.0}]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario))
    cli("plan", "--warehouse", sample_warehouse_path, "--scenario", path,
              "--csv", tmp_path / "p.csv", check=True)  # fmt: skip
    row = plan_rows(tmp_path / "p.csv")[0]
    assert row["class"] == "'=cmd|' /C calc'!A0"


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_plan_command_takes_the_capacity_rule_and_says_which(cli, tmp_path, sample_warehouse_path):
    """The example scenario: the model's plan by default, today's with --capacity-rule measured
    (the pool table as before issue 12, tests/fixtures/plans)."""
    before = ROOT / "tests" / "fixtures" / "plans" / "chat-batch-qwen14b-before-issue-12.csv"
    raw = json.loads((ROOT / "examples" / "chat-batch-qwen14b.json").read_text())
    model = cli("plan", "--warehouse", sample_warehouse_path, "--scenario",
                      ROOT / "examples" / "chat-batch-qwen14b.json",
                      "--capacity-at", "mid")  # fmt: skip
    assert model.returncode == 0, model.stderr
    assert "capacity rule: model" in model.stdout
    assert "planned on each capacity's mid end" in model.stdout
    # the example's 0.8 headroom on the H100's capacity at 100 ms / 50 ms: kept up at 4 req/s,
    # to its saturation (8.83 req/s, what the 32 req/s bursts prove) by the queue form
    assert "(model: to saturation (queue form): measured: kept up at 4" in model.stdout
    assert "saturation 8.83 req/s" in model.stdout and "P99 at 6.00" in model.stdout
    example = tmp_path / "example-at-1.json"  # before issue 12 the example planned at 1.0
    example.write_text(json.dumps({**raw, "max_utilization": 1.0}))
    done = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", example,
                     "--capacity-rule", "measured", "--csv", tmp_path / "p.csv")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "capacity rule: measured" in done.stdout and "(measured rule)" in done.stdout
    rows = plan_rows(tmp_path / "p.csv")
    old = list(csv.DictReader(io.StringIO(before.read_text())))
    # Issue 15: the energy column is named by its basis, and embodied carbon adds the hosts'
    # share (its own column): the GPUs' share is what the file of before holds.
    for then in old:
        then["gpu_energy_kwh_month"] = then.pop("energy_kwh_month")
    assert len(rows) > 0  # a loop over nothing asserts nothing
    for row, then in zip(rows, old, strict=True):
        gpus_only = float(row["embodied_kgco2e_month"]) - float(row["host_embodied_kgco2e_month"])
        # two figures rounded to 1 g each: their difference is within 1 g of the one of before
        assert gpus_only == pytest.approx(float(then["embodied_kgco2e_month"]), abs=1.001e-3)
        column = "embodied_kgco2e_month"
        row[column] = _rounded(column, then[column])
    # Since issue 13 the catalog has an (assumed) idle power for the H100 PCIe: its pools' power,
    # energy and carbon are modelled where they were unknown; everything else is as before, to
    # the digits the CSV is rounded to since issue 13 (report.CSV_DIGITS).
    power = ("power_kw", "gpu_energy_kwh_month", "operational_kgco2e_month", "energy_basis")
    assert len(rows) > 0  # a loop over nothing asserts nothing
    for row, then in zip(rows, old, strict=True):
        if then["energy_basis"] == "unknown" and then["gpu_model"] == "h100-pcie":
            assert row["energy_basis"] == "modelled" and float(row["operational_kgco2e_month"]) > 0
            row.update({k: _rounded(k, then[k]) for k in power})
    assert [{k: r[k] for k in old[0]} for r in rows] == [
        {k: _rounded(k, v) for k, v in r.items()} for r in old
    ]
    assert {r["capacity_basis"] for r in rows} == {"measured rule"}
