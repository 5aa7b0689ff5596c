"""How well the latency-against-load model predicts levels it did not see, on the io.net data.

For every series (model, GPU model, GPUs per server, dataset) with at least four load levels,
each interior rate is held out in turn (all levels at that rate), the curve is fitted on the rest
(`fleetplan.planner.load_model.fit_curve`), and the held-out level's P99 TTFT, P99 TPOT and
sustained rate are predicted at its offered rate. Beside it, in the same run, the naive baseline:
log-linear interpolation of each P99 against the offered rate between the neighbouring levels
(every remaining level, kept up or not). Levels are reported apart by what the held-out level was
(judged with its whole series): kept up, fell behind, or a burst too short to tell. A model that
declines to predict (above the highest level it saw kept up, or too few stable levels) counts as
"no prediction", never as a hit.

The model declines to predict above the highest rate the remaining levels show the server kept
up with: the table gives how many it predicted, the hits among those, and the hits among all.

Reproduce: `python benchmarks/capacity_model.py [--within 0.25] [--json OUT]`.
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

from fleetplan.core.load import judge_row, reference_of  # noqa: E402
from fleetplan.planner.load_model import fit_curve  # noqa: E402
from fleetplan.warehouse.columns import LOAD_COLUMNS  # noqa: E402
from fleetplan.warehouse.db import Warehouse  # noqa: E402
from fleetplan.warehouse.queries import benchmark_points  # noqa: E402
from fleetplan.warehouse.sample_data import build  # noqa: E402

SERIES = ["model", "gpu_model", "gpu_count", "dataset"]
MIN_LEVELS = 4
METRICS = ("ttft", "tpot")


def sample_points() -> pd.DataFrame:
    path = Path(tempfile.mkdtemp(prefix="fleetplan-capacity-")) / "sample.duckdb"
    with Warehouse.open(path) as warehouse:
        list(build(warehouse))
        points = benchmark_points(warehouse)
    finite = points["offered_rate_rps"].map(lambda r: r is not None and math.isfinite(r))
    return points[finite & points["complete"]].copy()


def baseline(rest: pd.DataFrame, metric: str, rate: float) -> float | None:
    """Log-linear interpolation of the P99 against the offered rate (medians of repeats)."""
    column = f"{metric}_p99_ms"
    known = rest.dropna(subset=[column]).groupby("offered_rate_rps")[column].median()
    if known.empty or not known.index.min() <= rate <= known.index.max():
        return None
    return float(np.exp(np.interp(rate, known.index.to_numpy(), np.log(known.to_numpy()))))


def judged_class(level: pd.DataFrame, series: pd.DataFrame) -> str:
    reference = reference_of(series.to_dict("records"))
    verdicts = {judge_row(row, reference=reference).stable for row in level.to_dict("records")}
    if verdicts == {True}:
        return "kept up"
    if False in verdicts:
        return "fell behind"
    return "burst"


def held_out_cases(points: pd.DataFrame):
    """(series key, held-out rows, remaining rows) for each interior rate of each series."""
    for key, series in points.groupby(SERIES, dropna=False):
        rates = sorted(series["offered_rate_rps"].unique())
        if len(series) < MIN_LEVELS or len(rates) < 3:
            continue
        for rate in rates[1:-1]:
            held = series[series["offered_rate_rps"] == rate]
            rest = series[series["offered_rate_rps"] != rate]
            # judged again without the held-out level (it may be the quickest, the reference)
            yield key, series, held, rest.drop(columns=list(LOAD_COLUMNS), errors="ignore")


def sustained_truth(held: pd.DataFrame, series: pd.DataFrame) -> float | None:
    reference = reference_of(series.to_dict("records"))
    values = [judge_row(r, reference=reference).sustained_rps for r in held.to_dict("records")]
    values = [v for v in values if v]
    return float(np.median(values)) if values else None


def predicted_sustained(curve, rate: float) -> float | None:
    if curve.problem:
        return None
    top = curve.highest_stable_rps
    if rate <= top:
        return rate
    if curve.saturation_rps is not None:
        return min(rate, curve.saturation_rps)
    return None


def evaluate(points: pd.DataFrame) -> list[dict]:
    rows = []
    for key, series, held, rest in held_out_cases(points):
        curve = fit_curve(rest)
        rate = float(held["offered_rate_rps"].iloc[0])
        kind = judged_class(held, series)
        prediction = curve.predict(rate)
        for metric in METRICS:
            truth = held[f"{metric}_p99_ms"].median()
            if not truth or math.isnan(truth):
                continue
            model = None if prediction is None else getattr(prediction, f"{metric}_p99_ms")
            rows.append(
                {
                    "gpu": key[1],
                    "series": "/".join(map(str, key)),
                    "rate": rate,
                    "kind": kind,
                    "metric": f"P99 {metric.upper()}",
                    "model": None if model is None else model / truth - 1,
                    "baseline": _error(baseline(rest, metric, rate), truth),
                }
            )
        truth = sustained_truth(held, series)
        if truth:
            rows.append(
                {
                    "gpu": key[1],
                    "series": "/".join(map(str, key)),
                    "rate": rate,
                    "kind": kind,
                    "metric": "sustained",
                    "model": _error(predicted_sustained(curve, rate), truth),
                    "baseline": _error(float(held["request_throughput_rps"].median()), truth),
                }
            )
    return rows


def _error(value: float | None, truth: float) -> float | None:
    return None if value is None else value / truth - 1


def summarise(rows: list[dict], within: float) -> pd.DataFrame:
    table = defaultdict(list)
    for row in rows:
        for group in ((row["gpu"], row["kind"]), ("all GPUs", row["kind"]), ("all GPUs", "all")):
            table[(row["metric"], *group)].append(row)
    out = []
    for (metric, gpu, kind), members in sorted(table.items()):
        entry = {"metric": metric, "gpu": gpu, "levels": kind, "n": len(members)}
        for name in ("model", "baseline"):
            errors = np.array([m[name] for m in members if m[name] is not None], dtype=float)
            hits = int(np.sum(np.abs(errors) <= within))
            if name == "model":
                entry["predicted"] = f"{len(errors)}/{len(members)}"
                entry["hits/predicted"] = hits / len(errors) if len(errors) else None
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
    rows = evaluate(sample_points())
    table = summarise(rows, args.within)
    shown = table.copy()
    for column in shown.columns:
        if "hits" in column or "|err|" in column:
            shown[column] = shown[column].map(_percent)
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(shown.to_string(index=False))
    if args.json:
        Path(args.json).write_text(json.dumps({"cases": rows}, indent=1))


if __name__ == "__main__":
    main()
