"""`fleetplan simulate --trace`: a plan's fleet replayed against a request trace, each server
simulated by the serving model calibrated on the warehouse (`planner.replay`).

A pool's server model: the model's shape (the bundled architecture table), its GPU's figures
(`sample_data/gpu_specs.toml`), the KV cache vLLM allocates, and the step model's coefficients
fitted on the configuration's own measured levels where it has at least three (the closest
calibration: its engine, model and GPUs), else on its GPU's levels of every model of known shape,
else borrowed from the nearest measured GPU (`services.estimate.fit_for`, said so).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.rules import points_for_model
from fleetplan.planner.estimate.calibrate import fit_gpu
from fleetplan.planner.estimate.serving import Server, Shape, kv_cache_tokens
from fleetplan.planner.replay.fleet import Fleet, PoolKey
from fleetplan.planner.replay.results import ClassReplay, summarise
from fleetplan.planner.replay.run import DEFAULT_REPAIR_HOURS, ServerModel, replay
from fleetplan.planner.replay.trace import (
    MAX_REPLAY_REQUESTS,
    Requests,
    match_classes,
    requests_of,
)
from fleetplan.planner.scenario.workload import classes_of
from fleetplan.services.envelope import architecture_named, bundled_architectures
from fleetplan.services.estimate import (
    ENGINE,
    bundled_specs,
    calibrations,
    fit_for,
    trusted,
)

METHOD = (
    "trace replay: each request routed as the exported router would (a pool by its planned "
    "share, a server of it at random), each server one engine replica simulated step by step "
    "by the serving model (continuous batching, chunked prefill, KV cache bounded, preemption "
    "by recompute) calibrated on the warehouse"
)
LENGTH_RATIO = 1.5  # a trace's mean lengths this far from the measured ones get a note


def server_models(points: pd.DataFrame, fleet: Fleet) -> dict[PoolKey, ServerModel]:
    """Every pool's server model (module docstring); InputError names what is missing."""
    architectures = dict(bundled_architectures())
    specs = bundled_specs()
    good = trusted(points)
    models: dict[PoolKey, ServerModel] = {}
    for pool in fleet.pools():
        llm = fleet.models.get(pool.traffic_class) or ""
        arch = architecture_named(architectures, llm)
        if arch is None:
            raise InputError(
                f"no architecture for {llm!r} (class {pool.traffic_class}) in the bundled table: "
                "the replay simulates servers from the model's shape",
                field="model",
            )
        spec = specs.get(pool.gpu_model)
        if spec is None:
            raise InputError(
                f"no spec figures for {pool.gpu_model} in sample_data/gpu_specs.toml",
                field="gpu",
            )
        shape = Shape.of(arch)
        kv = kv_cache_tokens(shape, spec, pool.gpus_per_server)
        if kv < 1:
            raise InputError(
                f"{llm} does not fit on {pool.gpus_per_server}x {pool.gpu_model}", field="gpu"
            )
        fit, basis = _calibration(good, architectures, specs, llm, pool)
        server = Server(shape, spec, pool.gpus_per_server)
        models[pool] = ServerModel(server, fit.efficiencies, kv, basis)
    return models


def _calibration(good, architectures, specs, llm: str, pool: PoolKey):
    try:
        mine = points_for_model(good, llm)
    except InputError:
        mine = good.iloc[:0]
    mine = mine[(mine["gpu_model"] == pool.gpu_model) & (mine["gpu_count"] == pool.gpus_per_server)]
    own = fit_gpu(mine, architectures, specs, pool.gpu_model, ENGINE) if len(mine) else None
    if own is not None:
        return own, f"calibrated on its own {own.equations} equations ({own.configurations[0]})"
    fit, borrowed = fit_for(calibrations(good, architectures), specs[pool.gpu_model], good)
    if borrowed.gpu_id == pool.gpu_model:
        return (
            fit,
            f"calibrated on {pool.gpu_model}'s levels of {len(fit.configurations)} configurations",
        )
    return fit, f"estimated: {borrowed.words}"


def _length_notes(points: pd.DataFrame, fleet: Fleet, requests: Requests) -> list[str]:
    notes = []
    for k, name in enumerate(requests.names):
        llm = fleet.models.get(name) or ""
        try:
            mine = points_for_model(points, llm)
        except InputError:
            continue
        measured_in = pd.to_numeric(mine["input_tokens_mean"], errors="coerce").mean()
        measured_out = pd.to_numeric(mine["output_tokens_mean"], errors="coerce").mean()
        of = requests.traffic_class == k
        if not of.any() or not (np.isfinite(measured_in) and np.isfinite(measured_out)):
            continue
        trace_in, trace_out = float(requests.prompt[of].mean()), float(requests.output[of].mean())
        far = [
            a / b if a >= b else b / a
            for a, b in ((trace_in, measured_in), (trace_out, measured_out))
            if b > 0 and a > 0
        ]
        if any(r > LENGTH_RATIO for r in far):
            notes.append(
                f"{name}: the trace's requests average {trace_in:.0f}/{trace_out:.0f} tokens, the "
                f"levels the plan's capacities rest on {measured_in:.0f}/{measured_out:.0f}: the "
                "plan sized for other lengths than these (the replay serves the trace's own)"
            )
    return notes


def replay_trace(
    points: pd.DataFrame,
    fleet: Fleet,
    trace: pd.DataFrame,
    *,
    class_by: str = "all",
    only: str | None = None,
    start_hour: int | None = None,
    scale: float = 1.0,
    seed: int = 0,
    repair_hours: float = DEFAULT_REPAIR_HOURS,
    progress: Callable[[int, int], None] | None = None,
    max_requests: int = MAX_REPLAY_REQUESTS,
) -> dict:
    """The replay's answer as the JSON contract (`fleetplan simulate --trace --format json`)."""
    parts = match_classes(classes_of(trace, class_by), fleet.classes(), only)
    requests = requests_of(
        parts,
        list(parts),
        start_hour=start_hour,
        scale=scale,
        seed=seed,
        max_requests=max_requests,
    )
    models = server_models(points, fleet)
    served = replay(
        fleet, models, requests, seed=seed, repair_hours=repair_hours, progress=progress
    )
    classes = summarise(fleet, models, requests, served, seed=seed, repair_hours=repair_hours)
    return {
        "classes": [_class_json(c) for c in classes],
        "seed": seed,
        "method": METHOD,
        "plan": fleet.kind,
        "requests": len(requests),
        "placed": requests.placed,
        "availability": bool(fleet.availability),
        "servers": {
            pool.label(): {
                "server": fleet.servers.get(pool, ""),
                "basis": m.basis,
                "kv_tokens": round(m.kv_tokens),
            }
            for pool, m in models.items()
        },
        "notes": _length_notes(points, fleet, requests),
    }


def _class_json(c: ClassReplay) -> Mapping:
    return {
        "name": c.name,
        **c.total.as_json(),
        "targets": {"ttft_p99_ms": c.targets.ttft_p99_ms, "tpot_p99_ms": c.targets.tpot_p99_ms},
        "hours": [h.as_json() for h in c.hours],
    }


MAX_PAGE_TRACE_BYTES = 200 << 20  # a log the page replays: about two million requests
MAX_PAGE_REQUESTS = 2_000_000  # the log's requests times its scale, on the page


def replay_for_page(
    plan,
    scenario,
    points: pd.DataFrame,
    trace_bytes: bytes,
    *,
    name: str,
    class_by: str = "all",
    only: str | None = None,
    start_hour: int | None = None,
    scale: float = 1.0,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """The Plan page's replay of an uploaded log through the plan on screen (the same answer as
    `fleetplan simulate --plan --trace` on the plan's JSON)."""
    from fleetplan.planner.replay.fleet import PlanShapeError, fleet_of
    from fleetplan.planner.scenario.workload import read_trace

    if len(trace_bytes) > MAX_PAGE_TRACE_BYTES:
        raise InputError(
            f"the log is {len(trace_bytes) / 2**20:.0f} MiB; the page replays up to "
            f"{MAX_PAGE_TRACE_BYTES >> 20} MiB (`fleetplan simulate --trace` has no such limit)",
            field="trace",
        )
    raw = {**plan.model_dump(mode="json"), "inputs": {"scenario": scenario.model_dump(mode="json")}}
    try:
        fleet = fleet_of(raw)
    except PlanShapeError as error:
        raise InputError(str(error), field="plan") from None
    trace = read_trace(trace_bytes.decode("utf-8", errors="replace"), name=name)
    return replay_trace(
        points,
        fleet,
        trace,
        class_by=class_by,
        only=only,
        start_hour=start_hour,
        scale=scale,
        seed=seed,
        progress=progress,
        max_requests=MAX_PAGE_REQUESTS,
    )


def hours_table(result: Mapping) -> pd.DataFrame:
    """One row per class and hour of a replay: its requests, P99s, goodput, verdict and the
    class's targets (the page's table and chart)."""
    rows = []
    for c in result["classes"]:
        targets = c["targets"]
        for h in c["hours"]:
            rows.append(
                {
                    "class": c["name"],
                    "hour": h["hour"],
                    "requests": h["requests"],
                    "ttft_p99_ms": h["ttft_p99_ms"],
                    "tpot_p99_ms": h["tpot_p99_ms"],
                    "goodput": h["goodput"],
                    "meets": h["meets"],
                    "ttft_target_ms": targets["ttft_p99_ms"],
                    "tpot_target_ms": targets["tpot_p99_ms"],
                    "busiest_minute": (h.get("busiest_minute") or {}).get("start"),
                    "headroom": _headroom_words(h.get("headroom")),
                }
            )
    return pd.DataFrame(rows)


def _headroom_words(room: Mapping | None) -> str | None:
    if not room:
        return None
    if room.get("factor") is None:
        return "not held even at 4x the servers"
    return f"servers x {room['factor']:g}"
