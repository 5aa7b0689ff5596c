"""A scenario's `"estimates": "fill"`: every offered GPU the model was not measured on gets
levels of its own before planning, so the planner compares it with the measured ones, and each
pool resting on them says so (`PoolPlan.basis`, `estimate_error`).

For each model of the scenario, each offered GPU and each GPU count (those measured on that GPU
for any model, else 1, and where the weights do not fit one GPU the fewest of 2, 4 and 8 that
hold them), a configuration with no run of the model:

- a measured model of identical architecture on the same GPUs lends its levels, relabelled to
  the model (basis "identical architecture", the lender named);
- else the serving model (`fleetplan.services.estimate`) simulates the class's traffic from near 0
  to saturation and each curve point becomes a level: the rate offered, the throughput and
  P99s simulated, kept up below saturation, its saturation as the level that fell behind
  (basis "estimated", with the validation's error band and the GPU it borrows from).

Estimated levels carry their provenance in `source_file` ("fleetplan estimate: ...") and the
JSON of their basis in the `estimate` column; measured levels are untouched, and a scenario
with "estimates": "off" plans exactly what it planned before.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import pandas as pd

from fleetplan.core.errors import InputError
from fleetplan.core.gpus import canonical_gpu
from fleetplan.planner.capacity.architecture import Architecture, architecture_from_config
from fleetplan.planner.capacity.measure_hint import measured_counts
from fleetplan.planner.capacity.rules import near_length, points_for_model
from fleetplan.planner.estimate.serving import Shape, kv_cache_tokens
from fleetplan.planner.estimate.shape import identical_architectures
from fleetplan.planner.estimate.specs import GpuSpec
from fleetplan.planner.scenario.scenario import Scenario, TrafficClass
from fleetplan.services.envelope import architecture_named, bundled_architectures
from fleetplan.services.estimate import (
    ENGINE,
    band_for,
    bundled_specs,
    calibrations,
    fit_for,
    prediction_for,
    traffic_of,
)

SOURCE = "fleetplan estimate"
# A plan estimates many configurations at once: by the queueing approximation of the
# simulation (`planner.estimate.queueing`), validated on its own (its band is its own).
METHOD = "queue"
METHOD_WORDS = "queueing approximation of the serving model's simulation"
MOE_WORDS = " (a mixture of experts: its routed experts read in part)"
HYBRID_WORDS = " (a hybrid: each sequence's recurrent state held and read beside its KV)"
FIT_COUNTS = (2, 4, 8)


def _counts(points: pd.DataFrame, gpu: str, shape: Shape, spec: GpuSpec) -> list[int]:
    counts = measured_counts(points, gpu)
    if kv_cache_tokens(shape, spec, 1) < 1:
        fits = [n for n in FIT_COUNTS if kv_cache_tokens(shape, spec, n) >= 1]
        if fits and fits[0] not in counts:
            counts.append(fits[0])
    return sorted(counts)


def _model_id(points: pd.DataFrame, model: str, arch: Architecture) -> str:
    try:
        mine = points_for_model(points, model)
    except InputError:  # ambiguous: planning says so
        return model
    return str(mine["model"].iloc[0]) if not mine.empty else arch.model


def _shapes(traffic: list[TrafficClass]) -> list[tuple[str | None, int | None, int | None]]:
    return sorted(
        {(t.dataset, t.input_len, t.output_len) for t in traffic},
        key=lambda s: tuple("" if v is None else str(v) for v in s),
    )


def with_estimates(points: pd.DataFrame, scenario: Scenario) -> pd.DataFrame:
    """`points` with estimated levels for the scenario's unmeasured offers (module
    docstring); `points` itself where the scenario asks for none."""
    if scenario.estimates != "fill" or points.empty:
        return points
    architectures = dict(bundled_architectures()) | scenario_architectures(scenario)
    specs = bundled_specs()
    fits: dict | None = None
    added: list[pd.DataFrame] = []
    for model in scenario.models():
        arch = architecture_named(architectures, model)
        if arch is None:
            continue  # no shape to estimate with: the plan's notes say the offer is unmeasured
        model_id = _model_id(points, model, arch)
        shape = Shape.of(arch)
        mine = points[points["model"].astype(str).str.lower() == model_id.lower()]
        classes = [t for t in scenario.classes if scenario.model_of(t) == model]
        for gpu in sorted({canonical_gpu(g.gpu_model).gpu_id for g in scenario.gpus}):
            spec = specs.get(gpu)
            if spec is None:
                continue
            for count in _counts(points, gpu, shape, spec):
                if ((mine["gpu_model"] == gpu) & (mine["gpu_count"] == count)).any():
                    continue  # measured: measured data always wins
                lent = _identical(points, architectures, arch, gpu, count, model_id)
                if lent is not None:
                    added.append(lent)
                    continue
                if fits is None:
                    fits = calibrations(points, architectures)
                for shape_key in _shapes(classes):
                    rows = _estimated(points, fits, shape, spec, count, model_id, shape_key)
                    if rows is not None:
                        label = _dataset_label(mine, shape_key)
                        if label is not None:
                            rows["dataset"] = label
                        added.append(rows)
    if not added:
        return points
    return pd.concat([points, *added], ignore_index=True)


def scenario_architectures(scenario: Scenario) -> dict[str, Architecture]:
    """The architectures of the scenario's `model_configs` (config.json objects), by lower-case
    model id; an InputError names the model and the key it cannot read."""
    found = {}
    for model, config in (scenario.model_configs or {}).items():
        try:
            arch = architecture_from_config(
                model, config, source=f"the scenario's model_configs[{model!r}]"
            )
        except InputError as error:
            raise InputError(
                f"model_configs[{model!r}]: {error.reason}",
                field=f"model_configs.{model}.{error.field or ''}".rstrip("."),
            ) from None
        found[model.lower()] = arch
    return found


def _dataset_label(mine: pd.DataFrame, shape_key: tuple) -> str | None:
    """The dataset an estimate for a class of these lengths is labelled with: the class's own;
    for a class naming lengths but no dataset, the one dataset its measured levels of those
    lengths carry (the measured and the estimated levels then stay one kind of traffic, as the
    class asked: its lengths), else none."""
    dataset, input_len, output_len = shape_key
    if dataset is not None or input_len is None or output_len is None or mine.empty:
        return dataset
    near = mine[
        mine["input_len"].map(lambda v: near_length(v, input_len))
        & mine["output_len"].map(lambda v: near_length(v, output_len))
    ]
    named = {str(d) for d in near["dataset"] if pd.notna(d)}
    return named.pop() if len(named) == 1 and near["dataset"].notna().all() else None


def _identical(points, architectures, arch, gpu, count, model_id) -> pd.DataFrame | None:
    here = points[(points["gpu_model"] == gpu) & (points["gpu_count"] == count)]
    measured = [
        (m, architectures[m.lower()])
        for m in sorted({str(x) for x in here["model"]})
        if m.lower() in architectures
    ]
    same = identical_architectures(arch, measured)
    if not same:
        return None
    lender = same[0]
    rows = here[here["model"] == lender].copy()
    rows["model"] = model_id
    rows["run_id"] = "identical:" + rows["run_id"].astype(str) + f":{model_id}"
    rows["estimate"] = json.dumps(
        {"basis": "identical architecture", "error": {"lender": lender}}, sort_keys=True
    )
    rows["source_file"] = f"identical architecture ({lender}): " + rows["source_file"].astype(str)
    return rows


def _estimated(points, fits, shape, spec, count, model_id, shape_key) -> pd.DataFrame | None:
    dataset, input_len, output_len = shape_key
    if dataset is None and (input_len is None or output_len is None):
        # a class that names no traffic plans on what was measured: the one dataset held
        known = sorted({str(d) for d in points["dataset"].dropna()})
        dataset = known[0] if len(known) == 1 else None
        shape_key = (dataset, input_len, output_len)
    query = SimpleNamespace(dataset=dataset, input_len=input_len, output_len=output_len)
    try:
        traffic, _, words = traffic_of(points, query)
        fit, borrowed = fit_for(fits, spec, points)
    except InputError:  # no traffic or nothing to calibrate on: the offer stays unmeasured
        return None
    prediction = prediction_for(shape, spec, count, fit, traffic, method=METHOD)
    if prediction is None:
        return None
    moe, hybrid = shape.architecture.routed, shape.architecture.recurrent is not None
    band = band_for(borrowed, spec.gpu_id, method=METHOD, moe=moe, hybrid=hybrid)
    method_words = METHOD_WORDS + (MOE_WORDS if moe else "") + (HYBRID_WORDS if hybrid else "")
    error = {"borrowed": borrowed.words, "traffic": words, "method": method_words}
    if band is not None:
        error |= {
            "kind": band.kind,
            "saturation": list(band.saturation) if band.saturation else None,
            "ttft_p99": list(band.ttft_p99) if band.ttft_p99 else None,
            "tpot_p99": list(band.tpot_p99) if band.tpot_p99 else None,
        }
    told = json.dumps({"basis": "estimated", "error": error}, sort_keys=True)
    run_id = f"estimate:{model_id}:{count}x{spec.gpu_id}:{dataset}:{input_len}:{output_len}"
    source = (
        f"{SOURCE}: serving model ({method_words}), {borrowed.words}; calibrated on "
        f"{len(fit.configurations)} configurations"
    )
    rows = [
        _level(run_id, index, point, prediction, model_id, spec, count, shape_key)
        | {
            "estimate": told,
            "source_file": source,
            "input_tokens_mean": traffic.input_tokens,
            "output_tokens_mean": traffic.output_tokens,
            "output_throughput_tps": point.throughput_rps * traffic.output_tokens,
        }
        for index, point in enumerate(prediction.curve)
    ]
    return pd.DataFrame(rows)


def _level(run_id, index, point, prediction, model_id, spec, count, shape_key) -> dict:
    dataset, input_len, output_len = shape_key
    saturated = index == len(prediction.curve) - 1
    return {
        "run_id": run_id,
        "level_index": index,
        "model": model_id,
        "gpu_model": spec.gpu_id,
        "gpu_count": count,
        "tensor_parallel_size": count,
        "gpu_known": True,
        "gpu_label": spec.gpu_id,
        "dtype": None,
        "engine": ENGINE,
        "engine_version": None,
        "variant": "estimated",
        "dataset": dataset,
        "input_len": input_len,
        "output_len": output_len,
        "offered_rate_rps": point.rate_rps,
        "configured_rate_rps": point.rate_rps,
        "requests_sent": None,
        "completed": None,
        "failed": 0,
        "complete": True,
        "request_throughput_rps": point.throughput_rps,
        "sustained_rps": prediction.saturation_rps if saturated else point.rate_rps,
        "stable": not saturated,
        "load_basis": "send times",
        "load_reason": (
            "estimated: the simulated server saturates here"
            if saturated
            else "estimated: the simulated server kept up"
        ),
        "ttft_p50_ms": point.ttft_p50_ms,
        "ttft_p99_ms": point.ttft_p99_ms,
        "tpot_p50_ms": point.tpot_p50_ms,
        "tpot_p99_ms": point.tpot_p99_ms,
        "stats_source": "estimated",
        "energy_method": "none",
        "source_tool": SOURCE,
    }
