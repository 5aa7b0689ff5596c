"""Round-4 hardening of `fleetplan simulate` (availability check and trace replay): options that
are not finite or ask for unbounded work, seeds below 0, plans whose fleet is out of range, and
replay plans of the wrong JSON shape are refused naming the option or the field (no traceback,
no hang)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from fleetplan.planner.availability.simulation import (
    SimulationInputError,
    check_work,
    simulate,
)
from fleetplan.planner.replay.fleet import Fleet, PlanShapeError, PoolKey, Slot, fleet_of
from fleetplan.services.exports import plan_from_json, plan_json
from tests.test_simulation import simple_plan


@pytest.fixture(scope="module")
def plan_raw() -> dict:
    return json.loads(plan_json(simple_plan(10.0, False, None), {}))


def _write(tmp_path: Path, raw: dict, name: str = "plan.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(raw))
    return path


@pytest.mark.parametrize(
    ("options", "rc", "named"),
    [
        (["--seed", "-1"], 2, "--seed"),
        (["--hours", "inf"], 2, "--hours"),
        (["--window-s", "inf"], 2, "--window-s"),
        (["--repair-hours", "nan"], 2, "--repair-hours"),
        (["--window-s", "1e-6"], 1, "--window-s"),
        (["--hours", "1e18"], 1, "--hours"),
        (["--window-s", "1e300"], 1, "--window-s"),
        (["--repair-hours", "1e-9"], 1, "--repair-hours"),
    ],
)
def test_options_are_finite_and_bounded_and_named(cli, tmp_path, plan_raw, options, rc, named):
    path = _write(tmp_path, plan_raw)
    started = time.monotonic()
    done = cli("simulate", "--plan", path, *options)
    assert done.returncode == rc, done.stderr
    assert named in done.stderr and "Traceback" not in done.stderr
    assert f"{path}:" not in done.stderr  # the plan is not blamed for an option
    assert time.monotonic() - started < 30


def test_a_negative_seed_is_refused_before_a_trace_replay(cli, tmp_path, plan_raw):
    path = _write(tmp_path, plan_raw)
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,input_tokens,output_tokens\n2024-01-01T00:00:00,10,10\n")
    done = cli("simulate", "--plan", path, "--trace", trace, "--seed", "-1")
    assert done.returncode == 2 and "--seed" in done.stderr


def test_the_work_is_capped_before_it_is_done(plan_raw):
    plan = plan_from_json(plan_raw)
    with pytest.raises(SimulationInputError, match="--hours"):
        check_work(plan, hours=2e6, repair_hours=1.0, window_s=60.0)
    with pytest.raises(SimulationInputError, match="--repair-hours"):
        simulate(plan, hours=2000, repair_hours=1e-9)
    with pytest.raises(SimulationInputError, match="--window-s"):
        simulate(plan, hours=2000, window_s=float("inf"))


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("servers", True, "servers"),
        ("servers", 2**70, "servers"),
        ("servers", -5, "servers"),
        ("availability", 0.0, "availability"),
        ("availability", 2.0, "availability"),
        ("rate_rps", -1.0, "rate_rps"),
        ("rate_rps", 0.0, "rate_rps"),
        ("capacity_rps_per_server", -3.0, "capacity_rps_per_server"),
        ("full_capacity_rps_per_server", -3.0, "full_capacity_rps_per_server"),
    ],
)
def test_the_plans_fleet_is_range_checked_naming_the_field(
    cli, tmp_path, plan_raw, field, value, words
):
    raw = json.loads(json.dumps(plan_raw))
    for pool in raw["recommended"]["pools"]:
        pool[field] = value
    path = _write(tmp_path, raw)
    started = time.monotonic()
    done = cli("simulate", "--plan", path, "--hours", "10")
    assert done.returncode == 1, done.stdout
    assert "recommended.pools" in done.stderr and words in done.stderr
    assert "Traceback" not in done.stderr
    assert time.monotonic() - started < 30


def _replay_raw(**pool) -> dict:
    return {
        "inputs": {"scenario": {"model": "m", "classes": [{"name": "chat", "ttft_p99_ms": 300}]}},
        "recommended": {
            "pools": [
                {
                    "traffic_class": "chat",
                    "gpu_model": "h100-pcie",
                    "gpus_per_server": 1,
                    "servers": 2,
                    "rate_rps": 1.0,
                    **pool,
                }
            ]
        },
    }


def test_a_well_formed_replay_plan_is_read():
    fleet = fleet_of(_replay_raw())
    assert fleet.kind == "peak" and fleet.hours[0]["chat"][0].servers == 2


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda r: r.update(recommended=[1, 2]), "recommended"),
        (lambda r: r.update(capacities=[1, "x"]), "capacities[0]"),
        (lambda r: r["recommended"].update(pools=[1, 2]), "recommended.pools[0]"),
        (lambda r: r["recommended"]["pools"][0].update(servers=2**70), "servers"),
        (lambda r: r["recommended"]["pools"][0].update(servers=1e300), "servers"),
        (lambda r: r["recommended"]["pools"][0].update(servers=10**12), "servers"),
        (lambda r: r["recommended"]["pools"][0].update(servers="8"), "servers"),
        (lambda r: r["recommended"]["pools"][0].update(servers=True), "servers"),
        (lambda r: r["recommended"]["pools"][0].update(servers=-5), "servers"),
        (lambda r: r["recommended"]["pools"][0].update(gpu_model=None), "gpu_model"),
        (lambda r: r["recommended"]["pools"][0].update(rate_rps="x"), "rate_rps"),
        (
            lambda r: r["inputs"]["scenario"]["classes"][0].update(ttft_p99_ms=-5),
            "ttft_p99_ms",
        ),
        (lambda r: r.update(day={"schedule": [{"hour": None, "pools": []}]}), "hour"),
        (lambda r: r.update(day={"schedule": [{"hour": "x", "pools": []}]}), "hour"),
        (lambda r: r.update(day={"schedule": [5]}), "day.schedule[0]"),
        (lambda r: r.update(day={"schedule": [{"hour": 1, "pools": "abc"}]}), "pools"),
        (lambda r: r.update(day={"schedule": [{"hour": 1, "pools": [3]}]}), "pools[0]"),
    ],
)
def test_replay_plan_shapes_are_refused_naming_the_field(change, named):
    raw = _replay_raw()
    change(raw)
    with pytest.raises(PlanShapeError, match=named.replace("[", r"\[").replace("]", r"\]")):
        fleet_of(raw)


def test_replay_cli_reports_a_wrong_shape_without_a_traceback(cli, tmp_path):
    raw = _replay_raw()
    raw["recommended"] = [1, 2]
    path = _write(tmp_path, raw)
    trace = tmp_path / "t.csv"
    trace.write_text("timestamp,input_tokens,output_tokens\n2024-01-01T00:00:00,10,10\n")
    done = cli("simulate", "--plan", path, "--trace", trace)
    assert done.returncode == 1 and "recommended" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_large_pool_with_outages_is_not_scanned_server_by_server():
    import numpy as np

    from fleetplan.planner.replay.run import Outages, up_servers

    pool = PoolKey("chat", "h100-pcie", 1)
    slot = Slot(pool, 1_000_000, 1.0)
    fleet = Fleet("peak", [{"chat": [slot]}] * 24, availability={pool: 0.5})
    outages = Outages(fleet, (0.0, 7200.0), 1.0, 0)
    up = up_servers(slot, 3600.0, outages, np.random.default_rng(0))
    assert up and all(not outages.is_down(pool, j, 3600.0) for j in up)
