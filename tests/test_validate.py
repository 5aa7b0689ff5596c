"""`fleetplan validate`'s judgement (services/validate.py): the P99's distribution-free interval,
the verdicts, the pool and its shape from a plan; the run against the vLLM CPU server is in
tests/test_collect_engines.py."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from fleetplan.core.errors import InputError
from fleetplan.services.validate import p99_interval, pool_of, rates, verdict

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
