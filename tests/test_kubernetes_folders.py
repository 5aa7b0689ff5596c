"""Experiment folders as public benchmarks lay them out (the inference-perf KubeCon NA 2025
demos, kubernetes-sigs/inference-perf `demos/kubecon-na-2025/`: config.yaml at the top, one
folder per experiment with its Kubernetes manifests.yaml beside results/) import whole, exit 0:
the manifests and configs are read for what they say (model, GPU and count, the engine, its
version and arguments as the server's variant) and listed as skipped.

The folder here is fleetplan's own: inference-perf 0.7.0's real stage reports of a vLLM CPU
server (tests/fixtures/real_clients/inference-perf-rate) laid out the way the demos are, with
manifests written the way theirs are (three documents after a blank line, GKE's accelerator
label, `$(MODEL_ID)` from the container's env, an argument with a space in one item, a JSON
argument after its flag)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.importers.inference_perf import engine_command, variant_of
from fleetplan.warehouse.queries import benchmark_points
from tests.support.paths import ROOT

REAL = ROOT / "tests" / "fixtures" / "real_clients" / "inference-perf-rate"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
SPECULATIVE = '{"method": "eagle3", "num_speculative_tokens": 4}'

MANIFESTS = f"""
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm-deployment
spec:
  replicas: 1
  template:
    spec:
      containers:
      - args:
        - "--model=$(MODEL_ID)"
        - "--gpu_memory_utilization=0.9"
        - "--max-num-seqs=128"
        - "--no-enable-prefix-caching"
        - "--quantization bitsandbytes"
        - "--speculative_config"
        - '{SPECULATIVE}'
        - "--port=8000"
        command:
        - python3
        - "-m"
        - vllm.entrypoints.openai.api_server
        env:
        - name: MODEL_ID
          value: {MODEL}
        - name: HUGGING_FACE_HUB_TOKEN
          valueFrom:
            secretKeyRef:
              key: hf_api_token
              name: hf-secret
        - name: VLLM_USE_V1
          value: "0"
        image: vllm/vllm-openai:v0.11.0
        name: inference-server
        resources:
          limits:
            nvidia.com/gpu: 1
          requests:
            nvidia.com/gpu: 1
      nodeSelector:
        cloud.google.com/gke-accelerator: nvidia-h100-80gb
---
apiVersion: v1
kind: Service
metadata:
  name: vllm-service
spec:
  ports:
  - port: 8000
---
apiVersion: monitoring.googleapis.com/v1
kind: PodMonitoring
metadata:
  name: vllm-monitoring
spec:
  endpoints:
  - port: 8000
"""

VARIANT = (
    "--gpu-memory-utilization=0.9 --max-num-seqs=128 --no-enable-prefix-caching "
    f"--quantization=bitsandbytes --speculative-config={SPECULATIVE} VLLM_USE_V1=0"
)


def kubecon_folder(root: Path) -> Path:
    """config.yaml at the top, EXPERIMENT/manifests.yaml, EXPERIMENT/results/ (the tool's
    files), analysis/ with the demos' legend, and a stage's Prometheus report."""
    top = root / "kubecon-style"
    results = top / "vllm+tuned" / "results"
    results.mkdir(parents=True)
    for path in REAL.iterdir():
        if path.name == "config.yaml":
            shutil.copy(path, top / "config.yaml")
        elif path.suffix in {".json", ".yaml"}:
            shutil.copy(path, results / path.name)
    (top / "vllm+tuned" / "manifests.yaml").write_text(MANIFESTS)
    (top / "analysis").mkdir()
    legend = {"Report 1": "vllm+tuned/results"}
    (top / "analysis" / "analyzed_reports_legend.json").write_text(json.dumps(legend))
    prometheus = {
        "load_summary": {},
        "successes": {"count": 60, "rate": 2.4, "queue_len": {"mean": 0}},
        "failures": {},
    }
    (results / "stage_0_prometheus_metrics.json").write_text(json.dumps(prometheus))
    return top


def stored(path: Path):
    warehouse = Warehouse.open(path, read_only=True)
    try:
        return benchmark_points(warehouse)
    finally:
        warehouse.connection.close()


def test_the_issues_command_imports_a_kubecon_style_folder_whole(cli, tmp_path):
    folder = kubecon_folder(tmp_path)
    path = tmp_path / "wh.duckdb"
    done = cli(
        "ingest", "--warehouse", path, "--gpu", "h100-sxm", "--model", MODEL, folder, input=""
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 imported" in done.stdout and "0 rejected" in done.stdout, done.stdout
    for skipped in (
        "manifests.yaml: Kubernetes manifests",
        "analyzed_reports_legend.json",
        "stage_0_prometheus_metrics.json: inference-perf's Prometheus metrics",
        "config.yaml: inference-perf's configuration",
    ):
        assert any(
            line.startswith("skipped") and skipped in line for line in done.stdout.splitlines()
        ), skipped
    # the client named its requests "tiny-llama"; the server served the manifests' model
    assert "config.yaml names the model 'tiny-llama'" in done.stdout
    points = stored(path)
    assert len(points) == 4
    assert set(points["gpu_model"]) == {"h100-sxm"}
    assert set(points["gpu_label"]) == {"nvidia-h100-80gb"}
    assert set(points["gpu_count"]) == {1} and set(points["model"]) == {MODEL}
    assert set(points["engine"]) == {"vllm"} and set(points["engine_version"]) == {"0.11.0"}
    assert set(points["variant"]) == {VARIANT}
    # the traffic from config.yaml two folders up: random prompts of 128 tokens, 16 out
    assert set(zip(points["dataset"], points["input_len"], points["output_len"], strict=True)) == {
        ("synthetic", 128, 16)
    }
    # every stage at the rate inference-perf really sent it at (achieved_rate)
    achieved = sorted(
        json.loads((REAL / f"stage_{n}_lifecycle_metrics.json").read_text())["load_summary"][
            "achieved_rate"
        ]
        for n in range(4)
    )
    assert sorted(points["offered_rate_rps"]) == pytest.approx(achieved)


def test_without_flags_the_manifests_say_the_gpu_its_count_and_the_model(cli, tmp_path):
    folder = kubecon_folder(tmp_path)
    path = tmp_path / "wh.duckdb"
    done = cli("ingest", "--warehouse", path, folder, input="")
    assert done.returncode == 0, done.stdout + done.stderr
    points = stored(path)
    assert set(zip(points["gpu_model"], points["gpu_count"], points["model"], strict=True)) == {
        ("h100-sxm", 1, MODEL)
    }


def test_a_flag_the_manifests_contradict_is_refused(cli, tmp_path):
    folder = kubecon_folder(tmp_path)
    done = cli("ingest", "--warehouse", tmp_path / "wh.duckdb", "--gpu", "h100-pcie", folder)
    assert done.returncode == 1
    assert "the file says 'nvidia-h100-80gb' (h100-sxm) but --gpu says 'h100-pcie'" in done.stdout


@pytest.mark.parametrize(
    ("container", "expected"),
    [
        (
            {
                "image": "vllm/vllm-openai:latest",
                "command": ["vllm", "serve", "Qwen/Qwen3-8B"],
                "args": ["--tensor-parallel-size", "2", "--max-num-seqs", "64", "--port", "80"],
            },
            {
                "engine": "vllm",
                "engine_version": None,
                "model": "Qwen/Qwen3-8B",
                "tp": 2,
                "variant": "--max-num-seqs=64",
            },
        ),
        (
            {
                "image": "lmsysorg/sglang:v0.4.6.post1-cu124",
                "command": ["python3", "-m", "sglang.launch_server"],
                "args": [
                    "--model-path",
                    "meta-llama/Llama-3.1-8B-Instruct",
                    "--tp",
                    "4",
                    "--enable-torch-compile",
                ],
            },
            {
                "engine": "sglang",
                "engine_version": "0.4.6",
                "model": MODEL,
                "tp": 4,
                "variant": "--enable-torch-compile",
            },
        ),
        ({"image": "nginx:1.25", "args": ["--port", "80"]}, None),
    ],
)
def test_an_engines_container_says_its_model_engine_version_and_arguments(container, expected):
    assert engine_command(container) == expected


def test_a_variant_longer_than_a_name_is_cut_with_a_digest_of_the_whole():
    long = variant_of([(f"flag-{i}", "x" * 20) for i in range(40)])
    assert len(long) <= 500 and " ... sha256:" in long
    other = variant_of([(f"flag-{i}", "x" * 20) for i in range(41)])
    assert other != long  # two servers that differ after the cut are still two


def _quantiles(low: float, high: float) -> dict[str, float]:
    """Statistics rising evenly from `low` (min) to `high` (max), as inference-perf writes them."""
    keys = ("min", "p0.1", "p1", "p5", "p10", "p25", "median", "p75", "p90", "p95", "p99")
    steps = [low + (high - low) * i / (len(keys)) for i in range(len(keys))]
    found = dict(zip(keys, steps, strict=True)) | {"p99.9": high, "max": high}
    return found | {"mean": found["median"]}


def test_a_tpot_taken_per_streamed_chunk_is_not_stored_and_says_why():
    """The inference-perf of the KubeCon NA 2025 demos divided each request's first-to-last
    token time by its streamed chunks (two a token there), not its tokens: at 1 req/s on an H100
    80GB its TPOT is 3.47 ms while its E2EL median of 480 ms less a 40 ms TTFT over 64 tokens is
    7 ms a token. Where a stage's own figures prove it, its TPOT is not stored (unknown, never
    planned with) and the level says why; a stage whose figures agree keeps its TPOT."""
    from fleetplan.warehouse.importers.base import FileInput, ImportOptions
    from fleetplan.warehouse.importers.registry import parse

    real = (REAL / "stage_0_lifecycle_metrics.json").read_bytes()
    options = ImportOptions(gpu="h100-sxm", gpu_count=1, model=MODEL)
    (kept,) = parse(FileInput.from_bytes("stage_0_lifecycle_metrics.json", real), options).runs
    assert kept.points[0].tpot_p99_ms is not None and kept.points[0].itl_p99_ms is not None
    assert not [n for n in kept.points[0].notes if "not stored" in n]

    report = json.loads(real)
    successes = report["successes"]
    successes["latency"] |= {  # the demo's first stage, in seconds (its figures, rounded)
        "request_latency": _quantiles(0.4725, 0.4900),
        "time_to_first_token": _quantiles(0.0280, 0.0450),
        "time_per_output_token": _quantiles(0.00340, 0.00360),
    }
    successes["output_len"] = _quantiles(36, 68)
    forged = json.dumps(report).encode()
    (run,) = parse(FileInput.from_bytes("stage_0_lifecycle_metrics.json", forged), options).runs
    point = run.points[0]
    assert point.tpot_p50_ms is None and point.tpot_p99_ms is None  # unknown, not half
    assert point.itl_p50_ms is None and point.itl_p99_ms is None  # gaps between chunks too
    assert point.ttft_p99_ms and point.e2el_p99_ms  # the rest as stated
    (why,) = [n for n in point.notes if "TPOT and ITL not stored" in n]
    assert "counts streamed chunks, not tokens" in why
    # E2EL median 481.0 ms - TTFT P90 40.4 ms over the 58.3 tokens after the first (output P90
    # 59.3): 7.58 ms a token at least, where the file's TPOT P90 is 3.55 ms
    assert "about 7.58 ms a token" in why and "(P90 3.55 ms)" in why


def test_a_report_of_inference_perf_before_0_5_keeps_no_tpot_or_itl_whatever_its_figures():
    """inference-perf before v0.5.0 timed streamed messages, not tokens (TPOT = (last message -
    first) / (messages - 1), ITL the gaps between messages); v0.5.0 made both per token and
    wrote `benchmark_time_seconds` into every report for the first time. A stage report without
    it keeps neither figure, even where its own figures prove nothing (a saturated stage, or a
    server that streams a token a message), and says why; TTFT and E2EL are kept."""
    from fleetplan.warehouse.importers.base import FileInput, ImportOptions
    from fleetplan.warehouse.importers.registry import parse

    report = json.loads((REAL / "stage_0_lifecycle_metrics.json").read_bytes())
    options = ImportOptions(gpu="h100-sxm", gpu_count=1, model=MODEL)

    def point(report):
        data = json.dumps(report).encode()
        (run,) = parse(FileInput.from_bytes("stage_0_lifecycle_metrics.json", data), options).runs
        return run.points[0]

    assert "benchmark_time_seconds" in report  # 0.7.0's own report: per token, kept
    kept = point(report)
    assert kept.tpot_p99_ms is not None and kept.itl_p99_ms is not None
    del report["benchmark_time_seconds"]
    old = point(report)
    assert old.tpot_p50_ms is None and old.tpot_p99_ms is None
    assert old.itl_p50_ms is None and old.itl_p99_ms is None
    assert old.ttft_p99_ms == kept.ttft_p99_ms and old.e2el_p99_ms == kept.e2el_p99_ms
    (why,) = [n for n in old.notes if "not stored" in n]
    assert "no benchmark_time_seconds" in why and "before v0.5.0" in why
    assert "messages, not tokens" in why
