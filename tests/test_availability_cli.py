"""`fleetplan plan` with availability and `fleetplan simulate`, run as real processes on the
sample warehouse (issue 23)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "chat-batch-qwen14b.json"


def _scenario(tmp_path: Path) -> Path:
    raw = json.loads(EXAMPLE.read_text())
    raw["gpus"][0]["availability"] = 0.999  # h100-pcie
    raw["gpus"][1]["availability"] = 0.95  # rtx-4090
    for cls in raw["classes"]:
        cls["attainment"] = 0.999
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(raw))
    return path


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_plan_says_the_risk_writes_the_contract_and_a_router_config(
    cli, tmp_path, sample_warehouse_path
):
    scenario = _scenario(tmp_path)
    out, config = tmp_path / "plan.json", tmp_path / "config.yaml"
    done = cli(
        "plan", "--warehouse", sample_warehouse_path, "--scenario", scenario,
        "--json", out, "--router", "litellm", "-o", config, check=True,
    )  # fmt: skip
    assert "Availability (servers failing independently):" in done.stdout
    assert "needed" in done.stdout and "one host lost" in done.stdout
    assert "Redundancy: spare servers cost" in done.stdout and "all-H100 fleet" in done.stdout
    plan = json.loads(out.read_text())
    assert len(plan["recommended"]["pools"]) > 0  # a loop over nothing asserts nothing
    for pool in plan["recommended"]["pools"]:
        assert {"servers_needed", "servers", "availability", "probability"} <= pool.keys()
        assert pool["servers"] >= pool["servers_needed"]
    assert len(plan["recommended"]["classes"]) > 0  # a loop over nothing asserts nothing
    for cls in plan["recommended"]["classes"]:
        assert cls["attainment_target"] == 0.999 and cls["attainment"] >= 0.999
    deployments = yaml.safe_load(config.read_text())["model_list"]
    assert {d["model_name"] for d in deployments} == {"realtime", "batch"}
    table = cli(
        "plan", "--warehouse", sample_warehouse_path, "--scenario", scenario, "--router", "json",
        check=True,
    )  # fmt: skip
    assert '"classes"' in table.stdout and "FLEETPLAN_" in table.stdout

    simulated = cli("simulate", "--plan", out, "--hours", "300", "--seed", "3", check=True)
    assert "95 % interval" in simulated.stdout
    assert "realtime" in simulated.stdout and "batch" in simulated.stdout


def test_simulate_refuses_a_file_that_is_not_a_plan(cli, tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"not": "a plan"}')
    done = cli("simulate", "--plan", bad)
    assert done.returncode != 0 and "is not a fleetplan plan JSON" in done.stderr
    missing = cli("simulate", "--plan", tmp_path / "none.json")
    assert missing.returncode != 0 and "cannot read" in missing.stderr
