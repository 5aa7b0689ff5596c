"""The estimate validation's further checks (`benchmarks/estimate.py` runs them): the real H100
SXM sweep of ../shared/data/tool-outputs held against estimates made without it, the queueing
approximation against the simulation it stands for, and the aims' timings."""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from estimate import (
    CONFIG,
    ENGINE,
    KEPT_UP,
    REAL,
    REAL_ENGINE,
    ROOT,
    measured_of,
    p99_comparisons,
    queue_level,
    simulate_level,
    within,
)

from fleetplan.planner.estimate.calibrate import fit_gpu
from fleetplan.planner.estimate.prefix_cache import cached_shares
from fleetplan.planner.estimate.serving import Server, Shape, kv_cache_tokens
from fleetplan.planner.estimate.simulate import Traffic
from fleetplan.services.envelope import bundled_architectures, envelope_reasons
from fleetplan.services.estimate import bundled_specs
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points, gpu_catalog


def real_points() -> pd.DataFrame | None:
    """The real sweep imported as a user would (`fleetplan ingest DIR --gpu h100-sxm
    --gpu-count N`, N its tensor parallelism), levels with over 10 % failed requests left out
    (the source repo's own overload rule); None where ../shared is not beside the checkout."""
    import re

    from benchmarks.inputs.shared_data import tool_outputs_dir
    from fleetplan.cli import main as fleetplan

    root = tool_outputs_dir()
    if root is None or not (root / REAL).is_dir():
        return None
    with tempfile.TemporaryDirectory(prefix="fleetplan-real-") as folder:
        path = Path(folder) / "real.duckdb"
        for run in sorted((root / REAL).iterdir()):
            tp = re.search(r"-tp(\d+)-", run.name)
            if not run.is_dir() or tp is None:
                continue
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                code = fleetplan(
                    [
                        "ingest",
                        str(run),
                        "--warehouse",
                        str(path),
                        "--gpu",
                        "h100-sxm",
                        "--gpu-count",
                        tp.group(1),
                    ]
                )
            assert code == 0, run
        with Warehouse.open(path, read_only=True) as warehouse:
            points = benchmark_points(warehouse)
            catalog = gpu_catalog(warehouse)
    failed = points["failed"].fillna(0) / points["requests_sent"].clip(lower=1)
    points = points[failed <= 0.1]
    # Levels fleetplan itself flags (their TPOT below the decode floor of an H100 SXM: reading
    # the weights once takes longer than they say a token took) are not held against.
    flags = envelope_reasons(points, catalog)
    print(
        f"{REAL}: {len(points)} levels, {int(flags.notna().sum())} flagged by the physical bounds "
        "(TPOT under the decode floor), left out"
    )
    return points[flags.isna()].copy()


def evaluate_real(real: pd.DataFrame, ionet: pd.DataFrame, method: str) -> list[dict]:
    """The real sweep's levels against estimates made without them: "own GPU" (the H100 SXM fit
    on the sweep's other models) and "same architecture" (the H100 PCIe fit of the io.net runs
    borrowed, as an unmeasured H100 SXM would)."""
    archs = bundled_architectures()
    specs = bundled_specs()
    levels = []
    # each level as it ran: its shared-prefix prompts, cycled through the run, cached after
    # their first sending (`prefix_cache.cached_shares`)
    cached = cached_shares(real, archs, specs)
    for config, rows in real.groupby(CONFIG):
        model = config[0]
        if model.lower() not in archs:
            continue
        shape = Shape.of(archs[model.lower()])
        # a mixture of experts' levels are a table of their own: the bands stay the dense ones'
        moe = " (mixture of experts)" if archs[model.lower()].routed else ""
        for kind in ("own GPU", "same architecture"):
            if kind == "own GPU":
                fit = fit_gpu(real[real["model"] != model], archs, specs, "h100-sxm", ENGINE)
            else:
                fit = fit_gpu(ionet, archs, specs, "h100-pcie", ENGINE)
                if fit is not None:  # borrowed as fleetplan borrows it (`Fit.moved_to`)
                    fit = fit.moved_to(specs["h100-pcie"], specs["h100-sxm"])
            if fit is None:
                continue
            for index, row in zip(rows.index, rows.to_dict("records"), strict=True):
                share = float(cached[index])
                if method == "simulation":
                    sim = simulate_level(row, shape, fit, engine=REAL_ENGINE, cached=share)
                else:
                    sim = queue_level(row, shape, fit, cached=share)
                real_level = measured_of(row)
                if real_level["throughput"] >= KEPT_UP * row["offered_rate_rps"]:
                    levels += p99_comparisons(config, kind + moe, row, sim, real_level)
    return levels


def real_summary(levels: list[dict]) -> tuple[list[str], dict]:
    """The real sweep's table (P99s only: its levels kept up, so no saturation is measured)."""
    lines = [
        "| kind | metric | levels | median abs err | P90 abs err | within aim | band (P10, P90) |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    bands: dict[str, dict] = {}
    frame = pd.DataFrame(levels)
    for (kind, metric), part in frame.groupby(["kind", "metric"], sort=False):
        errors = part["error"].to_numpy(dtype=float)
        hits = sum(within(e, metric) for e in errors)
        low, high = np.percentile(errors, [10, 90])
        lines.append(
            f"| {kind} | {metric} | {len(errors)} | {np.median(np.abs(errors)):.0%} | "
            f"{np.percentile(np.abs(errors), 90):.0%} | {hits}/{len(errors)} "
            f"({hits / len(errors):.0%}) | {low:+.0%}, {high:+.0%} |"
        )
        bands.setdefault(kind, {})[metric] = [round(low, 3), round(high, 3)]
        bands[kind][f"{metric}_within_aim"] = round(hits / len(errors), 3)
    return lines, bands


def speed(points: pd.DataFrame, catalog: pd.DataFrame) -> None:
    """The aims' timings, each beside a baseline of the same run: one estimate (capacity
    --estimate, simulation) against the measured answer of a measured configuration; the 13
    models x {RTX 4090 x1/x2/x4/x8, H100 PCIe x1/x2, H100 SXM x1} planned with "fill" against
    the same plans with "off"."""
    from fleetplan.planner.scenario.scenario import Scenario
    from fleetplan.services.capacity import CapacityQuery, LatencyTargets
    from fleetplan.services.capacity_estimate import capacity_or_estimate
    from fleetplan.services.estimate import forget_calibrations
    from fleetplan.services.planning import plan_from_tables

    targets = LatencyTargets(ttft_p99_ms=500, tpot_p99_ms=50)
    config = str(ROOT / "sample_data/models/llama-3.1-8b-config.json")
    estimate = CapacityQuery(
        model="meta-llama/Llama-3.1-8B",
        gpu="h100-sxm",
        gpu_count=1,
        targets=targets,
        estimate=True,
        model_config_path=config,
    )
    measured = CapacityQuery(
        model="DeepSeek-R1-Distill-Qwen-14B", gpu="h100-pcie", gpu_count=1, targets=targets
    )
    timings = {}
    for name, query in (("measured capacity", measured), ("estimate (cold)", estimate)):
        forget_calibrations()
        started = time.perf_counter()
        capacity_or_estimate(points, query, catalog)
        timings[name] = time.perf_counter() - started
    started = time.perf_counter()
    capacity_or_estimate(points, estimate, catalog)
    timings["estimate (calibration kept)"] = time.perf_counter() - started
    models = sorted(points["model"].unique())
    offers = (("rtx-4090", 0.25), ("h100-pcie", 2.0), ("h100-sxm", 2.49))
    for mode in ("off", "fill"):
        forget_calibrations()
        started = time.perf_counter()
        for model in models:
            scenario = Scenario.model_validate(
                {
                    "model": model,
                    "estimates": mode,
                    "classes": [
                        {"name": "chat", "rate_rps": 20, "ttft_p99_ms": 1000, "tpot_p99_ms": 100}
                    ],
                    "gpus": [{"gpu_model": g, "hourly_usd": h, "site": "dc"} for g, h in offers],
                    "sites": [
                        {"name": "dc", "electricity_usd_per_kwh": 0.12, "grid_gco2_per_kwh": 350}
                    ],
                }
            )
            plan_from_tables(scenario, points, catalog, pareto_points=0)
        timings[f"13 plans, estimates {mode}"] = time.perf_counter() - started
    for name, seconds in timings.items():
        print(f"{name:32s} {seconds:6.2f} s")
    ratio = timings["estimate (cold)"] / timings["measured capacity"]
    print(f"estimate / measured capacity: {ratio:.1f}x")
    ratio = timings["13 plans, estimates fill"] / timings["13 plans, estimates off"]
    print(f"fill / off (13 plans): {ratio:.1f}x")


def queue_against_simulation(points: pd.DataFrame) -> None:
    """The queueing approximation against the simulation it stands for: every bundled model of
    known shape on each GPU of the spec table it fits on one GPU of (its measured GPU counts
    aside), the ShareGPT traffic; saturation, and the P99s at the curve's shares up to 0.9."""
    from fleetplan.planner.estimate.predict import predict
    from fleetplan.planner.estimate.queueing import predict_queue
    from fleetplan.services.estimate import calibrations, fit_for

    archs = bundled_architectures()
    specs = bundled_specs()
    fits = calibrations(points, dict(archs))
    traffic = Traffic.of_level(207, 205, fixed=False)
    rows = []
    for model in sorted(points["model"].str.lower().unique()):
        if model not in archs:
            continue
        shape = Shape.of(archs[model])
        for gpu in ("rtx-4090", "h100-pcie", "h100-sxm", "l40s", "a100-80gb"):
            spec = specs[gpu]
            kv = kv_cache_tokens(shape, spec, 1)
            if kv < 1:
                continue
            fit, _ = fit_for(fits, spec)
            server = Server(shape, spec, 1)
            des = predict(server, fit.efficiencies, traffic, gpu_count=1, kv_tokens_per_replica=kv)
            queue = predict_queue(
                server, fit.efficiencies, traffic, gpu_count=1, kv_tokens_per_replica=kv
            )
            row = {"saturation": queue.saturation_rps / des.saturation_rps - 1}
            for metric in ("ttft_p99_ms", "tpot_p99_ms"):
                row[metric] = [
                    getattr(q, metric) / getattr(d, metric) - 1
                    for d, q in zip(des.curve, queue.curve, strict=True)
                    if d.rate_rps <= 0.9 * des.saturation_rps
                ]
            rows.append(row)
    sat = np.array([r["saturation"] for r in rows])
    print(f"\n### queueing approximation against the simulation ({len(rows)} configurations)\n")
    print("| figure | n | median abs diff | P90 abs diff | within 20 % |")
    print("|---|---:|---:|---:|---:|")
    for name, values in (
        ("saturation", sat),
        ("P99 TTFT (shares <= 0.9)", np.concatenate([r["ttft_p99_ms"] for r in rows])),
        ("P99 TPOT (shares <= 0.9)", np.concatenate([r["tpot_p99_ms"] for r in rows])),
    ):
        diff = np.abs(values)
        print(
            f"| {name} | {len(values)} | {np.median(diff):.0%} | {np.percentile(diff, 90):.0%} | "
            f"{(diff <= 0.2).mean():.0%} |"
        )
