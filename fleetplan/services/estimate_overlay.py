"""The Benchmarks page's overlay: the serving model calibrated on the warehouse, simulated at
each measured level of a configuration as it ran (its rate, its number of requests, its mean
tokens, and the prompts it found in the engine's prefix cache: `prefix_cache.cached_shares`),
so a user sees how well the model an estimate rests on fits what was measured.

One series per configuration curve (`load_tables.ConfigurationCurve`), keyed by its label:
(offered req/s, simulated P99 ms) per metric, and the fit's words (which GPU's coefficients,
fitted on how many configurations). A configuration whose model has no known shape, or whose GPU
the spec table lacks, has none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from fleetplan.planner.estimate.level import level_tokens, tensor_parallel
from fleetplan.planner.estimate.prefix_cache import (
    cached_from,
    cached_shares,
    level_caches_prefixes,
)
from fleetplan.planner.estimate.serving import Server, Shape, kv_cache_tokens
from fleetplan.planner.estimate.simulate import Traffic, simulate
from fleetplan.services.envelope import bundled_architectures
from fleetplan.services.estimate import bundled_specs, calibrations, fit_for
from fleetplan.services.load_tables import ConfigurationCurve


@dataclass(frozen=True, slots=True)
class Overlay:
    configuration: str
    ttft: list[tuple[float, float]]
    tpot: list[tuple[float, float]]
    words: str

    def samples(self, metric: str) -> list[tuple[float, float]]:
        return self.ttft if metric == "ttft" else self.tpot


def _simulated(row: dict, shape: Shape, fit, cached: float = 0.0) -> tuple[float, float] | None:
    spec = bundled_specs().get(str(row["gpu_model"]))
    tokens = level_tokens(row)
    rate = row.get("offered_rate_rps")
    if spec is None or tokens is None or rate is None or not math.isfinite(rate) or rate <= 0:
        return None
    tp = tensor_parallel(row)
    replicas = max(int(row["gpu_count"]) // tp, 1)
    kv = kv_cache_tokens(shape, spec, tp)
    if kv < 1:
        return None
    fixed = pd.notna(row.get("input_len")) and pd.notna(row.get("output_len"))
    sent = row.get("requests_sent")
    requests = int(sent) if sent is not None and pd.notna(sent) and sent > 0 else 200
    requests = max(min(requests // replicas, 1000), 20)
    run = simulate(
        Server(shape, spec, tp),
        fit.efficiencies,
        Traffic.of_level(*tokens, fixed=fixed),
        rate_rps=float(rate) / replicas,
        requests=requests,
        kv_tokens=kv,
        seed=1,
        cached_from=cached_from(requests, cached),
        resume_cached=level_caches_prefixes(row),
    )
    return run.p("ttft", 99), run.p("tpot", 99)


def model_overlays(
    subset: pd.DataFrame, everything: pd.DataFrame, curves: list[ConfigurationCurve]
) -> dict[str, Overlay]:
    """Per curve of `subset` (one model, one traffic shape), the model simulated at its levels;
    calibrated on `everything` (the warehouse's levels)."""
    architectures = dict(bundled_architectures())
    fits = calibrations(everything, architectures)
    out = {}
    for curve in curves:
        rows = subset[
            (subset["gpu_model"] == curve.gpu_model)
            & (subset["gpu_count"] == int(curve.configuration.split("x", 1)[0]))
        ]
        if rows.empty:
            continue
        model = str(rows["model"].iloc[0]).lower()
        spec = bundled_specs().get(curve.gpu_model)
        if model not in architectures or spec is None:
            continue
        try:
            fit, borrowed = fit_for(fits, spec, everything)
        except Exception:  # nothing to calibrate on
            continue
        shape = Shape.of(architectures[model])
        ttft, tpot = [], []
        ordered = rows.sort_values("offered_rate_rps")
        shares = cached_shares(ordered, architectures, bundled_specs()).tolist()
        for row, share in zip(ordered.to_dict("records"), shares, strict=True):
            simulated = _simulated(row, shape, fit, share)
            if simulated is None:
                continue
            ttft.append((float(row["offered_rate_rps"]), simulated[0]))
            tpot.append((float(row["offered_rate_rps"]), simulated[1]))
        if ttft:
            words = f"{borrowed.words}; calibrated on {len(fit.configurations)} configurations"
            cached = sum(share > 0 for share in shares)
            if cached:
                words += (
                    f"; {cached} of its levels simulated with their prompts in the prefix cache, "
                    "as they ran"
                )
            out[curve.configuration] = Overlay(curve.configuration, ttft, tpot, words)
    return out
