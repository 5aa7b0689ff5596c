"""Collectors where no stream is timed: torch and transformers on this CPU (`--backend torch`, a
batch-size sweep on a tiny random Llama or random weights from a config), the GPU probe on a host
without a GPU, and `--backend vllm` with a server that cannot start. They share the machine
(tests/test_collect_engines.py, the vLLM engine's streams, runs alone)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

import pytest

from fleetplan.core.contract import RunFile
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points
from tests.support.paths import ROOT
from tests.support.processes import fleetplan

VLLM = pytest.mark.skipif(
    find_spec("vllm") is None, reason="vllm is not installed (`make test` installs it)"
)
TORCH = pytest.mark.skipif(
    find_spec("transformers") is None,
    reason="transformers is not installed (`make test` installs it)",
)


def collect(*args) -> subprocess.CompletedProcess:
    return fleetplan("collect", *args, timeout=900, cwd=ROOT)


def only_run(folder: Path):
    (path,) = folder.glob("*.json")
    (run,) = RunFile.model_validate_json(path.read_bytes()).runs
    return path, run


@pytest.mark.slow
@TORCH
def test_torch_backend_sweeps_batch_sizes(tiny_model, tmp_path):
    warehouse = tmp_path / "wh.duckdb"
    done = collect(
        "--backend",
        "torch",
        "--model",
        tiny_model,
        "--input-len",
        32,
        "--output-len",
        8,
        "--max-batch",
        4,
        "--out",
        tmp_path / "runs",
        "--gpu",
        "cpu",
        "--ingest",
        "--warehouse",
        warehouse,
    )
    assert done.returncode == 0, done.stderr
    _, run = only_run(tmp_path / "runs")
    assert run.engine == "transformers" and run.metadata["device"] == "cpu"
    assert [p.max_concurrency for p in run.points] == [1, 2, 4]
    for point in run.points:
        assert point.offered_rate_rps is None and point.completed == point.max_concurrency
        assert point.ttft_p50_ms > 0 and point.tpot_p50_ms > 0
        assert point.energy_method.value == "none"
    with Warehouse.open(warehouse, read_only=True) as wh:
        assert list(benchmark_points(wh)["max_concurrency"]) == [1, 2, 4]


@pytest.mark.slow
@TORCH
def test_torch_backend_measures_a_config_with_random_weights(tmp_path):
    config = {
        "model_type": "llama",
        "vocab_size": 512,
        "hidden_size": 128,
        "intermediate_size": 256,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 2,
        "max_position_embeddings": 512,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    done = collect(
        "--backend",
        "torch",
        "--config",
        path,
        "--input-len",
        16,
        "--output-len",
        4,
        "--max-batch",
        2,
        "--out",
        tmp_path / "runs",
        "--gpu",
        "cpu",
    )
    assert done.returncode == 0, done.stderr
    _, run = only_run(tmp_path / "runs")
    assert run.model == "config (random weights)" and len(run.points) == 2


@pytest.mark.slow  # imports torch and transformers: tens of seconds
@TORCH
def test_bundled_8b_config_is_an_8b_llama():
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    raw = json.loads((ROOT / "sample_data/models/llama-3.1-8b-config.json").read_text())
    fields = {k: v for k, v in raw.items() if not k.startswith("_")}
    config = AutoConfig.for_model(fields.pop("model_type"), **fields)
    with torch.device("meta"):  # shapes only: no memory
        model = AutoModelForCausalLM.from_config(config)
    assert sum(p.numel() for p in model.parameters()) == pytest.approx(8.03e9, rel=0.001)


def test_gpu_probe_says_clearly_when_there_is_no_gpu(tmp_path):
    done = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "gpu_probe.sh"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"},
    )
    assert done.returncode != 0
    assert "no CUDA GPU" in done.stderr or "missing" in done.stderr


@pytest.mark.slow
@VLLM
def test_vllm_backend_reports_a_server_that_cannot_start(tmp_path):
    done = collect(
        "--backend",
        "vllm",
        "--model",
        tmp_path / "no-such-model",
        "--engine-arg=--gpu-memory-utilization=0.3",
        "--input-len",
        8,
        "--output-len",
        4,
        "--out",
        tmp_path,
        "--gpu",
        "cpu",
        "--startup-timeout",
        300,
    )
    assert done.returncode == 3
    assert "exited with code" in done.stderr and "log" in done.stderr


@pytest.mark.skipif(not Path("/proc/self/comm").exists(), reason="Linux's /proc only")
def test_the_engine_core_is_lowered_to_yield_to_the_collector(tmp_path):
    """`collectors.vllm_server.yield_engine_core`: under the server's process, the process
    titled as vLLM's engine core (its busy wait starves the collector on a small host) goes to
    the lowest priority, every thread of it; its siblings stay as they are."""
    from fleetplan.collectors.vllm_server import LOWEST_PRIORITY, descendants, yield_engine_core

    child = (
        "import sys, threading, time; open('/proc/self/comm', 'w').write(sys.argv[1]);"
        " threading.Thread(target=time.sleep, args=(60,), daemon=True).start(); time.sleep(60)"
    )
    script = (
        f'{sys.executable} -c "{child}" VLLM::EngineCore & '
        f'{sys.executable} -c "{child}" VLLM::Worker & wait'
    )
    server = subprocess.Popen(["sh", "-c", script])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            names = descendants(server.pid)
            if sorted(n for n in names.values()) == ["VLLM::EngineCor", "VLLM::Worker"]:
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"the children never took their titles: {names}")
        (core,) = [pid for pid, name in names.items() if name == "VLLM::EngineCor"]
        (worker,) = [pid for pid, name in names.items() if name == "VLLM::Worker"]
        assert yield_engine_core(server.pid) == [core]
        threads = [int(t.name) for t in Path(f"/proc/{core}/task").iterdir()]
        assert len(threads) == 2
        assert {os.getpriority(os.PRIO_PROCESS, t) for t in threads} == {LOWEST_PRIORITY}
        assert os.getpriority(os.PRIO_PROCESS, worker) == os.getpriority(os.PRIO_PROCESS, 0)
    finally:
        for pid in descendants(server.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        server.kill()
        server.wait()
