"""`fleetplan collect` against servers that lie, stall and flood (tests/support/hostile_server.py):
no response ends the run or forges its numbers, nothing holds it, what was measured is kept."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pytest
import requests

from fleetplan.collectors.hardware import Hardware
from fleetplan.collectors.requests_log import RequestResult, level_point
from fleetplan.collectors.run_file import RunSetup, RunWriter, collector_run
from fleetplan.collectors.suite import standard_suite
from fleetplan.core.contract import RunFile
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.preview import FileStatus
from tests.support import hostile_server
from tests.support.cli import run_cli
from tests.support.processes import local_servers

SERVER = Path(hostile_server.__file__)
# Each test starts a hostile server and most a `fleetplan collect` against it: slow.
pytestmark = pytest.mark.slow


@pytest.fixture
def hostile():
    """`start(mode)` -> the URL of a hostile server in that mode."""
    with local_servers(SERVER, ready="/debug/completions") as started:
        yield lambda mode: started("--mode", mode)


def collect(url: str, out: Path, *options, model: str = hostile_server.MODEL, **kwargs):
    """A small collection: 8-token prompts, 4 tokens out, two levels of 6 requests, no warm-up
    (so half of each level's requests meet the server's mode)."""
    return run_cli("collect", "--backend", "openai", "--base-url", url, "--model", model,
                     "--out", out, "--gpu", "rtx-4090", "--input-len", 8, "--output-len", 4,
                     "--rates", "8,inf", "--num-requests", 6, "--warmup", 0,
                     "--request-timeout", 3, *options, timeout=90, **kwargs)  # fmt: skip


def completions_seen(url: str) -> int:
    return requests.get(f"{url}/debug/completions", timeout=5).json()["completions"]


def run_file_in(folder: Path) -> RunFile:
    (path,) = folder.glob("*.json")
    return RunFile.model_validate_json(path.read_bytes())


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("usage-huge", "2000000000 output tokens for max_tokens 4"),
        ("usage-negative", "completion_tokens is -4: not a whole number"),
        ("usage-over-int32", "not a whole number"),
        ("usage-text", "completion_tokens is 'abc'"),
        ("usage-float", "completion_tokens is 3.7: not a whole number"),
        ("usage-1e400", "completion_tokens is inf"),
        ("usage-list", "completion_tokens is [4]"),
        ("usage-twice", "a stream chunk gives a key twice (the key 'completion_tokens'"),
        ("usage-zero", "counted 0 prompt tokens"),
        ("usage-short", "reported 1 output tokens but streamed 4"),
        ("stops-early", "2 output tokens for max_tokens 4 with ignore_eos"),
        ("chunk-number", "not a JSON object: 5"),
        ("chunk-list", "not a JSON object"),
        ("chunk-bad-json", "a stream chunk is not JSON"),
        ("long-line", "a stream line is over 65536 bytes"),
        ("many-chunks", "over 12 chunks for max_tokens 4"),
        ("endless", "over 12 chunks for max_tokens 4"),
    ],
)
def test_a_malformed_or_forged_response_is_one_failed_request_with_its_reason(
    hostile, tmp_path, mode, reason
):
    url = hostile(mode)
    done = collect(url, tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert reason in done.stderr
    points = run_file_in(tmp_path).runs[0].points
    assert len(points) == 2  # the run went on to its second level
    for point in points:
        assert (point.completed, point.failed, point.complete) == (3, 3, False)
        assert point.output_tokens_mean == 4  # only what the honest answers streamed
        assert point.output_throughput_tps < 1e5


def test_sse_comments_do_not_keep_a_request_alive(hostile, tmp_path):
    url = hostile("comments")
    done = collect(url, tmp_path, "--request-timeout", 1)
    assert done.returncode == 1, done.stderr
    assert "TimeoutError: 1 s without a token" in done.stderr
    (point,) = run_file_in(tmp_path).runs[0].points  # the server stopped answering: kept
    assert point.failed == 3 and point.completed == 3


def test_a_server_500_body_is_escaped_before_it_is_printed(hostile, tmp_path):
    url = hostile("http500-escapes")
    done = collect(url, tmp_path)
    assert done.returncode == 1
    assert "HTTP 500" in done.stderr and "\\x1b[2J" in done.stderr
    assert "\x1b" not in done.stderr + done.stdout and "\x07" not in done.stderr
    assert not any(line.startswith("problem: forged") for line in done.stderr.splitlines())


def test_timings_no_gpu_makes_flag_the_level(hostile, tmp_path):
    url = hostile("instant")
    done = collect(url, tmp_path)
    assert done.returncode == 1, done.stderr
    assert "not physical" in done.stderr
    assert not any(p.complete for p in run_file_in(tmp_path).runs[0].points)


@pytest.mark.parametrize(
    "mode",
    [
        "version-number",
        "version-dict",
        "version-list",
        "version-long",
        "version-escapes",
        "version-newline",
        "version-fullwidth",
    ],
)
def test_a_version_that_is_no_version_is_recorded_as_unknown(hostile, tmp_path, mode):
    url = hostile(mode)
    done = collect(url, tmp_path)
    assert done.returncode == 0, done.stderr
    (run,) = run_file_in(tmp_path).runs
    assert run.engine_version is None and len(run.points) == 2
    assert "engine version is not recorded" in run.metadata["engine_version_note"]
    assert "\x1b" not in done.stderr + done.stdout


@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("models-html", "did not answer with an OpenAI model list"),
        ("models-list", "did not answer with an OpenAI model list"),
        ("models-twice", "answered JSON that gives a key twice (the key 'id' is given twice"),
        ("models-slow", "did not answer within 5 s"),
        ("models-huge", "sent over 4 MB"),
        ("tokenize-empty", "the tokenizer gave 0 tokens"),
        ("tokenize-string", "not a list of ids"),
    ],
)
def test_a_check_before_the_first_request_fails_in_seconds_with_its_reason(
    hostile, tmp_path, mode, message
):
    url = hostile(mode)
    done = collect(url, tmp_path / "runs")
    assert done.returncode == 3, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert completions_seen(url) == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--gpu-count", 5000), "--gpu-count: Input should be less than or equal to 4096"),
        (("--gpu", "x" * 600), "--gpu: String should have at most 500 characters"),
        (("--dtype", "bf\x1b[31m16"), "--dtype: contains a control or formatting character"),
        (("--out", "EXISTING"), "cannot write run files to"),
        (("--out", "/proc/fleetplan-runs"), "cannot write run files to"),
        (("--out", "/dev/null"), "cannot write run files to"),
        (("--seed", -1), "--seed: Input should be greater than or equal to 0"),
        (("--burstiness", "1e-300"), "--burstiness: Input should be greater than or equal to"),
        (("--request-timeout", "1e-300"), "--request-timeout: Input should be greater than or"),
        (("--rates", "1e-300"), "--rates: 1e-300 req/s spreads a level of 6 requests over"),
        (("--base-url", "http://user:secret@127.0.0.1:9"), "--base-url: a server's URL with a"),
        (("--base-url", "http://127.0.0.1:9/?key=secret"), "has a query or fragment"),
        (("--base-url", "http://127.0.0.1:9 /"), "has a space"),
    ],
)
def test_options_a_run_cannot_record_are_refused_before_the_first_request(
    hostile, tmp_path, options, message
):
    url = hostile("none")
    existing = tmp_path / "a-file"
    existing.write_text("not a folder")
    options = tuple(str(existing) if value == "EXISTING" else value for value in options)
    done = collect(url, tmp_path, *options)
    assert done.returncode == 3, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert completions_seen(url) == 0 and existing.read_text() == "not a folder"


def test_a_long_served_model_name_still_gets_a_run_file(hostile, tmp_path):
    url = hostile("long-model")
    done = collect(url, tmp_path, model=hostile_server.LONG_MODEL)
    assert done.returncode == 0, done.stderr
    (path,) = tmp_path.glob("*.json")
    assert len(path.name.encode()) <= 255
    assert RunFile.model_validate_json(path.read_bytes()).runs[0].model == hostile_server.LONG_MODEL


def test_each_level_is_on_disk_as_soon_as_it_is_measured(hostile, tmp_path):
    url = hostile("stall-later")
    # a quick first level, then one whose requests stall: killed (no Ctrl-C, no clean-up) in it
    process = subprocess.Popen(
        [sys.executable, "-m", "fleetplan", "collect", "--backend", "openai", "--base-url", url,
         "--model", hostile_server.MODEL, "--out", str(tmp_path), "--gpu", "rtx-4090",
         "--input-len", "8", "--output-len", "4", "--rates", "8,inf", "--num-requests", "6",
         "--warmup", "0"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.2)
        process.kill()
        process.wait()
    finally:
        process.kill()
    (point,) = run_file_in(tmp_path).runs[0].points
    assert (
        point.offered_rate_rps == 8
        and point.completed == 6
        and point.complete
        and not list(tmp_path.glob(".*.tmp"))
    )


def _results(rng, count: int, output_len: int) -> list[RequestResult]:
    """A level's requests as a real server's might be: gaps of 8-30 ms, full precision."""
    results = []
    for i in range(count):
        gaps = list(rng.uniform(0.008, 0.03, output_len - 1))
        ttft = float(rng.uniform(0.02, 0.5))
        results.append(
            RequestResult(
                start_s=i * 0.1,
                ttft_s=ttft,
                itl_s=gaps,
                e2el_s=ttft + sum(gaps),
                input_tokens=256,
                output_tokens=output_len,
            )
        )
    return results


def _suite_runs(suite, setup: RunSetup, started: datetime) -> list:
    rng = np.random.default_rng(0)
    return [
        collector_run(
            shape,
            setup,
            started,
            [
                level_point(
                    _results(rng, suite.num_requests, shape.output_len),
                    duration_s=30.0,
                    offered_rate_rps=rate,
                )
                for rate in suite.rates
            ],
        )
        for shape in suite.shapes
    ]


def _ingest(path: Path, warehouse: Path):
    with Warehouse.open(warehouse) as wh:
        (outcome,) = ingest_paths(wh, [path])
    return outcome


SETUP = RunSetup(hardware=Hardware("NVIDIA GeForce RTX 4090", 1), model="m")


def test_the_standard_suites_run_file_imports_with_the_default_limits(tmp_path):
    # 3 shapes x 7 levels x 200 requests, every token's gap kept: 44 MB at full precision
    started = datetime.now(UTC)
    writer = RunWriter(tmp_path / "runs", started, SETUP.file_name())
    run_file = writer.write(_suite_runs(standard_suite(), SETUP, started))
    assert all(p.requests is not None for run in run_file.runs for p in run.points)
    outcome = _ingest(writer.path, tmp_path / "wh.duckdb")
    assert outcome.status is FileStatus.IMPORTED, outcome.message


def test_a_run_file_past_the_limits_keeps_its_statistics_and_says_which_logs_it_left_out(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("FLEETPLAN_MAX_FILE_MB", "2")
    started = datetime.now(UTC)
    suite = standard_suite(rates=(1.0, 2.0), num_requests=100)
    writer = RunWriter(tmp_path / "runs", started, SETUP.file_name())
    run_file = writer.write(_suite_runs(suite, SETUP, started))
    assert writer.path.stat().st_size <= 2 * 2**20
    generation = run_file.runs[2]
    assert "left out of levels" in generation.metadata["request_log"]
    assert all(p.ttft_p99_ms is not None for p in generation.points)
    outcome = _ingest(writer.path, tmp_path / "wh.duckdb")
    assert outcome.status is FileStatus.IMPORTED, outcome.message


def test_a_rejected_ingest_after_a_collection_exits_1(hostile, tmp_path):
    url = hostile("none")
    # a file limit no run file meets: the collection succeeds, its ingest is rejected
    env = {**os.environ, "FLEETPLAN_MAX_FILE_MB": "0.0001"}
    done = collect(url, tmp_path / "runs", "--ingest", "--warehouse", tmp_path / "wh.duckdb",
                   env=env)  # fmt: skip
    assert "rejected" in done.stdout, done.stdout + done.stderr
    assert done.returncode == 1


def test_an_ingest_into_a_warehouse_it_would_refuse_is_refused_before_the_first_request(
    hostile, tmp_path
):
    url = hostile("none")
    theirs = tmp_path / "theirs.duckdb"
    con = duckdb.connect(str(theirs))
    con.execute("CREATE TABLE sales (x INTEGER)")
    con.close()
    before = theirs.read_bytes()
    done = collect(url, tmp_path / "runs", "--ingest", "--warehouse", theirs)
    assert done.returncode == 3, done.stderr
    assert "another application's DuckDB database" in done.stderr
    assert completions_seen(url) == 0 and theirs.read_bytes() == before
