"""Every export follows the plan the page and the text lead with (issue 36): for a day scenario
the day's fleet and cost, not its peak plan's. For every bundled example (peak and day) and the
two-model day with owned GPUs, `fleetplan plan` writes the fleet CSV, the pool CSV, the workbook,
the JSON and the router, and each one's total is the headline the text prints; a day's router
holds the day's pools alone, each class on its own model."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import openpyxl
import pytest
import yaml

from tests.support.paths import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.json"))
TWO_MODELS = ROOT / "examples" / "day-two-models-owned.json"


def _exports(cli, tmp_path: Path, warehouse: Path, scenario: Path) -> dict:
    files = {
        "json": tmp_path / "plan.json",
        "fleet": tmp_path / "fleet.csv",
        "pools": tmp_path / "pools.csv",
        "xlsx": tmp_path / "plan.xlsx",
        "router": tmp_path / "router.yaml",
    }
    done = cli(
        "plan",
        "--scenario",
        scenario,
        "--warehouse",
        warehouse,
        "--json",
        files["json"],
        "--fleet-csv",
        files["fleet"],
        "--csv",
        files["pools"],
        "--xlsx",
        files["xlsx"],
        "--router",
        "litellm",
        "-o",
        files["router"],
    )
    assert done.returncode == 0, done.stderr
    assert all(path.is_file() for path in files.values()), done.stderr
    routing = cli("plan", "--scenario", scenario, "--warehouse", warehouse, "--router", "json")
    assert routing.returncode == 0, routing.stderr
    return {
        "text": done.stdout,
        "plan": json.loads(files["json"].read_text()),
        "fleet": list(csv.DictReader(io.StringIO(files["fleet"].read_text()))),
        "pools": list(csv.DictReader(io.StringIO(files["pools"].read_text()))),
        "xlsx": openpyxl.load_workbook(files["xlsx"]),
        "router": yaml.safe_load(files["router"].read_text()),
        "routing": json.loads(routing.stdout),  # the table alone: the text goes to stderr
    }


def _sheet(book, name: str) -> list[dict]:
    rows = list(book[name].iter_rows(values_only=True))
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@pytest.mark.parametrize("scenario", EXAMPLES, ids=lambda p: p.name)
def test_every_export_totals_the_headline(cli, tmp_path, sample_warehouse_template, scenario):
    out = _exports(cli, tmp_path, sample_warehouse_template, scenario)
    plan = out["plan"]
    day = plan.get("day")
    if day is not None:  # the day's figures: the text leads with them, the JSON says so
        monthly = day["monthly_cost_usd"]
        assert plan["headline"]["monthly_cost_usd"] == monthly
        assert plan["headline"]["cost_usd_per_day"] == day["cost_usd"]
        shown = re.search(r"month \(30\.4 days\): \$([\d,]+\.\d\d)", out["text"]).group(1)
        total_column, fleet_name = "monthly_cost_usd", "recommended (day)"
        total_key = "offer"
    else:
        monthly = plan["recommended"]["totals"]["monthly_cost_usd"]
        assert "headline" not in plan  # a peak plan's JSON is as it always was
        shown = re.search(r"Cost: \$[\d,.]+/h, \$([\d,]+\.\d\d)/month", out["text"]).group(1)
        total_column, fleet_name = "monthly_cost_usd", "recommended"
        total_key = "class"
    assert float(shown.replace(",", "")) == pytest.approx(monthly, abs=0.006)

    (total,) = [row for row in out["fleet"] if row[total_key] == "TOTAL"]
    assert float(total[total_column]) == pytest.approx(monthly, rel=1e-6)
    mine = [row for row in out["fleet"] if row[total_key] != "TOTAL"]
    assert mine and sum(float(row[total_column]) for row in mine) == pytest.approx(monthly, 1e-4)

    recommended = [row for row in out["pools"] if row["fleet"] == fleet_name]
    assert recommended
    assert sum(float(r[total_column]) for r in recommended) == pytest.approx(monthly, rel=1e-4)

    book = out["xlsx"]
    (sheet_total,) = [r for r in _sheet(book, "fleet") if r[total_key] == "TOTAL"]
    assert sheet_total[total_column] == pytest.approx(monthly, rel=1e-6)
    if day is not None:
        schedule = _sheet(book, "schedule")
        assert len(schedule) == sum(len(hour["pools"]) for hour in day["schedule"])
        compared = {r["fleet"] for r in _sheet(book, "compared")}
        assert compared == {c["name"] for c in day["compared"]}

    # The router: the plan's pools alone, each class's weights summing to one.
    if day is not None:
        planned = {
            (c["class"], u["offer"], u["gpu_model"], u["gpus_per_server"])
            for u in day["fleet"]
            for c in u["classes"]
        }
        routed = {
            (name, p["offer"], p["gpu_model"], p["gpus_per_server"])
            for name, entry in out["routing"]["classes"].items()
            for p in entry["pools"]
        }
    else:
        planned = {
            (p["traffic_class"], p["gpu_model"], p["gpus_per_server"])
            for p in plan["recommended"]["pools"]
            if p["servers"]
        }
        routed = {
            (name, p["gpu_model"], p["gpus_per_server"])
            for name, entry in out["routing"]["classes"].items()
            for p in entry["pools"]
        }
    assert routed == planned
    weights: dict[str, float] = {}
    for deployment in out["router"]["model_list"]:
        if not deployment["model_name"].endswith("-fallback"):
            name = deployment["model_name"]
            weights[name] = weights.get(name, 0.0) + deployment["litellm_params"]["weight"]
    assert weights and all(w == pytest.approx(1.0, abs=1e-5) for w in weights.values())


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_two_model_day_routes_each_class_to_its_model_and_the_days_pools(
    cli, tmp_path, sample_warehouse_template
):
    out = _exports(cli, tmp_path, sample_warehouse_template, TWO_MODELS)
    day = out["plan"]["day"]
    models = {d["model_name"]: d["litellm_params"]["model"] for d in out["router"]["model_list"]}
    assert models == {
        "chat": "hosted_vllm/deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
        "code assistant": "hosted_vllm/deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
        "summaries": "hosted_vllm/deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
    }
    for deployment in out["router"]["model_list"]:
        info = deployment["model_info"]
        assert len(info["servers_by_hour"]) == 24 and max(info["servers_by_hour"]) >= 1
        assert info["servers"] == max(info["servers_by_hour"])
    # each unit's share of its classes is what the schedule carries, hour by hour
    for unit in day["fleet"]:
        for share in unit["classes"]:
            carried = [
                sum(
                    p["rate_rps"]
                    for p in hour["pools"]
                    if p["class"] == share["class"]
                    and p["offer"] == unit["offer"]
                    and p["gpus_per_server"] == unit["gpus_per_server"]
                )
                for hour in day["schedule"]
            ]
            assert share["rate_by_hour"] == pytest.approx(carried)
    assert sum(u["cost_usd"] for u in day["fleet"]) == pytest.approx(day["cost_usd"], rel=1e-9)
    assert {r["offer"] for r in out["fleet"]} >= {"rented H100", "owned RTX 4090", "TOTAL"}
