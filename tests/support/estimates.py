"""`fleetplan capacity --estimate` as the estimate tests run it: a model's config.json written
beside the test and the command's answer, as a finished process; and the queue form beside the
simulation on one server (`queue_and_simulation`)."""

from __future__ import annotations

import json
from pathlib import Path


def estimate_capacity(
    cli,
    warehouse: Path,
    tmp_path: Path,
    *,
    model: str,
    config: dict,
    gpu: str,
    count: int,
    lengths: tuple[int, int],
    targets: tuple[float, float],
    json_out: bool = True,
):
    """`fleetplan capacity --estimate` of `model` (its `config` written to tmp_path) on `count`
    x `gpu` at `lengths` (input, output tokens) and `targets` (P99 TTFT, TPOT ms)."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    args = ["capacity", "--warehouse", warehouse, "--model", model, "--model-config", path]
    args += ["--gpu", gpu, "--gpu-count", str(count), "--input-len", str(lengths[0])]
    args += ["--output-len", str(lengths[1]), "--ttft-p99", str(targets[0])]
    args += ["--tpot-p99", str(targets[1]), "--estimate"]
    return cli(*args, *(["--format", "json"] if json_out else []))


# H100-like efficiencies the queue-against-simulation tests share (fitted values' order)
EFFICIENCIES = (0.0026, 1.3, 2.06, 5.9e-5, 2.9, 0.0047)


def queue_and_simulation(architecture, width: float, gpu: str = "h100-sxm"):
    """The queue form and the simulation of one `gpu` serving `architecture` (of hidden size
    `width`) at 1,000/200 tokens, on the same cache: (queue, simulated, server, eff, traffic,
    kv tokens)."""
    from fleetplan.planner.estimate.predict import predict
    from fleetplan.planner.estimate.queueing import predict_queue
    from fleetplan.planner.estimate.serving import Efficiencies, Server, Shape, kv_cache_tokens
    from fleetplan.planner.estimate.simulate import Traffic
    from fleetplan.services.estimate import bundled_specs

    server = Server(Shape.of(architecture, width), bundled_specs()[gpu], 1)
    eff, traffic = Efficiencies(*EFFICIENCIES), Traffic(1000, 200)
    kv = kv_cache_tokens(server.shape, server.gpu, 1)
    queue = predict_queue(server, eff, traffic, gpu_count=1, kv_tokens_per_replica=kv)
    simulated = predict(server, eff, traffic, gpu_count=1, kv_tokens_per_replica=kv)
    return queue, simulated, server, eff, traffic, kv
