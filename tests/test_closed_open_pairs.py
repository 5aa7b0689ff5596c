"""A closed loop's capacity against the open-loop truth of the same server (issue 32, item 4):
the real clients' concurrency and rate sweeps (tests/fixtures/real_clients), through
`fleetplan capacity` as a user runs it; benchmarks/closed_open_pairs.py prints the whole table."""

from __future__ import annotations

import json

import pytest

from tests.support.paths import ROOT

REAL = ROOT / "tests" / "fixtures" / "real_clients"


CAPACITY = ("capacity", "--model", "tiny-llama", "--gpu", "cpu", "--gpu-count", "1")


def run_capacity(cli, path, target: float, *options: str):
    return cli(*CAPACITY, "--warehouse", path, "--ttft-p99", str(target), *options)


def capacity(cli, path, target: float, at: str = "low") -> dict:
    done = run_capacity(cli, path, target, "--capacity-at", at, "--format", "json")
    return json.loads(done.stdout)


@pytest.fixture
def closed(cli, tmp_path):
    def imported(tool: str):
        path = tmp_path / f"{tool}.duckdb"
        folder = REAL / f"{tool}-concurrency"
        done = cli("ingest", "--warehouse", path, "--gpu", "cpu", "--gpu-count", "1", folder)
        assert done.returncode == 0, done.stdout
        return path

    return imported


def test_a_modelled_p99_is_written_as_modelled_beside_what_was_measured(cli, closed):
    done = run_capacity(cli, closed("guidellm"), 270)
    assert "P99 TTFT modelled at 380 ms against 270 ms" in done.stdout
    assert "closed-loop: concurrency 1 measured 265.7 ms, x1.43" in done.stdout


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@pytest.mark.parametrize(
    ("tool", "target", "meets", "misses"),
    [
        # the open-loop bracket of each tool's own rate sweep at that P99 TTFT target
        ("aiperf", 571.9, 14.0, float("inf")),
        ("inference-perf", 1263.3, 4.31, 6.88),
        ("vllm", 2778.6, 15.84, float("inf")),
    ],
)
def test_the_mid_capacity_of_a_closed_loop_lands_in_its_open_loop_bracket(
    cli, closed, tool, target, meets, misses
):
    path = closed(tool)
    low, mid = capacity(cli, path, target), capacity(cli, path, target, "mid")
    assert mid["capacity_rps"] >= low["capacity_rps"] > 0
    assert 0.5 * meets <= mid["capacity_rps"] < misses
    # the mid end rests on the queue form up to the closed loop's measured plateau, never past
    assert mid["capacity_rps"] < mid["saturation_rps"]
    assert mid["predicted_ttft_p99_ms"] <= target + 1e-6
