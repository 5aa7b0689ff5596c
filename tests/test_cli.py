"""The `fleetplan` command, run as a real process."""

from __future__ import annotations

import csv
import io
import json
import os
import time

import pytest
import requests

from benchmarks.inputs.vllm_results import make_result
from tests.support.files import write_json
from tests.support.processes import held_by_another_process, served_dashboard


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_ingest_then_export_round_trip(cli, tmp_path, warehouse_path):
    folder = tmp_path / "in"
    folder.mkdir()
    for i, rate in enumerate((1, 2, 4)):
        write_json(folder / f"r{rate}.json", make_result(rate=rate, seed=i))
    (folder / "broken.json").write_text('{"duration": 3, "completed": 1, "request_rate": 1,')
    done = cli("ingest", "--warehouse", warehouse_path, folder)
    assert done.returncode == 1, done
    assert "3 imported, 0 already present, 1 rejected" in done.stdout
    assert "rejected  " in done.stdout and "broken.json" in done.stdout
    again = cli("ingest", "--warehouse", warehouse_path, folder / "r1.json")
    assert again.returncode == 0 and "0 imported, 1 already present" in again.stdout

    exported = cli("benchmarks", "--warehouse", warehouse_path, "--gpu", "4090", check=True)
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert [float(r["offered_rate_rps"]) for r in rows] == [1.0, 2.0, 4.0]
    for column in ("model", "gpu_model", "gpu_count", "request_throughput_rps",
                   "output_throughput_tps", "total_throughput_tps", "ttft_p50_ms", "ttft_p99_ms",
                   "tpot_p99_ms", "itl_p99_ms", "e2el_p99_ms", "completed", "failed",
                   "duration_s", "source_tool", "source_file"):  # fmt: skip
        assert rows[0][column] != "", column
    assert rows[0]["gpu_model"] == "rtx-4090" and rows[0]["source_file"] == "r1.json"

    as_json = json.loads(
        cli("benchmarks", "--warehouse", warehouse_path, "--format", "json", check=True).stdout
    )
    assert len(as_json) == 3 and as_json[0]["ttft_p99_ms"] == pytest.approx(
        float(rows[0]["ttft_p99_ms"])
    )
    none = cli("benchmarks", "--warehouse", warehouse_path, "--gpu", "h100-sxm", check=True)
    assert none.stdout.count("\n") == 1 and "no benchmark points match" in none.stderr


def test_inf_rate_exports_as_inf(cli, tmp_path, warehouse_path):
    cli("ingest", "--warehouse", warehouse_path,
              write_json(tmp_path / "inf.json", make_result(rate="inf")), check=True)  # fmt: skip
    rows = json.loads(cli("benchmarks", "--warehouse", warehouse_path, "--format", "json").stdout)
    assert rows[0]["offered_rate_rps"] == "inf"
    text = cli("benchmarks", "--warehouse", warehouse_path).stdout
    assert next(csv.DictReader(io.StringIO(text)))["offered_rate_rps"] == "inf"


def test_formula_names_are_stored_verbatim_and_neutralised_in_csv(cli, tmp_path, warehouse_path):
    name = '=HYPERLINK("http://evil.example","click")'
    cli("ingest", "--warehouse", warehouse_path,
              write_json(tmp_path / "f.json", make_result(model=name)), check=True)  # fmt: skip
    text = cli("benchmarks", "--warehouse", warehouse_path, check=True).stdout
    row = next(csv.DictReader(io.StringIO(text)))
    assert row["model"] == "'" + name
    rows = json.loads(cli("benchmarks", "--warehouse", warehouse_path, "--format", "json").stdout)
    assert rows[0]["model"] == name


def test_ingest_flags_fill_what_a_file_lacks(cli, tmp_path, warehouse_path):
    path = write_json(tmp_path / "nogpu.json", make_result(metadata={}))
    refused = cli("ingest", "--warehouse", warehouse_path, path)
    assert refused.returncode == 1 and "--gpu" in refused.stdout
    cli("ingest", "--warehouse", warehouse_path, "--gpu", "NVIDIA H100 80GB HBM3",
              "--gpu-count", "8", path, check=True)  # fmt: skip
    rows = json.loads(cli("benchmarks", "--warehouse", warehouse_path, "--format", "json").stdout)
    assert (rows[0]["gpu_model"], rows[0]["gpu_count"]) == ("h100-sxm", 8)


def test_busy_warehouse_is_a_clear_message_not_a_traceback(cli, tmp_path, warehouse_path):
    cli("ingest", "--warehouse", warehouse_path,
              write_json(tmp_path / "a.json", make_result()), check=True)  # fmt: skip
    with held_by_another_process(warehouse_path):
        done = cli("ingest", "--warehouse", warehouse_path, "--wait", "0.5",
                         write_json(tmp_path / "b.json", make_result(seed=3)))  # fmt: skip
        assert done.returncode == 3
        assert "in use by process" in done.stderr and "Traceback" not in done.stderr
        exported = cli("benchmarks", "--warehouse", warehouse_path)
        assert exported.returncode == 3 and "in use" in exported.stderr


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_build_then_benchmarks_shows_the_sample_data(cli, warehouse_path):
    built = cli("build", "--warehouse", warehouse_path, check=True)
    assert "reference data:" in built.stdout and "130 run(s), 130 point(s)" in built.stdout
    rebuilt = cli("build", "--warehouse", warehouse_path, check=True)
    assert "already imported" in rebuilt.stdout
    text = cli(
        "benchmarks", "--warehouse", warehouse_path,
        "--model", "Meta-Llama-3-8B-Instruct", "--gpu", "NVIDIA-H100-PCIe",
    ).stdout  # fmt: skip
    rows = [r for r in csv.DictReader(io.StringIO(text)) if r["offered_rate_rps"] == "16.0"]
    assert len(rows) == 1
    assert float(rows[0]["ttft_p99_ms"]) == pytest.approx(31.06, abs=0.005)
    assert float(rows[0]["total_throughput_tps"]) == pytest.approx(4145.9, abs=0.05)


def test_missing_warehouse_for_export_is_a_clear_message(cli, tmp_path):
    done = cli("benchmarks", "--warehouse", tmp_path / "none.duckdb")
    assert done.returncode == 3 and "fleetplan build" in done.stderr


def test_bad_flag_values_are_usage_errors(cli, tmp_path):
    done = cli("ingest", "--gpu-count", "0", tmp_path)
    assert done.returncode == 2 and "--gpu-count" in done.stderr


def test_stopping_the_app_stops_its_server(sample_warehouse_path):
    # `docker stop`, systemd and the tests stop `fleetplan app` with SIGTERM: the dashboard
    # server must go with it, not run on holding the warehouse
    with served_dashboard(sample_warehouse_path) as (url, process):
        process.terminate()
        # Streamlit's own handler stops the server and exits 0 (a crash would be 1, a signal
        # that nothing handled -15; still running raises TimeoutExpired)
        assert process.wait(timeout=20) == 0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                requests.get(f"{url}/_stcore/health", timeout=1)
            except requests.ConnectionError:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"the dashboard still answers at {url} after `fleetplan app` stopped")


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("plan", "--scenario", "examples/chat-batch-qwen14b.json"), 0),  # a plan
        (("plan", "--scenario", "examples/no-such-file.json"), 1),  # bad input, a clear message
        (("plan", "--capacity-at", "top"), 2),  # a usage error from argparse
        (("--version",), 0),
    ],
)
def test_the_command_in_process_answers_as_the_process_does(cli, sample_warehouse_path, args, code):
    """The `cli` fixture (tests/support/cli.py) stands for `python -m fleetplan` in most tests:
    the same exit code, stdout and stderr as the real process, for a plan, bad input, a usage
    error and --version."""
    from tests.support.paths import ROOT
    from tests.support.processes import fleetplan

    env = {**os.environ, "FLEETPLAN_WAREHOUSE": str(sample_warehouse_path)}
    real = fleetplan(*args, env=env, cwd=ROOT)
    here = cli(*args, env=env, cwd=ROOT)
    assert real.returncode == code, real.stderr
    assert (here.returncode, here.stdout, here.stderr) == (
        real.returncode,
        real.stdout,
        real.stderr,
    )
