"""`fleetplan capacity --estimate`: a configuration nobody measured, estimated from what the
warehouse measured, labelled so and with the error band the validation measured.

In order (`estimate_report`):
1. A model of identical architecture measured on the same GPUs (`planner.estimate.shape`): its
   measured curve answers, with basis "identical architecture" and the model named.
2. Otherwise the serving model (`planner.estimate`): the step model's coefficients fitted per
   (GPU, engine) on every measured level of a model of known shape; a GPU with no run borrows
   the nearest measured GPU's (of its architecture where there is one) and says which. The
   curve is simulated (seeded) from near 0 to saturation; the capacity is the highest rate
   whose simulated P99s meet the targets, and its interval is the validation's band around it
   (`sample_data/models/estimate_errors.json`, written by `benchmarks/estimate.py`).

The GPU figures come from `sample_data/gpu_specs.toml`, the model's shape from the bundled
architecture table or the config.json given; the traffic from the query's lengths, or the
dataset's mean lengths in the warehouse with a chat dataset's spread (an assumption, said so).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ConfigDict

from fleetplan.core.errors import InputError
from fleetplan.core.gpus import canonical_gpu
from fleetplan.core.paths import sample_data_dir
from fleetplan.planner.capacity.architecture import (
    Architecture,
    config_width,
    tensor_parallel_problem,
)
from fleetplan.planner.capacity.rules import points_for_model
from fleetplan.planner.estimate.calibrate import Fit, calibration_gaps, fit_all
from fleetplan.planner.estimate.predict import Prediction, predict
from fleetplan.planner.estimate.queueing import predict_queue
from fleetplan.planner.estimate.serving import (
    Server,
    Shape,
    engine_units,
    kv_cache_tokens,
    transfer_words,
)
from fleetplan.planner.estimate.simulate import SimulationTooLong, Traffic, step_budget
from fleetplan.planner.estimate.specs import Borrowed, GpuSpec, nearest_measured, specs_from_table
from fleetplan.services.envelope import (
    architecture_from_file,
    architecture_named,
    bundled_architectures,
    config_from_file,
)
from fleetplan.services.outliers import outlier_reasons

SPECS = Path("gpu_specs.toml")
BANDS = Path("models") / "estimate_errors.json"
ENGINE = "vllm"
METHOD = (
    "serving model: continuous batching simulated step by step (seeded, Poisson arrivals); "
    "a step is max(overhead, weights and KV bytes over bandwidth x efficiency + 2 x parameters "
    "x tokens over dense BF16 FLOPs x efficiency + tensor-parallel all-reduces); coefficients "
    "fitted per (GPU, engine) on the warehouse's measured levels"
)


class _Schema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EstimatePoint(_Schema):
    rate_rps: float
    ttft_p99_ms: float
    tpot_p99_ms: float


class EstimateError(_Schema):
    """Relative errors (predicted / measured - 1), 10th to 90th percentile, of the validation
    for estimates of this kind, and where the figures come from."""

    saturation: tuple[float, float] | None
    ttft_p99: tuple[float, float] | None
    tpot_p99: tuple[float, float] | None
    kind: str  # "own GPU", "same architecture", "other architecture"; + MOE where its own
    source: str


class EstimateBlock(_Schema):
    curve: list[EstimatePoint]
    calibrated_on: list[str]
    error: EstimateError | None
    method: str
    gpu_basis: str  # which GPU's efficiencies, in words
    traffic: str  # the lengths simulated, in words
    efficiencies: dict[str, float]


@cache
def bundled_specs() -> dict[str, GpuSpec]:
    path = sample_data_dir() / SPECS
    return specs_from_table(tomllib.loads(path.read_text(encoding="utf-8")))


@cache
def bundled_bands() -> dict:
    path = sample_data_dir() / BANDS
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


MOE = " (mixture of experts)"
MOE_METHOD = (
    "; a mixture of experts: a step reads the shared weights and the experts its tokens are "
    "routed to (even, independent routing: E x (1 - (1 - k / E)^tokens) of E experts a layer) and "
    "computes with a token's k experts; its efficiencies were fitted on dense models"
)


HYBRID = " (hybrid: band borrowed)"
HYBRID_METHOD = (
    "; a hybrid (layers keeping a recurrent state): a sequence holds its state beside its "
    "attention layers' KV (vLLM's shared pages: each state a page, the attention blocks as "
    "large) and each decode step reads and writes the batch's states; its efficiencies were "
    "fitted on attention models"
)


def method_words(shape: Shape) -> str:
    """What an estimate of `shape` rests on, in words (`METHOD`, the experts' rule and a
    hybrid's states)."""
    arch = shape.architecture
    return (
        METHOD
        + (MOE_METHOD if arch.routed else "")
        + (HYBRID_METHOD if arch.recurrent is not None else "")
    )


def band_for(
    borrowed: Borrowed,
    gpu_id: str,
    method: str = "simulation",
    *,
    moe: bool = False,
    hybrid: bool = False,
) -> EstimateError | None:
    """`_band_for`'s band; of a hybrid (`hybrid`: recurrent layers beside or instead of
    attention), no hybrid model was measured: the band is borrowed from attention models',
    and says so (its kind ends with `HYBRID`)."""
    band = _band_for(borrowed, gpu_id, method, moe=moe)
    if band is None or not hybrid:
        return band
    words = (
        "; a hybrid (recurrent layers keeping a state): no hybrid model was measured or "
        "validated, the band is borrowed from attention models'"
    )
    return band.model_copy(update={"source": band.source + words, "kind": band.kind + HYBRID})


def _band_for(
    borrowed: Borrowed, gpu_id: str, method: str = "simulation", *, moe: bool = False
) -> EstimateError | None:
    """The validation's band for an estimate of this kind and method ("simulation", or
    "queue" for the approximation plans use); a kind the validation could not measure takes
    the next wider one, and says so. A mixture of experts (`moe`) takes the figures its own
    validation measured (kind + `MOE`: the Mixtral sweep's P99 TTFT, MiniMax-M2.5's TPOT for
    the same architecture) and the dense ones for the rest, and says which."""
    band = _dense_band(borrowed, gpu_id, method)
    if band is None or not moe:
        return band
    kinds = bundled_bands().get("bands" if method == "simulation" else method, {})
    own = kinds.get(band.kind + MOE) or {}
    taken = [m for m in ("saturation", "ttft_p99", "tpot_p99") if own.get(m)]
    figures = {m: _pair(own[m]) for m in taken}
    where = f" on {own['validated_on']}" if own.get("validated_on") else ""
    if own.get("tpot_source"):
        where += f" (TPOT on {own['tpot_source']})"
    words = (
        f"; a mixture of experts: {', '.join(taken)} from the validation of mixtures of "
        f"experts{where}, the rest measured on dense models"
        if taken
        else "; a mixture of experts: no mixture of experts was validated, the band was "
        "measured on dense models"
    )
    kind = band.kind + MOE if taken else band.kind
    return band.model_copy(update=figures | {"source": band.source + words, "kind": kind})


def _dense_band(borrowed: Borrowed, gpu_id: str, method: str) -> EstimateError | None:
    bands = bundled_bands()
    kinds = bands.get("bands" if method == "simulation" else method, {})
    if borrowed.gpu_id == gpu_id:
        order = ["own GPU", "same architecture", "other architecture"]
    elif borrowed.same_architecture:
        order = ["same architecture", "other architecture"]
    else:
        order = ["other architecture"]
    for position, kind in enumerate(order):
        figures = kinds.get(kind)
        if not figures:
            continue
        source = bands.get("source", str(BANDS))
        if figures.get("validated_on"):
            source = f"{source}; this kind validated on {figures['validated_on']}"
        if position:
            source += f" (no validation of '{order[0]}' estimates: the band of '{kind}' ones)"
        return EstimateError(
            saturation=_pair(figures.get("saturation")),
            ttft_p99=_pair(figures.get("ttft_p99")),
            tpot_p99=_pair(figures.get("tpot_p99")),
            kind=kind,
            source=source,
        )
    return None


def _pair(value) -> tuple[float, float] | None:
    return (float(value[0]), float(value[1])) if value else None


def model_shape(query, architectures: dict[str, Architecture]) -> Shape:
    """The query's model's shape: from its config.json where given, else the bundled table. An
    InputError where the server cannot serve it: its GPU count is no tensor parallel size the
    model splits into (`tensor_parallel_problem`), or the query's lengths are longer than the
    model's context."""
    if query.model_config_path is not None:
        config = config_from_file(query.model_config_path)
        # Served as vLLM's dtype "auto" does where the config names none: 16-bit.
        arch = architecture_from_file(
            query.model_config_path, query.model, dtype="auto", config=config
        )
        shape = Shape.of(arch, config_width(config))
    else:
        arch = architecture_named(architectures, query.model)
        if arch is None:
            raise InputError(
                f"no runs and no architecture for {query.model}: give its config.json "
                "(--model-config) to estimate it",
                field="model_config",
            )
        shape = Shape.of(arch)
    problem = tensor_parallel_problem(arch, query.gpu_count)
    if problem is not None:
        raise InputError(
            f"--gpu-count {query.gpu_count:,}: an estimate serves the model with tensor "
            f"parallelism over all of the server's GPUs, and {problem}",
            field="gpu_count",
        )
    lengths = (query.input_len or 0) + (query.output_len or 0)
    if arch.max_context is not None and lengths > arch.max_context:
        raise InputError(
            f"--input-len {query.input_len or 0:,} and --output-len {query.output_len or 0:,} "
            f"make {lengths:,} tokens, more than the model's context of {arch.max_context:,} "
            "(max_position_embeddings in its config.json)",
            field="input_len",
        )
    return shape


def traffic_of(points: pd.DataFrame, query) -> tuple[Traffic, str, str]:
    """The lengths to simulate, their short label ("sharegpt", "512/128 tokens") and the
    words for them."""
    if query.input_len is not None and query.output_len is not None:
        label = f"{query.input_len}/{query.output_len} tokens"
        return (
            Traffic.of_level(query.input_len, query.output_len, fixed=True),
            label,
            f"{label}, every request alike",
        )
    datasets = sorted({str(d) for d in points["dataset"].dropna().unique()})
    dataset = query.dataset or (datasets[0] if len(datasets) == 1 else None)
    if dataset is None:
        raise InputError(
            "say the traffic to estimate: --input-len and --output-len, or --dataset (the "
            f"warehouse has {', '.join(datasets) or 'none'})",
            field="dataset",
        )
    rows = points[points["dataset"].astype(str).str.lower() == dataset.lower()]
    prompt = pd.to_numeric(rows["input_tokens_mean"], errors="coerce").dropna()
    output = pd.to_numeric(rows["output_tokens_mean"], errors="coerce").dropna()
    if prompt.empty or output.empty:
        raise InputError(
            f"no measured level of dataset {dataset!r} with mean token counts: give --input-len "
            "and --output-len",
            field="dataset",
        )
    i, o = float(prompt.mean()), float(output.mean())
    traffic = Traffic.of_level(i, o, fixed=False)
    return (
        traffic,
        dataset,
        f"{dataset}: mean {i:.0f}/{o:.0f} tokens as measured in the warehouse, spread as a chat "
        f"dataset's (lognormal, CV {traffic.input_cv:g} / {traffic.output_cv:g}, prompts up to "
        f"{traffic.max_input}, prompt and output up to {traffic.max_total} tokens: an assumption "
        "of the estimate, chosen by its validation)",
    )


def measured_on(points: pd.DataFrame, gpu: str, count: int) -> list[str]:
    rows = points[(points["gpu_model"] == gpu) & (points["gpu_count"] == count)]
    return sorted({str(m) for m in rows["model"]})


def trusted(points: pd.DataFrame) -> pd.DataFrame:
    """The levels a calibration rests on: those the latency curve itself trusts (no outlier
    reason: a cold start, a hiccup, a fall behind below a rate kept up with,
    `fleetplan.services.outliers`)."""
    if points.empty:
        return points
    return points[outlier_reasons(points).isna()]


_FITS: dict[tuple[int, tuple[str, ...]], dict[tuple[str, str], Fit]] = {}
FIT_COLUMNS = (
    "run_id",
    "level_index",
    "model",
    "gpu_model",
    "gpu_count",
    "engine",
    "offered_rate_rps",
    "request_throughput_rps",
    "tpot_mean_ms",
    "tpot_p50_ms",
    "ttft_p50_ms",
    "input_tokens_mean",
    "output_tokens_mean",
    # what says which levels found their prompts in the prefix cache (`prefix_cache`)
    "created_at",
    "duration_s",
    "requests_sent",
    "dataset",
    "input_len",
    "tensor_parallel_size",
    "engine_version",
    "variant",
    "host",
    "run_metadata",
)


def forget_calibrations() -> None:
    """Drop the kept fits (a benchmark timing a cold estimate)."""
    _FITS.clear()


def calibrations(points: pd.DataFrame, architectures) -> dict[tuple[str, str], Fit]:
    """The fits of the warehouse's levels, kept for the same levels and architectures (a plan
    of many offers, a page re-planning, ask for them again)."""
    columns = [c for c in FIT_COLUMNS if c in points.columns]
    digest = int(pd.util.hash_pandas_object(points[columns], index=False).sum())
    key = (digest, tuple(sorted(architectures)))
    if key not in _FITS:
        if len(_FITS) > 8:
            _FITS.clear()
        _FITS[key] = fit_all(trusted(points), architectures, bundled_specs())
    return _FITS[key]


# The scheduler steps a simulated prediction may take, all its runs together: about ten seconds
# of one core. Long outputs on a cache of few such requests take many (every preemption
# recomputes); beyond it the estimate is refused rather than left running
# (`planner.estimate.simulate.step_budget`).
SIMULATION_STEPS = 2_000_000


def prediction_for(
    shape: Shape, gpu: GpuSpec, count: int, fit: Fit, traffic: Traffic, method: str = "simulation"
):
    """The server's prediction by the simulation (or the queueing approximation, "queue"),
    or None where the weights do not fit its memory or the model does not split over `count`
    GPUs (`tensor_parallel_problem`, vLLM's rules). Where `count` exceeds the KV heads, each
    is replicated and the cache holds KV heads / `count` of what it would. By the simulation,
    an InputError where a request of fixed lengths does not fit the cache, or where simulating
    would take over `SIMULATION_STEPS`."""
    arch = shape.architecture
    if tensor_parallel_problem(arch, count, strict=False) is not None:
        return None
    server = Server(shape, gpu, count)
    kv = kv_cache_tokens(shape, gpu, count) / arch.kv_replicas(count)
    if kv < 1:
        return None
    if method == "queue":
        return predict_queue(
            server, fit.efficiencies, traffic, gpu_count=count, kv_tokens_per_replica=kv
        )
    longest = traffic.input_tokens + traffic.output_tokens
    if traffic.max_total is None and engine_units(arch, longest) > kv:
        raise InputError(
            f"a request of {traffic.input_tokens:,.0f} + {traffic.output_tokens:,.0f} tokens "
            f"does not fit the KV cache of {kv:,.0f} tokens that {count}x {gpu.gpu_id} holds "
            "for the model (an engine refuses such a request; the estimate would serve shorter "
            "ones): "
            "ask for shorter lengths or more GPUs",
            field="input_len",
        )
    try:
        with step_budget(SIMULATION_STEPS):
            return predict(
                server,
                fit.efficiencies,
                traffic,
                gpu_count=count,
                kv_tokens_per_replica=kv,
                seed=0,
            )
    except SimulationTooLong:
        raise InputError(
            f"simulating {traffic.input_tokens:,.0f}/{traffic.output_tokens:,.0f}-token "
            f"requests on {count}x {gpu.gpu_id} takes over {SIMULATION_STEPS:,} scheduler steps "
            f"(a KV cache of {kv:,.0f} tokens holds few such requests, preempted and recomputed "
            "over and over): too long to estimate; ask for shorter lengths or more GPUs",
            field="output_len",
        ) from None


def interval(value: float, band: EstimateError | None) -> tuple[float, float]:
    """The rates the measured capacity would lie between, by the band on saturation (measured
    = predicted / (1 + error))."""
    if band is None or band.saturation is None or value <= 0:
        return value, value
    low_error, high_error = band.saturation
    return value / (1 + high_error), value / max(1 + low_error, 1e-9)


def resolve_gpu(query) -> GpuSpec:
    gpu = canonical_gpu(query.gpu)
    if not gpu.known:
        raise InputError(f"GPU {gpu.describe()}", field="gpu")
    specs = bundled_specs()
    if gpu.gpu_id not in specs:
        raise InputError(
            f"no spec figures for {gpu.gpu_id} to estimate with; sample_data/gpu_specs.toml has: "
            f"{', '.join(sorted(specs))}",
            field="gpu",
        )
    return specs[gpu.gpu_id]


def fit_for(
    fits: dict[tuple[str, str], Fit],
    spec: GpuSpec,
    points: pd.DataFrame | None = None,
    architectures: Mapping[str, Architecture] | None = None,
) -> tuple[Fit, Borrowed]:
    """The fit an estimate on `spec` uses and whose it is (`nearest_measured`), a borrowed one
    moved to `spec` (`transferred`: its step floor and all-reduces). Where the
    warehouse (`points`) holds runs on that GPU that gave no fit, the words say so: not "no
    run", but whose runs could not calibrate it and what their levels lack."""
    fitted = [gpu for gpu, engine in fits if engine == ENGINE]
    borrowed = nearest_measured(bundled_specs(), spec.gpu_id, fitted)
    if borrowed is None:
        raise InputError(
            f"nothing to calibrate an estimate on: no {ENGINE} levels of a model of known shape "
            "on a GPU of sample_data/gpu_specs.toml in the warehouse",
            field="gpu",
        )
    if borrowed.gpu_id != spec.gpu_id and points is not None and not points.empty:
        rows = points[points["gpu_model"] == spec.gpu_id]
        models = sorted({str(m) for m in rows["model"].dropna()})
        if models:
            more = f" and {len(models) - 3} more" if len(models) > 3 else ""
            known = set(architectures if architectures is not None else bundled_architectures())
            why = calibration_gaps(rows, known) or "the fit found no coefficients"
            unusable = (
                f"no run on {spec.gpu_id} can calibrate it (its runs of "
                f"{', '.join(models[:3])}{more}: {why})"
            )
            words = borrowed.words.replace(f"no run on {spec.gpu_id}", unusable, 1)
            borrowed = replace(borrowed, words=words)
    fit = fits[(borrowed.gpu_id, ENGINE)]
    if borrowed.gpu_id == spec.gpu_id:
        return fit, borrowed
    # the borrowed fit moved to this GPU: its step floor and its all-reduces (`transferred`)
    source = bundled_specs()[borrowed.gpu_id]
    words = f"{borrowed.words}; {transfer_words(fit.efficiencies, source, spec)}"
    return fit.moved_to(source, spec), replace(borrowed, words=words)


def has_runs(points: pd.DataFrame, model: str, gpu: str, count: int) -> bool:
    try:
        mine = points_for_model(points, model)
    except InputError:
        return True  # ambiguous: the measured path says so
    return bool(((mine["gpu_model"] == gpu) & (mine["gpu_count"] == count)).any())


def estimate_block(
    prediction: Prediction, fit: Fit, borrowed: Borrowed, band, traffic_words, method=METHOD
):
    eff = fit.efficiencies
    return EstimateBlock(
        curve=[
            EstimatePoint(
                rate_rps=round(p.rate_rps, 4),
                ttft_p99_ms=round(p.ttft_p99_ms, 2),
                tpot_p99_ms=round(p.tpot_p99_ms, 3),
            )
            for p in prediction.curve
        ],
        calibrated_on=list(fit.configurations),
        error=band,
        method=method,
        gpu_basis=borrowed.words,
        traffic=traffic_words,
        efficiencies={
            "overhead_ms": round(eff.overhead_s * 1000, 3),
            "bandwidth_efficiency": round(eff.bandwidth_efficiency, 3),
            "compute_efficiency": round(eff.compute_efficiency, 3),
            "allreduce_us": round(eff.allreduce_s * 1e6, 2),
            "link_efficiency": round(1 / eff.inv_link_eff, 3),  # inv_link_eff >= 1 by the fit
            "request_ms": round(eff.request_s * 1000, 3),
        },
    )
