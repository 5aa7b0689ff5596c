"""The capacity model against a live server: predictions checked with `vllm bench serve`.

A real vLLM CPU server serving the tests' tiny random Llama. As a user would:
1. a burst (`fleetplan collect --rates inf`) per token shape, cheapest first, until one
   saturates at a rate the client can drive (`--max-burst`);
2. a doubling ladder of rates relative to that burst's throughput (`--ladder`), each level at
   least `--ladder-seconds` (60) of arrivals and `--ladder-requests` (120), collected with
   `fleetplan collect --backend openai`, ingested; `load_model.fit_curve` on its points;
3. three P99 TTFT targets (or `--targets`) and the predicted capacity C of each; the targets
   lie where both sides of a bracket can be placed (benchmarks/capacity_brackets.py);
4. for each target T, long steady levels (Poisson arrivals, prompts of the same shape,
   ignore_eos) with vLLM's own benchmark (`--checker vllm`, the default) or with the ladder's own
   client (`--checker collect`: on two cores a client's own CPU shows in the P99 TTFT, and vLLM's
   takes twice fleetplan's per request, benchmarks/RESULTS.md) at the two sides of a bracket:
   where the curve predicts a P99 TTFT of T / 1.25 and of 1.25 x T (`--bracket latency`,
   `--margin` 0.25: the accuracy the model is held to; `--tighten`: also 1.125) or at 0.85 x C
   and 1.2 x C (`--bracket rate`, `--multiples`). The measured P99 TTFT must meet T at the lower
   side and miss it at the upper, judged on the P99's own spread (`core.spread.judge_runs`: a
   bootstrap of the runs, then of their per-request TTFTs, so runs of one rate that differ widen
   the interval): each side at least `--min-runs` (2) runs, one more while it cannot tell, up to
   `--max-runs` (3), else "cannot tell", not held; a side that lost requests misses at once;
5. `--find-capacity`: `fleetplan collect --find-capacity --ttft-p99 T` for each target too.
Prints a table and a summary line; `--out` gets the figures as JSON. Exit 0 when every bracket
held, 1 when one did not, 3 when the server or a tool failed, 130 when interrupted.

The shapes are prefill-heavy (long prompts, 16 output tokens): vLLM admits arrivals into its
running batch (up to 128 sequences on CPU), so with long outputs TTFT hardly moves with load
until that batch is full (512/64 tokens here: flat within noise from 2 to 7 req/s); a long
prompt's prefill is work each later arrival waits behind, so TTFT grows with load as in a
queue, which a P99 TTFT target can bracket. Prefix caching is off (seeded prompts would hit a
cached prefix and skip the prefill measured). A hand-run check, not a test (timings on a shared
machine are noisy): 36 min on 2 cores, the defaults, `--checker collect` (benchmarks/RESULTS.md).

    python benchmarks/capacity_live.py [--targets 40,80,160] [--requests 400] [--tighten]
        [--bracket latency|rate] [--margin 0.25] [--min-runs 2] [--max-runs 3]
        [--checker vllm|collect] [--control] [--find-capacity] [--out capacity-live.json]
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402

from benchmarks.capacity_brackets import (  # noqa: E402
    BracketError,
    bracket_of,
    bracket_pairs,
    choose_targets,
    floats,
    lost_requests,
    side_unit,
)
from benchmarks.inputs.tiny_model import build_tiny_llama, cpu_server_command  # noqa: E402
from fleetplan.collectors.vllm_server import free_port, managed_server  # noqa: E402
from fleetplan.core import exits  # noqa: E402
from fleetplan.core.contract import RunFile  # noqa: E402
from fleetplan.core.errors import FleetplanError  # noqa: E402
from fleetplan.core.spread import DEFAULT_CONFIDENCE, judge_runs  # noqa: E402
from fleetplan.planner.curve.load_curve import LoadCurve, fit_curve, measured_rule  # noqa: E402
from fleetplan.warehouse.db import Warehouse  # noqa: E402
from fleetplan.warehouse.queries import benchmark_points  # noqa: E402

# Prefill-heavy (see the module's docstring), cheapest first; within max-model-len 1024.
SHAPES = ((256, 16), (512, 16), (896, 16))
VLLM_TOOL = (  # `vllm bench serve` (its console script fails here: see the developers' guide)
    "import sys; from vllm.benchmarks.serve import add_cli_args, main; "
    "from vllm.utils.argparse_utils import FlexibleArgumentParser as P; "
    "p = P(); add_cli_args(p); main(p.parse_args(sys.argv[1:]))"
)


class LiveError(FleetplanError):
    """A tool or the server failed; the message says which and ends with its output."""


def arguments(description: str, argv: list[str] | None = None) -> argparse.Namespace:
    """capacity_live.py's options, parsed (its docstring says what each step does)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--targets", help="three P99 TTFT targets in ms (default: from the curve)")
    p.add_argument("--requests", type=int, default=400, help="requests per validation level")
    p.add_argument("--ladder", default="0.125,0.25,0.5,1,2", help="rates x burst throughput")
    p.add_argument("--ladder-requests", type=int, default=120, help="least requests a level")
    p.add_argument("--ladder-seconds", type=float, default=60.0, help="least arrivals a level")
    p.add_argument("--burst-requests", type=int, default=64)
    p.add_argument("--max-burst", type=float, default=20.0, help="req/s a shape may burst at")
    p.add_argument("--input-len", type=int, help="fix the shape (with --output-len)")
    p.add_argument("--output-len", type=int)
    p.add_argument(
        "--bracket",
        choices=("latency", "rate"),
        default="latency",
        help="sides where the curve predicts target/(1+m), (1+m) x target; or rates",
    )
    p.add_argument("--margin", type=float, default=0.25, help="m of a latency bracket")
    p.add_argument("--multiples", default="0.85,1.2", help="rate bracket: x the prediction")
    p.add_argument("--tighten", action="store_true", help="also m/2 (rate: 0.9 x and 1.1 x)")
    p.add_argument("--extrapolate", action="store_true", help="let the curve extrapolate")
    p.add_argument("--control", action="store_true", help="each level with collect too")
    p.add_argument("--checker", choices=("vllm", "collect"), default="vllm", help="check tool")
    p.add_argument("--find-capacity", action="store_true", help="run collect --find-capacity")
    p.add_argument("--tolerance", type=float, default=0.1, help="for --find-capacity")
    p.add_argument("--base-url", help="use this running server (with --model DIR) instead")
    p.add_argument("--model", help="the served model's folder (with --base-url)")
    p.add_argument("--work", type=Path, help="folder for run files and logs (default: temp)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-runs", type=int, default=3, help="runs of a rate to decide a bracket")
    p.add_argument("--min-runs", type=int, default=2, help="runs of a rate before it decides")
    p.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE, help="of the P99")
    p.add_argument("--out", type=Path, help="write the figures as JSON here")
    return p.parse_args(argv)


def _tool(command: list[str], what: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=3600)
    if done.returncode not in ok:
        tail = (done.stdout[-1500:] + "\n" + done.stderr[-2500:]).strip()
        raise LiveError(f"{what} failed with exit code {done.returncode}:\n{tail}")
    return done


def collect(
    ctx: argparse.Namespace, folder: Path, *args: object, ok: tuple[int, ...] = (0, 1)
) -> tuple[RunFile, list[str]]:
    """`fleetplan collect --backend openai` with the live shape: its run file and the problems it
    reported (exit 1: it still wrote, and ingested, the run file), which are printed too."""
    command = [sys.executable, "-m", "fleetplan", "collect", "--backend", "openai"]
    command += ["--base-url", ctx.url, "--model", ctx.model_dir, "--tokenizer", ctx.model_dir]
    command += ["--input-len", str(ctx.shape[0]), "--output-len", str(ctx.shape[1])]
    command += ["--out", str(folder), "--gpu", "cpu", "--telemetry", "off", *map(str, args)]
    done = _tool(command, "fleetplan collect", ok)
    problems = [line for line in done.stderr.splitlines() if line.startswith("problem")]
    for problem in problems:
        print(f"  collect said: {problem}", flush=True)
    paths = list(folder.glob("*.json"))
    if len(paths) != 1:
        raise LiveError(f"fleetplan collect wrote no run file in {folder}:\n{done.stderr[-2500:]}")
    return RunFile.model_validate_json(paths[0].read_bytes()), problems


def _rates(values: list[float]) -> str:
    return ",".join(f"{value:.3g}" for value in values)


def choose_shape(ctx: argparse.Namespace) -> float:
    """The first shape whose burst throughput the client can drive: that throughput (req/s)."""
    shapes = [(ctx.input_len, ctx.output_len)] if ctx.input_len else list(SHAPES)
    for shape in shapes:
        ctx.shape = shape
        folder = ctx.work / f"burst-{shape[0]}-{shape[1]}"
        run_file, _ = collect(
            ctx, folder, "--rates", "inf", "--num-requests", ctx.burst_requests, "--seed", 99
        )
        burst = run_file.runs[0].points[0].request_throughput_rps
        print(f"burst {shape[0]}/{shape[1]} tokens: {burst:.2f} req/s", flush=True)
        if burst <= ctx.max_burst:
            return burst
    return burst  # the longest shape, even if quicker than wanted: say so in the output


def ladder(ctx: argparse.Namespace, burst: float) -> tuple[pd.DataFrame, LoadCurve]:
    """The doubling ladder as a user collects it, a level per run, ingested; the fitted curve.
    Each level spans `--ladder-seconds` of arrivals at least: 120 requests at 7.3 req/s (16 s)
    kept pace where 400 at 6.8 built a line for a minute (benchmarks/RESULTS.md)."""
    warehouse = ctx.work / "ladder.duckdb"
    for n, rate in enumerate(burst * factor for factor in floats(ctx.ladder)):
        count = max(ctx.ladder_requests, math.ceil(rate * ctx.ladder_seconds))
        collect(
            ctx,
            ctx.work / f"ladder-{n}",
            *("--rates", _rates([rate]), "--num-requests", count, "--seed", ctx.seed + n),
            *("--ingest", "--warehouse", warehouse),
        )
    with Warehouse.open(warehouse, read_only=True) as wh:
        frame = benchmark_points(wh)
    curve = fit_curve(frame)
    print("\nladder (offered -> sustained req/s, P99 TTFT, judgement):")
    for level in curve.levels:
        sustained = "-" if level.sustained_rps is None else f"{level.sustained_rps:6.2f}"
        print(
            f"  {level.offered_rps:6.2f} -> {sustained}  {level.ttft_p99_ms or math.nan:8.1f} ms"
            f"  {level.load_reason}"
        )
    saturation = f"{curve.saturation_rps:.2f} req/s" if curve.saturation_rps else "not reached"
    print(f"saturation: {saturation}; problem: {curve.problem or 'none'}", flush=True)
    return frame, curve


def vllm_level(ctx: argparse.Namespace, rate: float) -> dict[str, float]:
    """One steady level with `vllm bench serve`: its measured figures and per-request TTFTs
    (`--save-detailed`). A rate is measured again only to decide a bracket (`judged_at`)."""
    key = f"{rate:.4f}"
    runs = ctx.measured.setdefault(key, [])
    if ctx.checker == "collect":
        runs.append(collect_level(ctx, rate, key, len(runs) + 1))
        return runs[-1]
    name = f"vllm-{key}-{len(runs) + 1}.json"
    args = ["--backend", "vllm", "--base-url", ctx.url, "--model", ctx.model_dir]
    args += ["--tokenizer", ctx.model_dir, "--dataset-name", "random"]
    args += ["--random-input-len", str(ctx.shape[0]), "--random-output-len", str(ctx.shape[1])]
    args += ["--num-prompts", str(ctx.requests), "--request-rate", key]
    ctx.seeds += 1
    args += ["--seed", str(ctx.seed + ctx.seeds), "--ignore-eos", "--temperature", "0"]
    args += ["--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,99"]
    args += ["--save-result", "--save-detailed", "--result-dir", str(ctx.work)]
    args += ["--result-filename", name]
    _tool([sys.executable, "-c", VLLM_TOOL, *args, "--disable-tqdm"], "vllm bench serve")
    result = json.loads((ctx.work / name).read_text())
    keys = ("completed", "failed", "duration", "request_throughput", "median_ttft_ms")
    level = {"rate_rps": rate, "p99_ttft_ms": result["p99_ttft_ms"]}
    level |= {key: result.get(key) for key in keys}
    errors = result.get("errors") or [""] * len(result.get("ttfts") or [])
    level["ttfts_ms"] = [
        1000 * ttft
        for ttft, error in zip(result.get("ttfts") or [], errors, strict=True)
        if not error
    ]
    if ctx.control and not runs:  # the same rate with fleetplan's collector: tools apart
        folder = ctx.work / f"control-{key}"
        args = ("--rates", key, "--num-requests", ctx.requests, "--seed", ctx.seed + 700)
        run_file, _ = collect(ctx, folder, *args)
        level["control_p99_ttft_ms"] = run_file.runs[0].points[0].ttft_p99_ms
    runs.append(level)
    return level


def collect_level(ctx: argparse.Namespace, rate: float, key: str, n: int) -> dict:
    """One steady level with the ladder's own client (`--checker collect`): the same figures."""
    ctx.seeds += 1
    args = ("--rates", key, "--num-requests", ctx.requests, "--seed", ctx.seed + 900 + ctx.seeds)
    run_file, _ = collect(ctx, ctx.work / f"check-{key}-{n}", *args)
    point = run_file.runs[0].points[0]
    log = point.requests
    ttfts = [1000 * log.ttft_s[i] for i in log.succeeded] if log else []
    return {
        "rate_rps": rate,
        "p99_ttft_ms": point.ttft_p99_ms,
        "completed": point.completed,
        "failed": point.failed,
        "complete": point.complete,
        "duration": point.duration_s,
        "request_throughput": point.request_throughput_rps,
        "median_ttft_ms": point.ttft_p50_ms,
        "ttfts_ms": ttfts,
    }


def judged_at(ctx: argparse.Namespace, rate: float, target: float) -> dict:
    """The rate's P99 TTFT against the target on its own spread (`core.spread.judge_runs`:
    runs, then their requests, resampled), at least `--min-runs` runs, one more while it
    cannot tell, at most `--max-runs` in all."""
    if not ctx.measured.get(f"{rate:.4f}"):
        vllm_level(ctx, rate)
    runs = ctx.measured[f"{rate:.4f}"]  # the list vllm_level appends each run to
    while True:
        values = [run["ttfts_ms"] for run in runs]
        seed = sum(map(len, values))
        judged = judge_runs(
            values, target, confidence=ctx.confidence, seed=seed, min_runs=ctx.min_runs
        )
        lost = lost_requests(runs)  # a P99 of the requests that succeeded does not see these
        if lost or judged.decision != "cannot tell" or len(runs) >= ctx.max_runs:
            break
        print(f"    {judged.reason()}: measuring {rate:.2f} req/s again", flush=True)
        vllm_level(ctx, rate)
    shown = {key: value for key, value in runs[0].items() if key != "ttfts_ms"}  # first run's
    shown |= {"pooled_p99_ms": judged.value_ms, "interval_ms": [judged.low_ms, judged.high_ms]}
    decision, words = ("misses", lost) if lost else (judged.decision, judged.reason())
    return shown | {"decision": decision, "runs": len(runs), "judgement": words}


def _predicted(ctx: argparse.Namespace, frame: pd.DataFrame, curve: LoadCurve, target: float):
    targets = dict(target_ttft_p99_ms=target, target_tpot_p99_ms=None)
    estimate = curve.capacity(**targets, extrapolate=ctx.extrapolate or ctx.bracket == "latency")
    print(f"\ntarget {target:g} ms: capacity {estimate.capacity_rps:.2f} req/s", flush=True)
    return {
        "target_ms": target,
        "capacity_rps": estimate.capacity_rps,
        "basis": str(estimate.basis),
        "reason": estimate.reason,
        "predicted_p99_ms": estimate.ttft_p99_ms,
        "measured_rule_rps": measured_rule(frame, **targets),
        "levels": {},
        "brackets": [],
    }


def validate(ctx: argparse.Namespace, frame: pd.DataFrame, curve: LoadCurve) -> list[dict]:
    """Each target's prediction, and the measured P99 TTFT either side of it
    (`capacity_brackets`: where the curve predicts target / (1 + m) and (1 + m) x target, or at
    multiples of the capacity). The figures so far go to `--out` after each target."""
    targets = floats(ctx.targets) if ctx.targets else choose_targets(curve, ctx)
    rows = []
    for n, target in enumerate(targets):
        row = _predicted(ctx, frame, curve, target)
        pairs = bracket_pairs(ctx, curve, target, row["capacity_rps"])
        for sides in pairs if row["capacity_rps"] > 0 else []:
            for label, rate in sides:
                level = judged_at(ctx, rate, target)
                row["levels"][label] = level
                control = level.get("control_p99_ttft_ms")
                also = "" if control is None else f" (fleetplan collect: {control:.1f} ms)"
                said = f"{label}{side_unit(ctx)} at {rate:.2f} req/s: {level['judgement']}{also}"
                print(f"  {said}", flush=True)
            row["brackets"].append(bracket_of(row["levels"], sides))
        if ctx.find_capacity:
            row["find_capacity"] = find_capacity(ctx, target, row["capacity_rps"], n)
        rows.append(row)
        save(ctx, rows, partial=n + 1 < len(targets))
    return rows


def find_capacity(ctx: argparse.Namespace, target: float, capacity: float, n: int) -> dict:
    """`fleetplan collect --find-capacity` for one target: the capacity and bracket it records.
    Its ladder starts at half the prediction (doubling while levels pass), not at the user's
    lowest rate: levels of 400 requests at 1/8 of the burst rate would take minutes each."""
    start = 0.5 * capacity if capacity > 0 else ctx.ladder_rates[0]
    run_file, problems = collect(
        ctx,
        ctx.work / f"find-{n}",
        *("--find-capacity", "--ttft-p99", target, "--tolerance", ctx.tolerance),
        *("--rates", _rates([start]), "--seed", ctx.seed + 500 + n),
        ok=(0, 1, 2),  # 2: no rate passed
    )
    meta = run_file.runs[0].metadata
    found = meta.get("search_capacity_rps", "none")
    result = {
        "capacity_rps": None if found == "none" else float(found),
        "bracket_rps": meta.get("search_bracket_rps"),
        "result": meta.get("search_result"),
        "levels": len(run_file.runs[0].points),
        "problems": problems,
    }
    print(f"  collect --find-capacity: {result['result']}", flush=True)
    return result


def _collect_searches() -> bool:
    """Whether this checkout's `fleetplan collect` has the SLO search (`--find-capacity`)."""
    command = [sys.executable, "-m", "fleetplan", "collect", "--help"]
    return "--find-capacity" in _tool(command, "fleetplan collect --help").stdout


def measure(ctx: argparse.Namespace) -> int:
    if ctx.find_capacity and not _collect_searches():
        print("fleetplan collect has no --find-capacity here: that column is left out")
        ctx.find_capacity = False
    burst = choose_shape(ctx)
    ctx.ladder_rates = [burst * factor for factor in floats(ctx.ladder)]
    ctx.burst = burst
    frame, curve = ladder(ctx, burst)
    ctx.curve = curve
    try:
        rows = validate(ctx, frame, curve)
    except BracketError as error:
        print(f"capacity_live: {error}", file=sys.stderr)
        return exits.EXIT_PROBLEMS
    code = print_table(ctx, rows)
    if ctx.out:
        print(f"figures: {ctx.out}")
    return code


def save(ctx: argparse.Namespace, rows: list[dict], partial: bool) -> None:
    """The figures so far as JSON (`--out`): written after each target, so an interrupted run
    keeps what it measured."""
    if not ctx.out:
        return
    curve = ctx.curve
    figures = {
        "shape": {"input_len": ctx.shape[0], "output_len": ctx.shape[1]},
        "burst_rps": ctx.burst,
        "ladder": [vars_of(level) for level in curve.levels],
        "saturation_rps": curve.saturation_rps,
        "curve_problem": curve.problem,
        "bracket": ctx.bracket,
        "margin": ctx.margin if ctx.bracket == "latency" else None,
        "min_runs": ctx.min_runs,
        "targets": rows,
        "partial": partial,
        "requests_per_level": ctx.requests,
        "minutes": (time.monotonic() - ctx.started) / 60,
        "command": " ".join(sys.argv),
    }
    ctx.out.write_text(json.dumps(figures, indent=2, default=str))


def vars_of(level: object) -> dict:
    return {name: getattr(level, name) for name in level.__dataclass_fields__}


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # the server's context manager stops it on the way out


def main(argv: list[str] | None = None) -> int:
    ctx = arguments(__doc__.split("\n\n")[0], argv)
    if bool(ctx.base_url) != bool(ctx.model):
        sys.exit("capacity_live: --base-url and --model (the served model's folder) go together")
    ctx.started, ctx.measured, ctx.seeds = time.monotonic(), {}, 0
    ctx.work = ctx.work or Path(tempfile.mkdtemp(prefix="fleetplan-capacity-"))
    ctx.work.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _stop)
    try:
        if ctx.base_url:
            ctx.url, ctx.model_dir = ctx.base_url, ctx.model
            return measure(ctx)
        ctx.model_dir = str(build_tiny_llama(ctx.work / "tiny"))
        port = free_port()
        command = [*cpu_server_command(ctx.model_dir, port), "--no-enable-prefix-caching"]
        print(f"work folder: {ctx.work}; starting the vLLM CPU server...", flush=True)
        with managed_server(command, port, ctx.work / "server.log", startup_timeout_s=900) as url:
            ctx.url = url
            return measure(ctx)
    except KeyboardInterrupt:
        print("interrupted; the server was stopped", file=sys.stderr)
        return exits.EXIT_INTERRUPTED
    except (FleetplanError, subprocess.TimeoutExpired) as error:
        print(f"capacity_live: {error}", file=sys.stderr)
        return exits.EXIT_CANNOT_START


# The table and summary line: per target, the predicted capacity, the P99 TTFT at each side of its
# brackets (pooled over the runs that decided it, and the rate it was measured at) and whether each
# bracket held. A latency bracket's sides are labelled by the P99 the curve predicts there, as a
# multiple of the target ("0.8T"); a rate bracket's by the multiple of the capacity ("0.85x").


def _p99(row: dict, multiple: float) -> str:
    """vLLM's P99 TTFT at this multiple (pooled over its runs, how many when more than one),
    and fleetplan collect's after a slash (--control)."""
    level = row["levels"].get(f"{multiple:.3g}", {})
    figures = [level.get(key) for key in ("pooled_p99_ms", "control_p99_ttft_ms")]
    shown = "/".join(f"{value:.0f}" for value in figures if value is not None) or "-"
    if level.get("rate_rps"):
        shown += f"@{level['rate_rps']:.2f}"
    return shown + (f" ({level['runs']}r)" if level.get("runs", 1) > 1 else "")


def verdict(bracket: dict, unit: str = "x") -> str:
    """One bracket in words; `unit`: "T" where its sides are multiples of the target latency,
    "x" where they are multiples of the capacity."""
    sides = f"{bracket['low']:g}{unit}/{bracket['high']:g}{unit}"
    if bracket["met"] and bracket["missed"]:
        return f"{sides} yes"
    if bracket.get("undecided"):
        undecided = " and ".join(f"{float(m):g}{unit}" for m in bracket["undecided"])
        return f"{sides} cannot tell at {undecided}"
    low, high = "met" if bracket["met"] else "NOT met", "missed" if bracket["missed"] else "MET"
    return f"{sides} NO ({low} low, {high} high)"


def print_table(ctx: argparse.Namespace, rows: list[dict]) -> int:
    """The table and the summary line; the exit code (every bracket held or not)."""
    multiples = sorted({float(m) for row in rows for m in row["levels"]})
    unit = side_unit(ctx)
    head = f"{'target':>8} {'capacity':>8} {'basis':<12} {'rule':>6} "
    head += " ".join(f"{f'P99@{m:.3g}{unit}':>17}" for m in multiples)
    print("\n" + head + ("  find-cap" if ctx.find_capacity else "") + "  held")
    brackets = [bracket for row in rows for bracket in row["brackets"]]
    for row in rows:
        line = f"{row['target_ms']:>6g}ms {row['capacity_rps']:>8.2f} {row['basis']:<12} "
        line += f"{row['measured_rule_rps']:>6.2f} "
        line += " ".join(f"{_p99(row, m):>17}" for m in multiples)
        if "find_capacity" in row:
            line += f"  {row['find_capacity']['capacity_rps'] or 0:8.2f}"
        verdicts = [verdict(bracket, unit) for bracket in row["brackets"]]
        print(line + "  " + ("; ".join(verdicts) or "no prediction"))
    held = sum(bracket["met"] and bracket["missed"] for bracket in brackets)
    undecided = sum(bool(bracket.get("undecided")) for bracket in brackets)
    runs = sum(len(levels) for levels in ctx.measured.values())
    print(
        f"\nsummary: {held} of {len(brackets)} brackets held, {undecided} undecided after up to "
        f"{ctx.max_runs} runs of a rate, at least {ctx.min_runs} ({runs} runs of "
        f"{len(ctx.measured)} rates; each side judged on the {ctx.confidence:.0%} interval of a "
        "bootstrap of its runs, then their per-request TTFTs; "
        + (
            f"sides where the curve predicts target / {1 + ctx.margin:g} and "
            f"{1 + ctx.margin:g} x target, "
            if ctx.bracket == "latency"
            else f"sides at {ctx.multiples} x the capacity, "
        )
        + f"P99 TTFT from {'fleetplan collect' if ctx.checker == 'collect' else 'vllm bench serve'}"
        f"{'/fleetplan collect' if ctx.control else ''}); shape {ctx.shape[0]}/{ctx.shape[1]} "
        f"tokens, {ctx.requests} requests per level; {(time.monotonic() - ctx.started) / 60:.1f}"
        " min"
    )
    return exits.EXIT_OK if brackets and held == len(brackets) else exits.EXIT_PROBLEMS


if __name__ == "__main__":
    sys.exit(main())
