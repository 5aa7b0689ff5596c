"""Leave-one-out validation of the serving model's estimates (issue 31): how far an estimate of
a configuration nobody measured lands from the measurement, against a naive baseline.

For every measured configuration (model, GPU, GPUs per server) of the bundled io.net data whose
model's shape is known, two estimates are made as if it had not been measured:

- "own GPU": the model left out of the calibration entirely (every GPU), the GPU's coefficients
  fitted on the other models' levels;
- "other architecture": every level of the GPU left out, its coefficients borrowed from the other
  measured GPU (RTX 4090 <-> H100 PCIe: the bundled data hold one GPU per architecture, so no
  "same architecture" hold-out can be made from them).

Each measured level is then simulated as the benchmark ran it (its number of requests, its
offered rate, Poisson, the level's mean tokens with a chat dataset's spread) and compared:
P99 TPOT and P99 TTFT at the levels below saturation (the server kept up: achieved throughput
at least 90 % of the offered rate), and the configuration's saturation (its highest achieved
throughput over all levels, measured against simulated on the same levels).

Naive baseline: the nearest measured configuration scaled by memory bandwidth and weights
(own GPU: the same GPU and GPU count, the model closest in weights, throughput x weights ratio,
latencies / it; other architecture: the same model and GPU count on the other GPU, throughput
x bandwidth ratio, latencies / it).

Writes the band each estimate carries (10th to 90th percentile of predicted / measured - 1,
per kind) to sample_data/models/estimate_errors.json with --write, and prints the table for
benchmarks/RESULTS.md. Reproduce: `python benchmarks/estimate.py [--write]` (about a minute).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fleetplan.planner.estimate.calibrate import fit_gpu  # noqa: E402
from fleetplan.planner.estimate.level import level_tokens, tensor_parallel  # noqa: E402
from fleetplan.planner.estimate.prefix_cache import (  # noqa: E402
    cached_from,
    cached_shares,
    level_caches_prefixes,
)
from fleetplan.planner.estimate.queueing import point  # noqa: E402
from fleetplan.planner.estimate.serving import (  # noqa: E402
    MAX_NUM_SEQS,
    TOKEN_BUDGET,
    Server,
    Shape,
    kv_cache_tokens,
)
from fleetplan.planner.estimate.simulate import Traffic, simulate  # noqa: E402
from fleetplan.services.envelope import bundled_architectures  # noqa: E402
from fleetplan.services.estimate import BANDS, ENGINE, MOE, bundled_specs, trusted  # noqa: E402
from fleetplan.warehouse.db import Warehouse  # noqa: E402
from fleetplan.warehouse.queries import benchmark_points, gpu_catalog  # noqa: E402
from fleetplan.warehouse.sample_data import build  # noqa: E402

CONFIG = ["model", "gpu_model", "gpu_count"]
MAX_SIMULATED = 2000  # requests a simulated level runs at most (a P99 on its 20 slowest)
# The real sweep of H100 SXM runs (inference-sim/training, inference-perf on vLLM): its dense
# models' folders, each with the server parameters its exp-config.yaml states.
REAL = "inference-sim-training-h100"
REAL_ENGINE = {"max_num_seqs": 128, "token_budget": 2048}
KEPT_UP = 0.9
AIMS = {"saturation": 1.5, "tpot_p99": 0.35, "ttft_p99": 0.5}
AIM_SHARES = {"saturation": 0.8, "tpot_p99": 0.75, "ttft_p99": 0.6}


def sample_points() -> pd.DataFrame:
    """The bundled levels at a finite offered rate, complete (`capacity_curve.sample_points`),
    less those fleetplan's own rule sets aside."""
    from capacity_curve import sample_points as finite_levels

    points = finite_levels()
    # The levels fleetplan's own latency curve trusts (fleetplan.services.outliers): the
    # estimate is held to what a measured plan would rest on, and calibrated on the same.
    kept = trusted(points)
    print(
        f"{len(points)} levels, {len(points) - len(kept)} set aside as outliers by "
        "fleetplan's own rule (a cold start, a fall behind below a rate kept up with)"
    )
    return kept.copy()


def queue_level(row: dict, shape: Shape, fit, cached: float = 0.0):
    """The queueing approximation at the level's rate (steady state, no finite run); `cached`:
    the share of its requests whose prompts were in the prefix cache: where the P99 request was
    one of them, one token each to prefill, as it ran."""
    spec = bundled_specs()[row["gpu_model"]]
    tp = tensor_parallel(row)
    server = Server(shape, spec, tp)
    kv = kv_cache_tokens(shape, spec, tp)
    prompt, output = level_tokens(row)
    fixed = pd.notna(row.get("input_len")) and pd.notna(row.get("output_len"))
    replicas = max(int(row["gpu_count"]) // tp, 1)
    rate = float(row["offered_rate_rps"]) / replicas
    traffic = Traffic.of_level(prompt, output, fixed=fixed, cached=cached >= 0.99)
    prompt = traffic.input_tokens
    ttft50, ttft99, _, tpot99, r_sat = point(server, fit.efficiencies, traffic, rate, kv)
    # What a benchmark of n requests measures: n over its arrivals (no faster than the server
    # serves them) and its drain, the longest output of the run (the 1 - 1/n quantile) decoded
    # as the batch empties (at the step of an idle server).
    n = max(int(row["requests_sent"] or 200) // replicas, 1)
    idle = point(server, fit.efficiencies, traffic, 1e-9, kv)[2]
    longest = output
    if traffic.output_cv > 0:
        sigma = math.sqrt(math.log1p(traffic.output_cv**2))
        z = NormalDist().inv_cdf(1 - 1 / n)
        longest = min(output * math.exp(z * sigma - sigma * sigma / 2), traffic.max_total - prompt)
    drain = (ttft50 + longest * idle) / 1000
    throughput = n / (max(n / rate, n / r_sat) + drain)
    return {"throughput": throughput * replicas, "tpot_p99": tpot99, "ttft_p99": ttft99}


def simulate_level(
    row: dict, shape: Shape, fit, seed: int = 1, engine: dict | None = None, cached: float = 0.0
):
    """The level's benchmark simulated; `engine`: the server's max_num_seqs and token budget
    where the run states them (else vLLM's defaults); `cached`: the share of its requests whose
    prompts were in the prefix cache (the last ones sent), one token each to prefill, as it
    ran; a preempted sequence resumes from the prefix cache where the run's engine caches
    prefixes (`prefix_cache.level_caches_prefixes`)."""
    engine = engine or {}
    budget = engine.get("token_budget", TOKEN_BUDGET)
    spec = bundled_specs()[row["gpu_model"]]
    tp = tensor_parallel(row)
    server = Server(shape, spec, tp)
    kv = kv_cache_tokens(shape, spec, tp, token_budget=budget)
    prompt, output = level_tokens(row)
    fixed = pd.notna(row.get("input_len")) and pd.notna(row.get("output_len"))
    replicas = max(int(row["gpu_count"]) // tp, 1)
    requests = min(max(int(row["requests_sent"] or 200) // replicas, 20), MAX_SIMULATED)
    run = simulate(
        server,
        fit.efficiencies,
        Traffic.of_level(prompt, output, fixed=fixed),
        rate_rps=float(row["offered_rate_rps"]) / replicas,
        requests=requests,
        cached_from=cached_from(requests, cached),
        kv_tokens=kv,
        seed=seed,
        max_num_seqs=engine.get("max_num_seqs", MAX_NUM_SEQS),
        token_budget=budget,
        resume_cached=level_caches_prefixes(row),
    )
    return {
        "throughput": run.throughput_rps * replicas,
        "tpot_p99": run.p("tpot", 99),
        "ttft_p99": run.p("ttft", 99),
    }


def measured_of(row: dict) -> dict:
    return {
        "throughput": float(row["request_throughput_rps"]),
        "tpot_p99": float(row["tpot_p99_ms"]),
        "ttft_p99": float(row["ttft_p99_ms"]),
    }


def baseline_of(
    points: pd.DataFrame, config: tuple, kind: str, archs, specs
) -> pd.DataFrame | None:
    """The naive baseline's source configuration's levels, scaled (module docstring)."""
    model, gpu, count = config
    target = archs[model.lower()]
    if kind == "own GPU":
        others = points[
            (points["gpu_model"] == gpu)
            & (points["gpu_count"] == count)
            & (points["model"] != model)
            & points["model"].str.lower().isin(archs)
        ]
        if others.empty:
            return None
        weights = others["model"].map(lambda m: archs[m.lower()].weight_bytes)
        nearest = others.loc[(np.log(weights / target.weight_bytes)).abs().idxmin(), "model"]
        source = others[others["model"] == nearest]
        factor = archs[nearest.lower()].weight_bytes / target.weight_bytes
    else:
        source = points[
            (points["model"] == model)
            & (points["gpu_count"] == count)
            & (points["gpu_model"] != gpu)
        ]
        if source.empty:
            return None
        other = source["gpu_model"].iloc[0]
        source = source[source["gpu_model"] == other]
        factor = specs[gpu].bandwidth_gb_s / specs[other].bandwidth_gb_s
    scaled = source.copy()
    scaled["request_throughput_rps"] = scaled["request_throughput_rps"] * factor
    scaled["tpot_p99_ms"] = scaled["tpot_p99_ms"] / factor
    scaled["ttft_p99_ms"] = scaled["ttft_p99_ms"] / factor
    return scaled


def nearest_level(source: pd.DataFrame, rate: float) -> dict | None:
    if source is None or source.empty:
        return None
    gaps = (source["offered_rate_rps"] - rate).abs()
    row = source.loc[gaps.idxmin()]
    if abs(row["offered_rate_rps"] - rate) > 0.05 * rate:
        return None
    return measured_of(row.to_dict())


def p99_comparisons(config, kind: str, row: dict, sim: dict, real: dict, near=None) -> list[dict]:
    """A level that kept up: its P99 TPOT and TTFT estimated against measured (and the naive
    baseline's, where it has one); a P99 the level does not know (a TPOT an import left out as
    per streamed chunk, `importers.inference_perf_tokens`) is not compared."""
    return [
        {
            "config": config,
            "kind": kind,
            "metric": metric,
            "rate": row["offered_rate_rps"],
            "error": sim[metric] / real[metric] - 1,
            "naive": None if near is None else near[metric] / real[metric] - 1,
        }
        for metric in ("tpot_p99", "ttft_p99")
        if math.isfinite(real[metric])
    ]


def evaluate(points: pd.DataFrame, method: str = "simulation") -> tuple[list[dict], list[dict]]:
    """Per configuration and hold-out kind: saturation; per level: P99s (module docstring)."""
    archs = bundled_architectures()
    specs = bundled_specs()
    shaped = points[points["model"].str.lower().isin(archs) & points["gpu_model"].isin(specs)]
    configs, levels = [], []
    # each level simulated as it ran: with its prompts in the prefix cache where they were
    cached = cached_shares(shaped, archs, specs)
    for config, rows in shaped.groupby(CONFIG):
        model, gpu, _ = config
        shape = Shape.of(archs[model.lower()])
        for kind in ("own GPU", "other architecture"):
            if kind == "own GPU":
                train, fit_on = shaped[shaped["model"] != model], gpu
            else:
                train = shaped[shaped["gpu_model"] != gpu]
                fit_on = next(iter(sorted(set(train["gpu_model"]))), None)
            fit = fit_gpu(train, archs, specs, fit_on, ENGINE) if fit_on else None
            if fit is None:
                continue
            # borrowed as fleetplan borrows it: moved to this GPU (`fit_for`, `Fit.moved_to`)
            fit = fit.moved_to(specs[fit_on], specs[gpu])
            base = baseline_of(shaped, config, kind, archs, specs)
            predicted, measured, naive = [], [], []
            ordered = rows.sort_values("offered_rate_rps")
            for index, row in zip(ordered.index, ordered.to_dict("records"), strict=True):
                how = simulate_level if method == "simulation" else queue_level
                sim = how(row, shape, fit, cached=float(cached[index]))
                real = measured_of(row)
                near = nearest_level(base, row["offered_rate_rps"])
                predicted.append(sim["throughput"])
                measured.append(real["throughput"])
                naive.append(None if near is None else near["throughput"])
                if real["throughput"] >= KEPT_UP * row["offered_rate_rps"]:
                    levels += p99_comparisons(config, kind, row, sim, real, near)
            worst = max(measured)
            configs.append(
                {
                    "config": config,
                    "kind": kind,
                    "fitted_on": fit.gpu_model,
                    "error": max(predicted) / worst - 1,
                    "naive": None if None in naive else max(naive) / worst - 1,
                }
            )
    return configs, levels


def within(error: float, metric: str) -> bool:
    if metric == "saturation":
        return 1 / AIMS[metric] <= 1 + error <= AIMS[metric]
    return abs(error) <= AIMS[metric]


def summary(configs: list[dict], levels: list[dict]) -> tuple[list[str], dict]:
    lines = [
        "| kind | GPU | metric | n | median abs err | P90 abs err | within aim "
        "| where naive has one: model / naive within aim | band (P10, P90) |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    bands: dict[str, dict] = {}
    frames = {
        "saturation": pd.DataFrame(configs),
        "tpot_p99": pd.DataFrame([x for x in levels if x["metric"] == "tpot_p99"]),
        "ttft_p99": pd.DataFrame([x for x in levels if x["metric"] == "ttft_p99"]),
    }
    for kind in ("own GPU", "other architecture"):
        for metric, frame in frames.items():
            mine = frame[frame["kind"] == kind]
            if mine.empty:
                continue
            gpus = mine["config"].map(lambda c: c[1])
            for gpu in [*sorted(set(gpus)), "all"]:
                part = mine if gpu == "all" else mine[gpus == gpu]
                errors = part["error"].to_numpy(dtype=float)
                hits = sum(within(e, metric) for e in errors)
                has = part["naive"].map(lambda e: e is not None and not pd.isna(e))
                naive = list(part["naive"][has])
                naive_hits = sum(within(e, metric) for e in naive)
                paired = sum(within(e, metric) for e in part["error"][has])
                low, high = np.percentile(errors, [10, 90])
                lines.append(
                    f"| {kind} | {gpu} | {metric} | {len(errors)} | "
                    f"{np.median(np.abs(errors)):.0%} | {np.percentile(np.abs(errors), 90):.0%} | "
                    f"{hits}/{len(errors)} ({hits / len(errors):.0%}) | "
                    f"{paired}/{len(naive)} / {naive_hits}/{len(naive)} | "
                    f"{low:+.0%}, {high:+.0%} |"
                )
                if gpu == "all":
                    bands.setdefault(kind, {})[metric] = [round(low, 3), round(high, 3)]
                    bands[kind][f"{metric}_within_aim"] = round(hits / len(errors), 3)
    return lines, bands


def pool_ml_energy(
    all_bands: dict, same_tpot: dict[str, list[float]], points: pd.DataFrame
) -> None:
    """The ML.ENERGY summaries (`estimate_ml_energy`): their H100 SXM levels' TPOT (median ITL
    at a fixed batch) against the borrowed H100 PCIe fit join the real sweep's in the
    same-architecture TPOT band (the step model answers them directly, for either method).
    Then InferenceX's mixtures of experts (`inferencex_check`)."""
    inferencex_check(points, all_bands)
    from estimate_ml_energy import FOLDER, report

    found = shared_sweep(points, FOLDER, "its levels are not validated")
    if found is None:
        return
    lines, frame = report(*found)
    print(f"\n### {FOLDER}: H100 SXM and B200 (closed loop, fixed batch; the step model)\n")
    print("\n".join(lines))
    h100 = frame[frame["kind"] == "same architecture"]
    ml_errors = list(h100["itl_est"] / h100["itl_ms"] - 1)
    saturation = [
        float(part["tokens_est"].iloc[part["tokens_s"].argmax()] / part["tokens_s"].max() - 1)
        for _, part in h100.groupby("model")
    ]
    print(
        "H100 SXM, each model's highest throughput against its estimate: "
        + ", ".join(f"{e:+.0%}" for e in saturation)
    )
    for method, bands in all_bands.items():
        same = bands.setdefault("same architecture", {})
        errors = np.asarray(same_tpot.get(method, []) + ml_errors, dtype=float)
        low, high = np.percentile(errors, [10, 90])
        same["tpot_p99"] = [round(float(low), 3), round(float(high), 3)]
        same["tpot_p99_within_aim"] = round(float(np.mean(np.abs(errors) <= AIMS["tpot_p99"])), 3)
        same["tpot_p99_levels"] = len(errors)
        same["validated_on"] = (
            f"{REAL}: H100 SXM from the io.net H100 PCIe fit; TPOT also on {FOLDER} "
            f"({len(ml_errors)} H100 SXM levels, median ITL at a fixed batch)"
        )
        same["saturation_check"] = (
            f"{FOLDER}: each H100 SXM model's highest throughput, estimated against measured: "
            + ", ".join(f"{e:+.0%}" for e in saturation)
        )
        if "saturation" not in same:  # no real sweep: the wider band, as with it
            other = bands.get("other architecture", {})
            same["saturation"] = other.get("saturation")
            same["saturation_source"] = "other architecture (no saturation in the real sweeps)"


def shared_sweep(points: pd.DataFrame, folder, missing: str):
    """(the shared tool outputs' root, the io.net H100 PCIe fit) for a check of `folder`;
    None, and says so, where the folder is not beside the checkout."""
    from benchmarks.inputs.shared_data import tool_outputs_dir

    root = tool_outputs_dir()
    if root is None or not (root / folder).is_dir():
        print(f"\n(no {folder} beside the checkout: {missing})")
        return None
    return root, fit_gpu(points, bundled_architectures(), bundled_specs(), "h100-pcie", ENGINE)


def inferencex_check(points: pd.DataFrame, all_bands: dict) -> None:
    """InferenceX's mixtures of experts (`estimate_inferencex`), printed for RESULTS.md:
    gpt-oss-120b (MXFP4) on 4x B200, no band drawn from it (one model, medians of closed loops
    at one prompt length); MiniMax-M2.5 (FP8) on 8x H200, an H200 borrowing the H100 PCIe fit as
    every unmeasured Hopper does: its median TPOT's errors (P10, P90) are the TPOT band of
    "same architecture" mixtures of experts, for either method (the step model answers them
    directly), as ML.ENERGY's median ITL joins the dense one."""
    from estimate_inferencex import FOLDER, MINIMAX, minimax_report, report

    found = shared_sweep(points, FOLDER, "gpt-oss-120b on B200 is not validated")
    if found is not None:
        lines, _ = report(*found)
        print(f"\n### {FOLDER}: gpt-oss-120b (MXFP4 experts) on 4x B200, other architecture\n")
        print("\n".join(lines))
    found = shared_sweep(points, MINIMAX, "MiniMax-M2.5 on H200 is not validated")
    if found is None:
        return
    lines, frame = minimax_report(*found)
    print(f"\n### {MINIMAX}: MiniMax-M2.5 (FP8 experts) on 8x H200, same architecture\n")
    print("\n".join(lines))
    errors = frame["error"].to_numpy(dtype=float)
    low, high = np.percentile(errors, [10, 90])
    for bands in all_bands.values():
        kind = bands.setdefault("same architecture" + MOE, {})
        kind["tpot_p99"] = [round(float(low), 3), round(float(high), 3)]
        kind["tpot_p99_within_aim"] = round(float(np.mean(np.abs(errors) <= AIMS["tpot_p99"])), 3)
        kind["tpot_p99_levels"] = len(errors)
        kind["tpot_source"] = (
            f"{MINIMAX}: MiniMax-M2.5 on 8x H200, median TPOT of closed loops (the H100 PCIe "
            "fit borrowed)"
        )


def experts_bands(real_bands: dict) -> dict:
    """A mixture of experts' own figures of the real sweep (Mixtral's levels; P99 TTFT only),
    which its estimates carry beside the dense bands (`services.estimate.band_for`)."""
    where = f"{REAL}: Mixtral-8x7B on 2x H100 SXM"
    return {
        kind: figures | {"validated_on": f"{where}, {kind.removesuffix(MOE)}"}
        for kind, figures in real_bands.items()
        if kind.endswith(MOE)
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"write sample_data/{BANDS}")
    parser.add_argument("--per-config", action="store_true", help="print every configuration")
    parser.add_argument("--speed", action="store_true", help="time the aims instead")
    parser.add_argument(
        "--queue-vs-simulation",
        action="store_true",
        help="the approximation against the simulation",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    from estimate_checks import (  # the checks beside the hold-out, in a module of their own
        evaluate_real,
        queue_against_simulation,
        real_points,
        real_summary,
        speed,
    )

    if args.speed:
        with (
            tempfile.TemporaryDirectory(prefix="fleetplan-estimate-") as folder,
            Warehouse.open(Path(folder) / "sample.duckdb") as warehouse,
        ):
            list(build(warehouse))
            speed(benchmark_points(warehouse), gpu_catalog(warehouse))
        return 0
    points = sample_points()
    if args.queue_vs_simulation:
        queue_against_simulation(points)
        return 0
    all_bands = {}
    for method in ("simulation", "queue"):
        configs, levels = evaluate(points, method)
        if args.per_config:
            for row in configs:
                print(row)
        lines, bands = summary(configs, levels)
        all_bands[method] = bands
        print(f"\n### {method}\n")
        print("\n".join(lines))
        print(
            f"\n{len(configs)} estimates, {len(levels)} level comparisons, "
            f"{time.perf_counter() - started:.1f} s so far"
        )
    bands = all_bands["simulation"]
    same_tpot: dict[str, list[float]] = {"simulation": [], "queue": []}
    real = real_points()
    if real is None:
        print(f"\n(no {REAL} beside the checkout: the real sweep is not validated)")
    else:
        ionet = points
        for method in ("simulation", "queue"):
            real_levels = evaluate_real(real, ionet, method)
            same_tpot[method] += [
                x["error"]
                for x in real_levels
                if x["kind"] == "same architecture" and x["metric"] == "tpot_p99"
            ]
            lines, real_bands = real_summary(real_levels)
            print(f"\n### {method}, real sweep {REAL} ({len(real)} levels, H100 SXM)\n")
            print("\n".join(lines))
            # the same-architecture band: the io.net H100 PCIe fit borrowed by an H100 SXM
            # (its saturation band: the other-architecture one, the wider, said so)
            same = real_bands.get("same architecture", {})
            if same:
                key = "bands" if method == "simulation" else "queue"
                other = all_bands[method].get("other architecture", {})
                all_bands[method]["same architecture"] = same | {
                    "saturation": other.get("saturation"),
                    "saturation_source": "other architecture (no saturation in the real sweep)",
                    "validated_on": f"{REAL}: H100 SXM from the io.net H100 PCIe fit",
                }
                del key
            all_bands[method] |= experts_bands(real_bands)
    pool_ml_energy(all_bands, same_tpot, points)
    if args.write:
        out = ROOT / "sample_data" / BANDS
        payload = {
            "source": f"benchmarks/estimate.py, {time.strftime('%Y-%m-%d')}: leave-one-out on the "
            "bundled io.net runs (P10 and P90 of predicted / measured - 1)",
            "bands": all_bands["simulation"],
            "queue": all_bands["queue"],
        }
        out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {out}")
    met = all(bands.get("own GPU", {}).get(f"{m}_within_aim", 0) >= AIM_SHARES[m] for m in AIMS)
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
