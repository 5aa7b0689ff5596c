"""The whole output folders of the current real clients (vLLM bench serve 0.32, GuideLLM 0.8.1,
AIPerf 0.13.0, inference-perf 0.7.0), run by benchmarks/real_clients.py against a vLLM CPU server
(fleetplan's own runs, tests/fixtures/real_clients): each imports with nothing rejected, every
level at the rate its requests were really sent at (the tool's own send times), the configured
rate beside it, and the files that are not results skipped saying what they are."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fleetplan.warehouse.importers.base import ImportOptions
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.preview import FileStatus
from fleetplan.warehouse.queries import benchmark_points
from tests.support.paths import ROOT

REAL = ROOT / "tests" / "fixtures" / "real_clients"
needs_real = pytest.mark.skipif(
    not (REAL / "manifest.json").is_file(), reason="the real clients' outputs are not here"
)
CPU = ImportOptions(gpu="cpu", gpu_count=1)
FOLDERS = [
    "vllm-rate",
    "vllm-concurrency",
    "guidellm-rate",
    "guidellm-concurrency",
    "aiperf-rate",
    "aiperf-concurrency",
    "inference-perf-rate",
    "inference-perf-concurrency",
]


def manifest() -> dict:
    return json.loads((REAL / "manifest.json").read_text())


def present(folder: str) -> Path:
    path = REAL / folder
    if not path.is_dir():
        pytest.skip(f"{folder} is not among the real clients' outputs yet")
    return path


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@needs_real
@pytest.mark.parametrize("folder", FOLDERS)
def test_a_whole_output_folder_imports_with_nothing_rejected(warehouse, folder):
    path = present(folder)
    outcomes = list(ingest_paths(warehouse, [path], CPU))
    rejected = [(o.file, o.message) for o in outcomes if o.status is FileStatus.REJECTED]
    assert not rejected
    levels = len(manifest()["runs"][folder]["own"])
    assert sum(o.points for o in outcomes if o.status is FileStatus.IMPORTED) == levels
    skipped = [o for o in outcomes if o.status is FileStatus.SKIPPED]
    # console.txt at least, and every one says what it is
    assert any(o.file.endswith("console.txt") and "not read" in o.message for o in skipped)
    assert all(o.message for o in skipped)


def _levels(warehouse, folder: str):
    list(ingest_paths(warehouse, [present(folder)], CPU))
    return benchmark_points(warehouse).to_dict("records")


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@needs_real
@pytest.mark.parametrize(
    "folder", ["vllm-rate", "guidellm-rate", "aiperf-rate", "inference-perf-rate"]
)
def test_rate_levels_are_stored_at_the_rate_their_requests_were_really_sent_at(warehouse, folder):
    rows = _levels(warehouse, folder)
    own = manifest()["runs"][folder]["own"]
    sent = sorted(level["sent_rps"] for level in own)
    stored = sorted(row["offered_rate_rps"] for row in rows)
    assert stored == pytest.approx(sent, rel=1e-3)
    # the rate the tool was asked for is kept beside it, and where the two differ by more than
    # 5 % the level says so
    configured = {2.0, 4.0, 8.0, 16.0}
    assert {row["configured_rate_rps"] for row in rows} == configured
    for row in rows:
        apart = abs(row["offered_rate_rps"] - row["configured_rate_rps"])
        noted = isinstance(row["notes"], str) and "configured at" in row["notes"]
        assert noted == (apart > 0.05 * row["configured_rate_rps"]), row


@needs_real
def test_guidellm_0_8_sent_half_again_its_configured_rate_and_fleetplan_says_so(warehouse):
    rows = {row["configured_rate_rps"]: row for row in _levels(warehouse, "guidellm-rate")}
    assert rows[2.0]["offered_rate_rps"] == pytest.approx(2.956, abs=1e-3)
    assert "sent at 2.956 req/s, configured at 2 req/s (+48%)" in rows[2.0]["notes"]
    # judged on its send times: it kept up with what it was really sent
    assert rows[2.0]["load_basis"] == "send times" and bool(rows[2.0]["stable"])


@needs_real
def test_aiperf_levels_are_judged_on_their_request_start_times(warehouse):
    rows = {row["configured_rate_rps"]: row for row in _levels(warehouse, "aiperf-rate")}
    assert rows[16.0]["offered_rate_rps"] == pytest.approx(14.005, abs=1e-3)
    assert all(row["load_basis"] == "send times" for row in rows.values())


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@needs_real
@pytest.mark.parametrize(
    "folder",
    [
        "vllm-concurrency",
        "guidellm-concurrency",
        "aiperf-concurrency",
        "inference-perf-concurrency",
    ],
)
def test_concurrency_levels_are_closed_loop_not_bursts(warehouse, folder):
    rows = _levels(warehouse, folder)
    assert sorted(row["max_concurrency"] for row in rows) == [1, 4, 16]
    for row in rows:
        assert row["offered_rate_rps"] is None or math.isnan(row["offered_rate_rps"])
        assert row["load_basis"] == "concurrency"


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@needs_real
@pytest.mark.parametrize("folder", FOLDERS)
def test_the_tools_own_throughput_and_p99_ttft_level_by_level(warehouse, folder):
    rows = _levels(warehouse, folder)
    own = manifest()["runs"][folder]["own"]
    # paired by P99 TTFT, which orders the levels alike in both
    stored = sorted((row["ttft_p99_ms"], row["request_throughput_rps"]) for row in rows)
    expected = sorted((level["ttft_p99_ms"], level["throughput_rps"]) for level in own)
    assert len(stored) > 0  # a loop over nothing asserts nothing
    for (ttft, rps), (their_ttft, their_rps) in zip(stored, expected, strict=True):
        if not folder.startswith("guidellm"):  # GuideLLM's rate is a time average; ours is
            assert rps == pytest.approx(their_rps, rel=0.01)  # completed / its duration
        # fleetplan recomputes the P99 from the per-request data where a file has it (its
        # interpolation of 60 requests may differ from the tool's by a few percent)
        assert ttft == pytest.approx(their_ttft, rel=0.05)


def test_automatic_rates_span_the_concurrency_sweeps_plateau():
    """`real_clients.py --rates auto`: the rate sweep at fractions of the highest throughput its
    concurrency sweep imported, unknown and infinite throughputs left out."""
    from benchmarks.real_clients import auto_rates, highest_throughput

    rows = [
        {"request_throughput_rps": 3.83},
        {"request_throughput_rps": None},
        {"request_throughput_rps": math.inf},
        {"request_throughput_rps": 7.6},
        {"request_throughput_rps": 0.0},
    ]
    assert highest_throughput(rows) == 7.6
    assert highest_throughput([{"request_throughput_rps": None}, {}]) is None
    assert auto_rates(7.6, [0.25, 0.5, 0.75, 1, 1.25]) == [1.9, 3.8, 5.7, 7.6, 9.5]
