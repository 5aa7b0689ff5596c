"""`fleetplan capacity --estimate` as the estimate tests run it: a model's config.json written
beside the test and the command's answer, as a finished process."""

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
