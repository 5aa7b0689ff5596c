"""`fleetplan validate`'s judgement (services/validate.py): the P99's distribution-free interval,
the verdicts, the pool and its shape from a plan; the run against the vLLM CPU server is in
tests/test_collect_engines.py."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fleetplan.cli.validate import text
from fleetplan.core.contract import RUN_FILE_FORMAT, Point, RequestLog, Run, RunFile
from fleetplan.core.errors import InputError
from fleetplan.services.validate import judge, p99_interval, pool_of, rates, verdict

PLAN = {
    "model": "m",
    "recommended": {
        "pools": [
            {
                "traffic_class": "chat",
                "gpu_model": "h100-pcie",
                "gpus_per_server": 1,
                "servers": 4,
                "rate_rps": 10.0,
                "server": "vllm 0.8.5, float16, TP 1",
            }
        ]
    },
    "inputs": {
        "scenario": {
            "model": "org/m",
            "classes": [
                {
                    "name": "chat",
                    "ttft_p99_ms": 200.0,
                    "tpot_p99_ms": None,
                    "input_len": 512,
                    "output_len": 128,
                }
            ],
        }
    },
}


def test_the_interval_covers_the_true_p99_about_95_times_in_100():
    rng = np.random.default_rng(0)
    true = 10 * math.log(100)  # exponential of mean 10
    covered = 0
    for _ in range(400):
        _p99, low, high = p99_interval(rng.exponential(10, 400))
        covered += low <= true <= high
    assert 0.92 <= covered / 400 <= 0.995


def test_too_few_requests_cannot_bound_a_p99_from_above():
    rng = np.random.default_rng(1)
    assert p99_interval(rng.exponential(10, 300))[2] == math.inf
    assert math.isfinite(p99_interval(rng.exponential(10, 400))[2])


def test_verdicts():
    assert verdict(10, 20, 25) == "holds"
    assert verdict(30, 40, 25) == "misses"
    assert verdict(20, 30, 25) == "cannot tell"
    assert verdict(20, 30, None) == "no target"
    # failed requests count as infinite: more than 1 % failed and the P99 is unbounded
    values = np.array([1.0] * 390 + [math.inf] * 10)
    p99, low, high = p99_interval(values)
    assert p99 == math.inf and high == math.inf and verdict(low, high, 100) == "misses"


def test_the_pool_its_rate_per_server_and_its_class():
    pool = pool_of(PLAN, "chat/1x-h100-pcie")
    assert pool.rate_per_server == 2.5 and rates(pool) == (2.5, 3.0)
    assert pool.model == "org/m" and (pool.input_len, pool.output_len) == (512, 128)
    assert pool.ttft_p99_ms == 200.0 and pool.tpot_p99_ms is None
    with pytest.raises(InputError, match="its pools are chat/1x-h100-pcie"):
        pool_of(PLAN, "chat/2x-rtx-4090")
    bare = {k: v for k, v in PLAN.items() if k != "inputs"}
    with pytest.raises(InputError, match=r"inputs\.scenario\.classes"):
        pool_of(bare, "chat/1x-h100-pcie")


def level(rate: float, growth_s: float, n: int = 400) -> Point:
    """Poisson arrivals at `rate`, TTFT 50 ms, each request 0.5 s plus `growth_s` per second
    since the level began (0: a steady server; more: a queue that grows through the level)."""
    gaps = np.random.default_rng(7).exponential(1 / rate, n)
    starts = np.cumsum(gaps) - gaps[0]
    e2el = 0.5 + growth_s * starts
    log = RequestLog(
        start_s=tuple(map(float, starts)),
        ttft_s=(0.05,) * n,
        e2el_s=tuple(map(float, e2el)),
        itl_s=((),) * n,
        input_tokens=(16,) * n,
        output_tokens=(20,) * n,
        error=("",) * n,
    )
    duration = float((starts + e2el).max())
    return Point(
        offered_rate_rps=rate,
        requests_sent=n,
        completed=n,
        failed=0,
        duration_s=duration,
        request_throughput_rps=n / duration,
        requests=log,
    )


def test_each_level_says_whether_it_kept_up_beside_its_verdicts():
    """P99s within their targets over 400 requests while the queue grew: the verdicts hold, and
    the report says the level fell behind (the next plan does not count it as a rate proven)."""
    run = Run(
        tool="fleetplan collect",
        model="org/m",
        gpu_model="h100-pcie",
        gpu_count=1,
        points=(level(2.5, 0.0), level(3.0, 0.02)),
    )
    run_file = RunFile(format=RUN_FILE_FORMAT, format_version=1, runs=(run,))
    steady, growing = judge(run_file, pool_of(PLAN, "chat/1x-h100-pcie"))
    assert steady["ttft"]["verdict"] == growing["ttft"]["verdict"] == "holds"
    assert steady["load"]["kept_up"] is True and steady["load"]["reason"].startswith("kept up")
    assert growing["load"]["kept_up"] is False
    assert growing["load"]["reason"].startswith("fell behind")
    report = {
        "pool": "chat/1x-h100-pcie",
        "planned_server": "s",
        "measured_server": "s",
        "run_file": "f.json",
        "levels": [steady, growing],
        "problems": [],
    }
    printed = text(report)
    assert "load: kept up" in printed
    assert "the queue grew, so the next plan does not count this level" in printed


def test_the_command_refuses_what_cannot_give_a_p99(cli, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(PLAN))
    done = cli(
        "validate",
        "--plan",
        plan,
        "--pool",
        "chat/1x-h100-pcie",
        "--base-url",
        "http://127.0.0.1:9",
        "--num-requests",
        "100",
    )
    assert done.returncode == 1 and "at least 400" in done.stderr
    done = cli("validate", "--plan", plan, "--pool", "nope", "--base-url", "http://127.0.0.1:9")
    assert done.returncode == 1 and "no pool 'nope'" in done.stderr
    shapeless = json.loads(json.dumps(PLAN))
    del shapeless["inputs"]["scenario"]["classes"][0]["input_len"]
    plan.write_text(json.dumps(shapeless))
    done = cli(
        "validate",
        "--plan",
        plan,
        "--pool",
        "chat/1x-h100-pcie",
        "--base-url",
        "http://127.0.0.1:9",
    )
    assert done.returncode == 1 and "--input-len" in done.stderr
