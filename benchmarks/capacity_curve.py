"""How well the latency-against-load model predicts levels it did not see, on real sweeps.

Sources, each reported apart: the io.net data bundled in sample_data (open-loop, 1-32 req/s,
200 requests per level), and, where the shared data is beside the checkout, the InferenceX
closed-loop concurrency sweeps (`shared/data/tool-outputs/inferencex-*`, read directly: each
file one level; a level sits on the curve at its throughput) and the inference-perf H100 stages
(`inference-sim-training-h100`: one or two stages per experiment, so no interior level to hold
out: they are counted, and test the judgement instead, tests/test_load_judgement.py). The
committed fixtures of the importers (tests/fixtures/formats) hold no series of three levels.

For every series (model, GPU model, GPUs per server, traffic) with at least three load levels,
each interior level is held out in turn (all levels at that rate or concurrency), the rest is
judged as `benchmark_points` would judge it had that level never been measured
(`judged_without`), the curve is fitted on it (`fleetplan.planner.curve.load_curve.fit_curve`), and
the held-out level's P99 TTFT and P99 TPOT are predicted at its rate (its throughput for a
closed-loop level) with the queue form to saturation (`extrapolate=True`). Beside it, in the
same run, the naive baseline: log-linear interpolation of each P99 against the rate between the
neighbouring remaining levels.
"Below saturation" are the held-out levels that did not fall behind (judged with their whole
series) and sit under the saturation the whole series shows: the aim (issue 19) is that the
model predicts at least 80 % of them, and its P99 TTFT is within 25 % for at least 75 % of them.
A model that declines to predict (at or past the saturation the remaining levels show, or no
curve) counts as "no prediction", never as a hit.

Reproduce: `python benchmarks/capacity_curve.py [--within 0.25] [--json OUT]`.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fleetplan.planner.curve.load_curve import fit_curve  # noqa: E402
from fleetplan.warehouse.columns import LOAD_COLUMNS  # noqa: E402
from fleetplan.warehouse.db import Warehouse  # noqa: E402
from fleetplan.warehouse.load import in_context  # noqa: E402
from fleetplan.warehouse.queries import benchmark_points  # noqa: E402
from fleetplan.warehouse.sample_data import build  # noqa: E402

SERIES = ["model", "gpu_model", "gpu_count", "dataset"]
METRICS = ("ttft", "tpot")


def sample_points() -> pd.DataFrame:
    with (
        tempfile.TemporaryDirectory(prefix="fleetplan-capacity-") as folder,
        Warehouse.open(Path(folder) / "sample.duckdb") as warehouse,
    ):
        list(build(warehouse))
        points = benchmark_points(warehouse)
    finite = points["offered_rate_rps"].map(lambda r: r is not None and math.isfinite(r))
    return points[finite & points["complete"]].copy()


def ionet_series() -> list[tuple[str, tuple, pd.DataFrame]]:
    points = sample_points()
    return [
        ("io.net", key, rows)
        for key, rows in points.groupby(SERIES, dropna=False)
        if rows["offered_rate_rps"].nunique() >= 3
    ]


def inferencex_series() -> list[tuple[str, tuple, pd.DataFrame]]:
    """The InferenceX closed-loop sweeps as rows of `benchmark_points`' columns (seconds to ms
    in the token-position files; the together-b200 ones are in ms already)."""
    from benchmarks.inputs.shared_data import tool_outputs_dir

    found = tool_outputs_dir()
    if found is None:
        return []
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for path in sorted(found.glob("inferencex-*/**/*.json")):
        raw = json.loads(path.read_text())
        if "metrics" in raw:  # together-b200
            m = raw["metrics"]
            row = {
                "max_concurrency": raw["conc"],
                "completed": m["successful_requests"],
                "request_throughput_rps": m["request_throughput"],
                "ttft_p99_ms": m["p99_ttft_ms"],
                "tpot_p99_ms": m["p99_tpot_ms"],
            }
            key = (raw["model"], raw["hw"], raw["tp"], f"{raw['isl']}/{raw['osl']}")
        else:  # token-position: seconds, median and p99 only
            row = {
                "max_concurrency": raw["max_concurrency"],
                "completed": raw["completed"],
                "request_throughput_rps": raw["request_throughput"],
                "ttft_p99_ms": raw["p99_ttft"] * 1000,
                "tpot_p99_ms": raw["p99_tpot"] * 1000,
            }
            key = (raw["model_id"], "h200", 8, path.name.rsplit("_conc", 1)[0])
        row |= {
            "offered_rate_rps": None,
            "run_id": path.name,
            "level_index": 0,
            "source_file": path.name,
            "complete": True,
            "failed": 0,
        }
        groups[key].append(row)
    return [
        ("InferenceX (closed loop)", key, pd.DataFrame(rows))
        for key, rows in sorted(groups.items())
        if len(rows) >= 3
    ]


def live_series() -> list[tuple[str, tuple, pd.DataFrame]]:
    """fleetplan's own runs of the real clients against the CPU vLLM server (committed in
    tests/fixtures/real_clients by benchmarks/real_clients.py): each output folder one series
    (rate sweeps 2/4/8/16 req/s asked, concurrency sweeps 1/4/16; 60 requests per level)."""
    from fleetplan.warehouse.importers.base import ImportOptions
    from fleetplan.warehouse.ingest import ingest_paths

    real = ROOT / "tests" / "fixtures" / "real_clients"
    if not (real / "manifest.json").is_file():
        return []
    out = []
    for folder in sorted(path for path in real.iterdir() if (path / "console.txt").is_file()):
        with (
            tempfile.TemporaryDirectory(prefix="fleetplan-capacity-") as work,
            Warehouse.open(Path(work) / "live.duckdb") as warehouse,
        ):
            list(ingest_paths(warehouse, [folder], ImportOptions(gpu="cpu", gpu_count=1)))
            points = benchmark_points(warehouse)
        points = points[points["complete"]]
        closed = pd.to_numeric(points["offered_rate_rps"], errors="coerce").isna()
        for loop, rows in (("rate", points[~closed]), ("concurrency", points[closed])):
            if _key(rows).nunique() >= 3:
                out.append(("live CPU vLLM (real clients)", (folder.name, loop), rows.copy()))
    return out


def inference_perf_stages() -> int:
    from benchmarks.inputs.shared_data import tool_outputs_dir

    found = tool_outputs_dir()
    folder = found / "inference-sim-training-h100" if found else None
    return len(list(folder.glob("*/results/stage_*_lifecycle_metrics.json"))) if folder else 0


def _x(frame: pd.DataFrame) -> pd.Series:
    """Where each level sits on the curve: its offered rate, or a closed loop's throughput."""
    rate = pd.to_numeric(frame["offered_rate_rps"], errors="coerce")
    return rate.fillna(frame["request_throughput_rps"])


def _key(frame: pd.DataFrame) -> pd.Series:
    """What a held-out level is: its rate, or its concurrency."""
    rate = pd.to_numeric(frame["offered_rate_rps"], errors="coerce")
    return rate.fillna(-frame["max_concurrency"].astype(float))


def baseline_at(rest: pd.DataFrame, metric: str, x: float) -> float | None:
    """Log-linear interpolation of the P99 against the rate (medians of repeats)."""
    column = f"{metric}_p99_ms"
    known = rest.assign(_x=_x(rest)).dropna(subset=[column]).groupby("_x")[column].median()
    if known.empty or not known.index.min() <= x <= known.index.max():
        return None
    return float(np.exp(np.interp(x, known.index.to_numpy(), np.log(known.to_numpy()))))


def concurrency_baseline_at(rest: pd.DataFrame, metric: str, concurrency: float) -> float | None:
    """The same interpolation against a closed loop's concurrency (the model's input there)."""
    column = f"{metric}_p99_ms"
    known = rest.dropna(subset=[column]).groupby("max_concurrency")[column].median()
    if known.empty or not known.index.min() <= concurrency <= known.index.max():
        return None
    xs = known.index.to_numpy(dtype=float)
    return float(np.exp(np.interp(concurrency, xs, np.log(known.to_numpy()))))


def judged_without(rest: pd.DataFrame) -> pd.DataFrame:
    """The remaining levels judged as `benchmark_points` would have judged them had the held-out
    level never been measured: 'estimated' judgements again, against the quickest level left
    (`warehouse.load.in_context`); a judgement from a level's own send times ('send times': the
    request log is not stored, and it depends on no other level) stays as stored."""
    if "load_basis" not in rest.columns:
        return rest.drop(columns=list(LOAD_COLUMNS), errors="ignore")
    return in_context(rest)


def evaluate(series: list[tuple[str, tuple, pd.DataFrame]]) -> list[dict]:
    rows = []
    for source, key, frame in series:
        whole = fit_curve(frame)
        judged = {(lv.run_id, lv.level_index): lv for lv in whole.levels}
        keys = sorted(_key(frame).unique(), key=abs)
        for held_key in keys[1:-1]:
            chosen = _key(frame) == held_key
            held, rest = frame[chosen], frame[~chosen]
            rest = judged_without(rest)
            x = float(_x(held).median())
            levels = [
                judged.get((r["run_id"], int(r["level_index"]))) for r in held.to_dict("records")
            ]
            verdicts = {lv.stable for lv in levels if lv}
            kind = (
                "kept up"
                if verdicts == {True}
                else "fell behind"
                if False in verdicts
                else "cannot tell"
            )
            below = kind != "fell behind" and (
                whole.saturation_rps is None or x < whole.saturation_rps
            )
            curve = fit_curve(rest)
            concurrency = held["max_concurrency"].median() if held_key < 0 else None
            prediction = (
                curve.predict(x, extrapolate=True)
                if concurrency is None
                else curve.predict_closed_loop(float(concurrency))
            )
            for metric in METRICS:
                truth = held[f"{metric}_p99_ms"].median()
                if not truth or math.isnan(truth):
                    continue
                model = None if prediction is None else getattr(prediction, f"{metric}_p99_ms")
                rows.append(
                    {
                        "source": source,
                        "series": "/".join(map(str, key)),
                        "x": x,
                        "kind": kind,
                        "below saturation": below,
                        # a closed-loop level on its sweep's throughput plateau: saturated
                        "on the plateau": concurrency is not None and kind == "cannot tell",
                        "metric": f"P99 {metric.upper()}",
                        "model": _error(model, truth),
                        "baseline": _error(baseline_at(rest, metric, x), truth),
                        "baseline, concurrency": _error(
                            baseline_at(rest, metric, x)
                            if concurrency is None
                            else concurrency_baseline_at(rest, metric, float(concurrency)),
                            truth,
                        ),
                    }
                )
    return rows


def _error(value: float | None, truth: float) -> float | None:
    return None if value is None else value / truth - 1


def summarise(rows: list[dict], within: float) -> pd.DataFrame:
    table = defaultdict(list)
    for row in rows:
        scope = "below saturation" if row["below saturation"] else "at or past it"
        for source in (row["source"], "all sources"):
            table[(row["metric"], source, scope)].append(row)
            table[(row["metric"], source, "all levels")].append(row)
            if row["below saturation"] and not row["on the plateau"]:
                table[(row["metric"], source, "below saturation, off the plateau")].append(row)
    out = []
    for (metric, source, scope), members in sorted(table.items()):
        entry = {"metric": metric, "source": source, "levels": scope, "n": len(members)}
        for name in ("model", "baseline", "baseline, concurrency"):
            errors = np.array([m[name] for m in members if m[name] is not None], dtype=float)
            hits = int(np.sum(np.abs(errors) <= within))
            entry[f"{name} predicted"] = len(errors) / len(members)
            entry[f"{name} hits/all"] = hits / len(members)
            entry[f"{name} median |err|"] = (
                float(np.median(np.abs(errors))) if len(errors) else None
            )
        out.append(entry)
    return pd.DataFrame(out)


def _percent(value: float | None) -> str:
    return "-" if value is None or value != value else f"{value:.0%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--within", type=float, default=0.25, help="relative error counted a hit")
    parser.add_argument("--json", metavar="OUT", help="write every held-out case as JSON")
    args = parser.parse_args()
    rows = evaluate(ionet_series() + inferencex_series() + live_series())
    table = summarise(rows, args.within)
    shown = table.copy()
    for column in shown.columns:
        if "hits" in column or "|err|" in column or "predicted" in column:
            shown[column] = shown[column].map(_percent)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(shown.to_string(index=False))
    print(
        f"inference-perf H100 stages: {inference_perf_stages()} (one or two per experiment: no "
        "interior level to hold out); tests/fixtures/formats: no series of three levels"
    )
    if args.json:
        Path(args.json).write_text(json.dumps({"cases": rows}, indent=1))


if __name__ == "__main__":
    main()
