"""`fleetplan capacity` with `--estimate`: the measured answer where the warehouse holds a run
of the configuration, else a measured model of identical architecture, else the serving
model's estimate (`fleetplan.services.estimate`), each labelled by its `basis`."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pandas as pd

from fleetplan.core.gpus import canonical_gpu
from fleetplan.planner.capacity.architecture import window_words
from fleetplan.planner.estimate.shape import identical_architectures
from fleetplan.services.capacity import (
    CapacityQuery,
    CapacityReport,
    LatencyTargets,
    ServerEnvelope,
    capacity_report,
    model_memory,
)
from fleetplan.services.envelope import bundled_architectures
from fleetplan.services.estimate import (
    band_for,
    calibrations,
    estimate_block,
    fit_for,
    has_runs,
    interval,
    measured_on,
    method_words,
    model_shape,
    prediction_for,
    resolve_gpu,
    traffic_of,
)
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points, gpu_catalog

# What an estimate's KV cache figure is; `window_words` may follow it.
KV_NOTE = "KV cache as the engine allocates it (memory x 0.9 - weights - reserve)"


def capacity_or_estimate(
    points: pd.DataFrame, query: CapacityQuery, catalog: pd.DataFrame | None = None
) -> CapacityReport:
    """The measured report where there are runs (or no --estimate), else the estimate."""
    gpu = canonical_gpu(query.gpu)
    if not query.estimate or not gpu.known:
        return capacity_report(points, query, catalog)
    if has_runs(points, query.model, gpu.gpu_id, query.gpu_count):
        return capacity_report(points, query, catalog)
    return estimate_report(points, query, catalog)


def estimate_report(
    points: pd.DataFrame, query: CapacityQuery, catalog: pd.DataFrame | None
) -> CapacityReport:
    spec = resolve_gpu(query)
    architectures = dict(bundled_architectures())
    shape = model_shape(query, architectures)
    measured = [
        (model, architectures[model.lower()])
        for model in measured_on(points, spec.gpu_id, query.gpu_count)
        if model.lower() in architectures
    ]
    same = identical_architectures(shape.architecture, measured)
    if same:
        return identical_report(points, query, catalog, same)
    architectures[query.model.lower()] = shape.architecture
    traffic, label, words = traffic_of(points, query)
    fit, borrowed = fit_for(calibrations(points, architectures), spec, points, architectures)
    arch = shape.architecture
    band = band_for(borrowed, spec.gpu_id, moe=arch.routed, hybrid=arch.recurrent is not None)
    prediction = prediction_for(shape, spec, query.gpu_count, fit, traffic)
    where = f"{query.model} on {query.gpu_count}x {spec.gpu_id}"
    if prediction is None:
        return _none(query, spec.gpu_id, words, f"{where}: the weights do not fit in memory")
    targets = query.targets
    point = prediction.capacity(targets.ttft_p99_ms, targets.tpot_p99_ms)
    block = estimate_block(prediction, fit, borrowed, band, words, method_words(shape))
    value = point.rate_rps if point is not None else 0.0
    low, high = interval(value, band)
    chosen = {"low": low, "mid": value, "high": high}[query.capacity_at]
    if point is not None and chosen != value:
        point = at_rate(prediction, chosen)  # the P99s where the shown end is
    reason = (
        f"estimated, not measured: {borrowed.words}"
        if point is not None
        else "estimated: even the lowest simulated rate misses the targets"
    )
    return CapacityReport(
        model=query.model,
        gpu_model=spec.gpu_id,
        gpu_count=query.gpu_count,
        server=f"{fit.engine} (as calibrated), TP {query.gpu_count}",
        traffic=label,
        targets=targets,
        extrapolate=query.extrapolate,
        capacity_rps=chosen,
        rps_low=low,
        rps_high=high,
        capacity_at=query.capacity_at,
        basis="estimated",
        reason=reason,
        predicted_ttft_p99_ms=None if point is None else point.ttft_p99_ms,
        predicted_tpot_p99_ms=None if point is None else point.tpot_p99_ms,
        measured_rule_rps=0.0,
        saturation_rps=prediction.saturation_rps,
        levels=[],
        bounds=ServerEnvelope(
            architecture=shape.architecture.source,
            memory_gb=spec.memory_gb,
            bandwidth_gb_s=spec.bandwidth_gb_s,
            kv_tokens=prediction.kv_tokens,
            weights_fit=True,
            levels=[],
            flagged=0,
            note=KV_NOTE + window_words(shape.architecture),
            **model_memory(arch),
        ),
        estimate=block,
    )


def at_rate(prediction, rate: float):
    """The curve's P99s at `rate` (linear between its points; None past saturation, where the
    model says nothing: the high end of a band can lie beyond what it simulates)."""
    curve = prediction.curve
    for before, after in itertools.pairwise(curve):
        if before.rate_rps <= rate <= after.rate_rps:
            share = (rate - before.rate_rps) / max(after.rate_rps - before.rate_rps, 1e-12)
            return replace(
                before,
                rate_rps=rate,
                ttft_p99_ms=before.ttft_p99_ms + share * (after.ttft_p99_ms - before.ttft_p99_ms),
                tpot_p99_ms=before.tpot_p99_ms + share * (after.tpot_p99_ms - before.tpot_p99_ms),
            )
    if curve and rate < curve[0].rate_rps:
        return replace(curve[0], rate_rps=rate)
    return None


def _none(query: CapacityQuery, gpu_id: str, words: str, reason: str) -> CapacityReport:
    return CapacityReport(
        model=query.model,
        gpu_model=gpu_id,
        gpu_count=query.gpu_count,
        traffic=words,
        targets=query.targets,
        extrapolate=query.extrapolate,
        capacity_rps=0.0,
        capacity_at=query.capacity_at,
        basis="estimated",
        reason=reason,
        predicted_ttft_p99_ms=None,
        predicted_tpot_p99_ms=None,
        measured_rule_rps=0.0,
        saturation_rps=None,
        levels=[],
    )


def identical_report(points, query: CapacityQuery, catalog, same: list[str]) -> CapacityReport:
    """The measured answer of the first identical model, relabelled."""
    stand_in = same[0]
    report = capacity_report(points, query.model_copy(update={"model": stand_in}), catalog)
    others = f" (also {', '.join(same[1:])})" if len(same) > 1 else ""
    return report.model_copy(
        update={
            "model": query.model,
            "basis": "identical architecture",
            "identical_to": stand_in,
            "reason": f"measured on an identical architecture ({stand_in}){others}; "
            f"{report.basis}: {report.reason or 'at the measured levels'}",
        }
    )


def capacity_from_warehouse(warehouse: Warehouse, query: CapacityQuery) -> CapacityReport:
    """`fleetplan capacity`, with --estimate where no run of the configuration is held."""
    return capacity_or_estimate(benchmark_points(warehouse), query, gpu_catalog(warehouse))


__all__ = ["LatencyTargets", "capacity_from_warehouse", "capacity_or_estimate"]
