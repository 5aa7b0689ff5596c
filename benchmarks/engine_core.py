"""The collector against a vLLM CPU server whose engine core yields to it, and against one whose
engine core does not (`collectors.vllm_server.yield_engine_core`), in one run.

vLLM's engine core waits for its workers in a busy loop. On a small host the CPU build binds the
workers to every core but one, and the engine core's loop then takes most of that last core from
the API server and the collector: sends bunch, whole streams arrive in one read. Each round
starts the tiny model's server both ways, in turn, and sends the same Poisson level to each
(`fleetplan collect`, its own process); printed per round: P50 and P99 TTFT, P99 TPOT, the
sends that left at the same instant as the one before (the collector stalled), and the ratio
of P99 TTFT without the yield to with it.

    python benchmarks/engine_core.py [--rounds 2] [--rate 14] [--requests 400]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.inputs.tiny_model import build_tiny_llama, cpu_server_command  # noqa: E402
from fleetplan.collectors.vllm_server import free_port, managed_server  # noqa: E402
from fleetplan.core.contract import RunFile  # noqa: E402


def level(model: Path, yield_core: bool, rate: float, requests: int, folder: Path) -> dict:
    port = free_port()
    command = cpu_server_command(model, port, quick=True)
    log = folder / f"server-{port}.log"
    with managed_server(command, port, log, 600, yield_core=yield_core) as url:
        out = folder / f"run-{port}"
        collect = ["collect", "--backend", "openai", "--base-url", url, "--model", str(model)]
        shape = ["--input-len", "48", "--output-len", "64", "--gpu", "cpu"]
        load = ["--rates", f"{rate:g}", "--num-requests", str(requests), "--out", str(out)]
        subprocess.run(
            [sys.executable, "-m", "fleetplan", *collect, *shape, *load],
            capture_output=True,
            cwd=ROOT,
            check=False,
        )
    (path,) = out.glob("*.json")
    (run,) = RunFile.model_validate_json(path.read_bytes()).runs
    log_ = run.points[0].requests

    def seconds(values) -> np.ndarray:  # a failed request's time is infinite
        return np.array([np.inf if v is None else v for v in values], dtype=float)

    ttft = seconds(log_.ttft_s) * 1000
    tpot = (seconds(log_.e2el_s) - ttft / 1000) / 63 * 1000
    starts = np.sort(seconds(log_.start_s))
    return {
        "p50": float(np.percentile(ttft, 50)),
        "p99": float(np.percentile(ttft, 99)),
        "tpot99": float(np.nanpercentile(tpot, 99)),
        "bunched": int(np.sum(np.diff(starts) < 1e-4)),
        "failed": int(np.sum(~np.isfinite(ttft))),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--rate", type=float, default=14.0)
    parser.add_argument("--requests", type=int, default=400)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model = build_tiny_llama(folder / "tiny")
        print(f"{args.requests} requests at {args.rate:g} req/s, 48/64 tokens, tiny Llama, -O0")
        print(
            f"{'round':>5} {'engine core':>14} {'P50 TTFT':>9} {'P99 TTFT':>9} "
            f"{'P99 TPOT':>9} {'bunched':>8} {'failed':>7}"
        )
        ratios = []
        for n in range(args.rounds):
            figures = {}
            for yield_core in (False, True):
                f = level(model, yield_core, args.rate, args.requests, folder)
                figures[yield_core] = f
                name = "yields" if yield_core else "busy (vLLM)"
                print(
                    f"{n + 1:>5} {name:>14} {f['p50']:>7.0f}ms {f['p99']:>7.0f}ms "
                    f"{f['tpot99']:>7.1f}ms {f['bunched']:>8} {f['failed']:>7}",
                    flush=True,
                )
            ratios.append(figures[False]["p99"] / figures[True]["p99"])
            print(f"{'':>5} P99 TTFT, busy / yields: {ratios[-1]:.1f}x")
        print(f"median ratio {float(np.median(ratios)):.1f}x over {args.rounds} rounds")


if __name__ == "__main__":
    main()
