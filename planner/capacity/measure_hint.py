"""What to run where nothing was measured for a class's traffic: the exact `fleetplan collect`
command (the managed vLLM backend, a capacity search at the class's targets) that would measure
each offered GPU with the class's token shape. `fleetplan plan` and the Plan page show these
among the plan's notes."""

from __future__ import annotations

import shlex

import pandas as pd

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.rules import points_for_class, points_for_model
from fleetplan.planner.scenario.scenario import Scenario, TrafficClass


def collect_command(
    model: str, gpu_model: str, gpu_count: int, traffic: TrafficClass, *, out: str = "runs/"
) -> str:
    """The command that searches the capacity of `model` on `gpu_count` x `gpu_model` at the
    class's targets and token shape, and loads the run into the warehouse (`--ingest`)."""
    words = [
        "fleetplan collect --backend vllm",
        f"--model {shlex.quote(model)}",
        f"--gpu {gpu_model} --gpu-count {gpu_count} --tensor-parallel-size {gpu_count}",
        f"--input-len {traffic.input_len} --output-len {traffic.output_len}",
        "--find-capacity",
    ]
    if traffic.ttft_p99_ms is not None:
        words.append(f"--ttft-p99 {traffic.ttft_p99_ms:g}")
    if traffic.tpot_p99_ms is not None:
        words.append(f"--tpot-p99 {traffic.tpot_p99_ms:g}")
    words += [f"--out {shlex.quote(out)}", "--ingest"]
    return " ".join(words)


def measured_counts(points: pd.DataFrame, gpu_model: str) -> list[int]:
    """GPUs per server the model was measured with on this GPU (any traffic), else one."""
    counts = points.loc[points["gpu_model"] == gpu_model, "gpu_count"] if not points.empty else []
    return sorted({int(n) for n in counts}) or [1]


def measure_notes(points: pd.DataFrame, scenario: Scenario) -> list[str]:
    """For each class none of whose traffic was measured: the commands that would measure it on
    each offered GPU, in a note."""
    notes = []
    by_model: dict[str, pd.DataFrame | None] = {}  # each model's points, chosen once
    measured: dict[tuple, bool | None] = {}  # whether a traffic was measured (None: unclear)
    for traffic in scenario.classes:
        named = scenario.model_of(traffic)  # the class's own model, else the scenario's
        if named not in by_model:
            try:
                by_model[named] = points_for_model(points, named)
            except InputError:  # several models match the name (the plan says so)
                by_model[named] = None
        model_points = by_model[named]
        if model_points is None:
            continue
        asked = (named, *traffic.traffic_asked)
        if asked not in measured:  # classes asking for one traffic share the answer
            try:
                measured[asked] = not points_for_class(model_points, traffic).empty
            except InputError:
                measured[asked] = None  # several kinds of traffic measured (the plan says so)
        if measured[asked] is not False:
            continue
        model = str(model_points["model"].iloc[0]) if not model_points.empty else named
        if traffic.input_len is None or traffic.output_len is None:
            notes.append(
                f"class {traffic.name!r}: nothing was measured with its traffic; `fleetplan "
                "collect --find-capacity` measures fixed token shapes: give the class input_len "
                "and output_len and the plan prints the command"
            )
            continue
        commands = [
            collect_command(model, offer.gpu_model, count, traffic)
            for offer in scenario.gpus
            for count in measured_counts(model_points, offer.gpu_model)
        ]
        notes.append(
            f"class {traffic.name!r}: nothing was measured with its traffic "
            f"({traffic.input_len}/{traffic.output_len} tokens); to measure it, run on a host "
            "with the GPUs: " + " ; ".join(commands)
        )
    return notes
