"""`fleetplan collect` against vLLM's own `vllm bench serve`, on one real vLLM CPU server.

Both tools send the same workload (random prompts of the same lengths, the same Poisson rate and
request count, ignore_eos) to the same server, alternating, several rounds. Each runs in its own
process; its CPU time is read around the benchmark call alone (module imports excluded for
both; tokenizer loading and prompt making included for both, as each does them). Printed per
round and as medians: request throughput, output throughput, median and P99 TTFT, client CPU
time per request, and the ratios fleetplan / vLLM. Aims: throughput within 5%, median TTFT
within 10%, client CPU time per request no higher than vLLM's tool's.

    python benchmarks/collector_vs_vllm_bench.py [--rounds 3] [--requests 64] [--rate 8]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.inputs.tiny_model import build_tiny_llama, cpu_server_command  # noqa: E402
from fleetplan.collectors.vllm_server import free_port, managed_server  # noqa: E402
from fleetplan.core.contract import RunFile  # noqa: E402
from fleetplan.warehouse.importers.base import FileInput  # noqa: E402
from fleetplan.warehouse.importers.registry import parse  # noqa: E402

VLLM_TOOL = textwrap.dedent("""
    import sys, time
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    args = parser.parse_args(sys.argv[1:])
    started = time.process_time()
    main(args)
    print("CPU_SECONDS", time.process_time() - started)
""")
# Imports happen before the clock starts, as for vLLM's tool (whose `import vllm` loads
# transformers too): fleetplan's modules and the transformers tokenizer it will use.
FLEETPLAN_TOOL = textwrap.dedent("""
    import sys, time
    import transformers.models.auto.tokenization_auto
    import aiohttp, numpy, pydantic, tqdm
    import fleetplan.collectors.run, fleetplan.collectors.collect, fleetplan.collectors.loadgen
    import fleetplan.collectors.prompts, fleetplan.core.contract, fleetplan.collectors.requests_log
    from fleetplan.cli import main
    started = time.process_time()
    code = main(sys.argv[1:])
    print("CPU_SECONDS", time.process_time() - started)
    sys.exit(code)
""")


def run_tool(code: str, args: list[str]) -> float:
    done = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, timeout=1800
    )
    if done.returncode != 0:
        sys.exit(f"tool failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    line = next(row for row in done.stdout.splitlines() if row.startswith("CPU_SECONDS"))
    return float(line.split()[1])


def figures(point) -> dict[str, float]:
    return {
        "req/s": point.request_throughput_rps,
        "out tok/s": point.output_throughput_tps,
        "TTFT p50 ms": point.ttft_p50_ms,
        "TTFT p99 ms": point.ttft_p99_ms,
    }


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--rate", type=float, default=8.0)
    parser.add_argument("--input-len", type=int, default=128)
    parser.add_argument("--output-len", type=int, default=32)
    return parser.parse_args()


def vllm_round(
    url: str, model: str, options: argparse.Namespace, *, round_: int, work: Path
) -> dict[str, float]:
    """`vllm bench serve` once: its figures and client CPU time per request."""
    result = work / f"vllm-{round_}.json"
    cpu = run_tool(
        VLLM_TOOL,
        [
            "--backend",
            "vllm",
            "--base-url",
            url,
            "--model",
            model,
            "--tokenizer",
            model,
            "--dataset-name",
            "random",
            "--random-input-len",
            str(options.input_len),
            "--random-output-len",
            str(options.output_len),
            "--num-prompts",
            str(options.requests),
            "--request-rate",
            str(options.rate),
            "--seed",
            str(round_),
            "--ignore-eos",
            "--save-result",
            "--result-dir",
            str(work),
            "--result-filename",
            result.name,
            "--percentile-metrics",
            "ttft,tpot,itl,e2el",
            "--metric-percentiles",
            "50,99",
            "--disable-tqdm",
            "--temperature",
            "0",
        ],
    )
    run_file = parse(FileInput.from_bytes(result.name, result.read_bytes()), _options())
    point = run_file.runs[0].points[0]
    return {**figures(point), "CPU ms/req": cpu / options.requests * 1000}


def fleetplan_round(
    url: str, model: str, options: argparse.Namespace, *, round_: int, work: Path
) -> dict[str, float]:
    """`fleetplan collect` once, the same workload: its figures and client CPU time per request."""
    out = work / f"fleetplan-{round_}"
    cpu = run_tool(
        FLEETPLAN_TOOL,
        [
            "collect",
            "--backend",
            "openai",
            "--base-url",
            url,
            "--model",
            model,
            "--tokenizer",
            model,
            "--input-len",
            str(options.input_len),
            "--output-len",
            str(options.output_len),
            "--rates",
            str(options.rate),
            "--num-requests",
            str(options.requests),
            "--warmup",
            "0",
            "--seed",
            str(round_),
            "--out",
            str(out),
            "--gpu",
            "cpu",
            "--telemetry",
            "off",
        ],
    )
    (path,) = out.glob("*.json")
    point = RunFile.model_validate_json(path.read_bytes()).runs[0].points[0]
    return {**figures(point), "CPU ms/req": cpu / options.requests * 1000}


def print_medians(rows: dict[str, list[dict[str, float]]], options: argparse.Namespace) -> None:
    medians = {
        tool: {k: statistics.median(r[k] for r in values) for k in values[0]}
        for tool, values in rows.items()
    }
    print(
        f"\nmedians over {options.rounds} rounds ({options.requests} requests at "
        f"{options.rate:g} req/s, {options.input_len}/{options.output_len} tokens):"
    )
    ours, theirs = medians["fleetplan collect"], medians["vllm bench serve"]
    for key in ours:
        print(
            f"  {key:<12} fleetplan {ours[key]:9.2f}   vllm {theirs[key]:9.2f}   ratio "
            f"{ours[key] / theirs[key]:5.3f}"
        )
    print(json.dumps({"fleetplan": ours, "vllm": theirs}))


def main() -> None:
    options = _arguments()
    work = Path(tempfile.mkdtemp(prefix="fleetplan-peer-"))
    model = str(build_tiny_llama(work / "tiny"))
    port = free_port()
    command = cpu_server_command(model, port)
    rows: dict[str, list[dict[str, float]]] = {"vllm bench serve": [], "fleetplan collect": []}
    with managed_server(command, port, work / "server.log", startup_timeout_s=900) as url:
        for round_ in range(options.rounds):
            rows["vllm bench serve"].append(
                vllm_round(url, model, options, round_=round_, work=work)
            )
            rows["fleetplan collect"].append(
                fleetplan_round(url, model, options, round_=round_, work=work)
            )
            for tool, values in rows.items():
                print(
                    f"round {round_ + 1} {tool:<18} "
                    + "  ".join(f"{k} {v:8.2f}" for k, v in values[-1].items())
                )
    print_medians(rows, options)


def _options():
    from fleetplan.warehouse.importers.base import ImportOptions

    return ImportOptions(gpu="cpu", gpu_count=1)  # the file does not say what ran the server


if __name__ == "__main__":
    main()
