"""`fleetplan collect --ray` against the same probes run host by host without Ray.

A local Ray cluster (a head and one node per GPU type, each with its `fleetplan-gpu:<type>`
resource, all on this machine) and the tests' streaming server, whose set TTFT and TPOT make each
host's work the same known amount. Each round, alternating which goes first:

- baseline: `fleetplan collect --backend openai ... --gpu <type>`, once per type, one after the
  other (what a person does by logging into each host in turn); the commands' wall time;
- campaign: one `fleetplan collect --ray ADDRESS` over every type (connecting to Ray, dispatching
  the tasks, the run files coming back, the summary); the command's wall time.

Printed per round and as medians: both wall times, the ratio campaign / baseline, and the
campaign's overhead over one host's own run (campaign wall - the slowest single command). Aim:
with N types the campaign takes about 1/N of the baseline plus a few seconds of Ray overhead.

    python benchmarks/campaign.py [--rounds 3] [--types 2] [--requests 40]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fleetplan.collectors.vllm_server import free_port  # noqa: E402

GPU_TYPES = ["rtx-4090", "h100-pcie", "l40s", "a100-80gb"]


def fleetplan(*args: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "fleetplan", "collect", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"fleetplan collect {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return wall


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--types", type=int, default=2, choices=range(1, len(GPU_TYPES) + 1))
    parser.add_argument("--requests", type=int, default=40)
    return parser.parse_args()


def _stream_server(port: int) -> subprocess.Popen:
    """The tests' streaming server: TTFT 20 ms, TPOT 5 ms."""
    return subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "inputs" / "stream_server.py"),
            "--port",
            str(port),
            "--ttft-ms",
            "20",
            "--tpot-ms",
            "5",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _cluster(types: list[str]):
    """A head and one node per GPU type, each with its `fleetplan-gpu:<type>` resource."""
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    for gpu in types:
        cluster.add_node(num_cpus=1, resources={f"fleetplan-gpu:{gpu}": 1})
    cluster.wait_for_nodes()
    return cluster


def _probe(port: int, requests: int) -> list[str]:
    return [
        "--backend",
        "openai",
        "--base-url",
        f"http://127.0.0.1:{port}",
        "--model",
        "stream-test",
        "--input-len",
        "64",
        "--output-len",
        "32",
        "--rates",
        "4,8,inf",
        "--num-requests",
        str(requests),
        "--warmup",
        "1",
    ]


def _round(
    round_: int, probe: list[str], *, types: list[str], address: str, out: Path
) -> tuple[float, float, float]:
    """(host by host, campaign, the slowest single host) wall times; who goes first alternates."""

    def serial() -> tuple[float, float]:
        walls = [fleetplan(*probe, "--gpu", g, "--out", str(out / g)) for g in types]
        return sum(walls), max(walls)

    def campaign() -> float:
        return fleetplan(*probe, "--ray", address, "--out", str(out / "ray"))

    if round_ % 2 == 0:
        (base, slowest), ray_wall = serial(), campaign()
    else:
        ray_wall = campaign()
        base, slowest = serial()
    return base, ray_wall, slowest


def main() -> None:
    args = _arguments()
    types = GPU_TYPES[: args.types]
    port = free_port()
    server = _stream_server(port)
    cluster = _cluster(types)
    probe = _probe(port, args.requests)
    print(
        f"{len(types)} GPU type(s) ({', '.join(types)}), {args.requests} requests per level at "
        "4, 8 req/s and all at once, 64/32 tokens, TTFT 20 ms, TPOT 5 ms"
    )
    print(f"{'round':>5} {'host by host':>13} {'campaign':>9} {'ratio':>6} {'overhead':>9}")
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for round_ in range(args.rounds):
                out = Path(tmp) / str(round_)
                base, ray_wall, slowest = _round(
                    round_, probe, types=types, address=cluster.address, out=out
                )
                rows.append((base, ray_wall, slowest))
                print(
                    f"{round_ + 1:>5} {base:>12.2f}s {ray_wall:>8.2f}s {ray_wall / base:>6.2f} "
                    f"{ray_wall - slowest:>8.2f}s"
                )
    finally:
        cluster.shutdown()
        server.terminate()
        server.wait()
    base = statistics.median(r[0] for r in rows)
    ray_wall = statistics.median(r[1] for r in rows)
    overhead = statistics.median(r[1] - r[2] for r in rows)
    print(
        f"median: host by host {base:.2f} s, campaign {ray_wall:.2f} s, ratio "
        f"{ray_wall / base:.2f} (ideal {1 / len(types):.2f}), Ray overhead {overhead:.2f} s"
    )


if __name__ == "__main__":
    main()
