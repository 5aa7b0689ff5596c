"""Levels a reader should question, each with its reason in words, for the Benchmarks page's
charts and table. Latency does not fall as load rises, so two kinds of level measured something
other than load (a cold start, a hiccup):

- a level whose P99 is over twice every P99 at the higher rates the configuration kept up with
  (the latency model's own rule, `fleetplan.planner.curve.load_curve.outliers`, on the same levels);
- a level that fell behind at a lower rate than one the configuration kept up with (e.g. a 15 s
  P99 TTFT at 1 req/s on an 8x RTX 4090 server that kept up at 4 and 8 req/s).

The latency curve sets both aside: it runs through the levels that kept up, leaving out the first
kind, and its saturation rate is never below a rate the server kept up with.

Given the GPU catalog, a third kind: a level claiming more than its server can physically carry
(more requests/s than its KV cache holds by Little's law, or more output tokens/s than decode
bandwidth allows: `fleetplan.services.envelope`), never silently trusted.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import pandas as pd

from fleetplan.planner.curve.levels import OUTLIER_FACTOR, CurveLevel, outliers
from fleetplan.planner.curve.load_curve import fit_curve
from fleetplan.services.envelope import envelope_reasons

LevelKey = tuple[str, int]  # (run_id, level_index)
_NAMES = {"ttft": "P99 TTFT", "tpot": "P99 TPOT"}
# What makes one curve: a configuration (a server: its GPUs and how it serves the model), one
# traffic shape, one kind of source.
GROUP_COLUMNS = ("model", "gpu_model", "gpu_count", "dataset", "input_len", "output_len")
SERVER_COLUMNS = ("engine", "engine_version", "dtype", "tensor_parallel_size", "variant")


def _reasons_for_metric(levels: Sequence[CurveLevel], metric: str) -> dict[LevelKey, str]:
    stable = [lv for lv in levels if lv.stable and getattr(lv, f"{metric}_p99_ms")]
    rates = sorted({lv.offered_rps for lv in stable})
    values = [
        statistics.median(
            getattr(lv, f"{metric}_p99_ms") for lv in stable if lv.offered_rps == rate
        )
        for rate in rates
    ]
    found = {}
    for i in outliers(values):
        higher = max(values[i + 1 :])
        for level in (lv for lv in stable if lv.offered_rps == rates[i]):
            found[(level.run_id, level.level_index)] = (
                f"{_NAMES[metric]} {values[i]:,.0f} ms at {rates[i]:g} req/s is over "
                f"{OUTLIER_FACTOR:g}x every P99 at the higher rates this configuration kept up "
                f"with (at most {higher:,.0f} ms): latency does not fall as load rises, so this "
                "level probably measured a cold start or a hiccup; the latency curve leaves it out"
            )
    return found


def _fell_behind_too_early(levels: Sequence[CurveLevel]) -> dict[LevelKey, str]:
    kept_up = sorted({lv.offered_rps for lv in levels if lv.stable})
    found = {}
    for level in levels:
        higher = [rate for rate in kept_up if rate > level.offered_rps]
        if level.stable is False and higher:
            ttft = f" (P99 TTFT {level.ttft_p99_ms:,.0f} ms)" if level.ttft_p99_ms else ""
            found[(level.run_id, level.level_index)] = (
                f"fell behind at {level.offered_rps:g} req/s{ttft} although the same "
                f"configuration kept up at {', '.join(f'{r:g}' for r in higher)} req/s: a "
                "server does not fall behind at a lower load than one it kept up with, so this "
                "level probably measured a cold start or a hiccup; the latency curve rests on the "
                "levels that kept up"
            )
    return found


def level_outliers(levels: Sequence[CurveLevel]) -> dict[LevelKey, str]:
    """The outlying levels of one curve's levels (`LoadCurve.levels`), each with its reason;
    one reason per level (TTFT before TPOT)."""
    return (
        _fell_behind_too_early(levels)
        | _reasons_for_metric(levels, "tpot")
        | _reasons_for_metric(levels, "ttft")
    )


def outlier_reasons(points: pd.DataFrame, catalog: pd.DataFrame | None = None) -> pd.Series:
    """For each point (rows of `benchmark_points`), why a reader should question it, or None.
    Points are judged within their configuration, traffic shape and kind of source (when the
    frame has `source_kind`), as the latency curve judges them; with the GPU catalog, against
    their server's physical bounds too (that reason first)."""
    reasons = pd.Series(None, index=points.index, dtype=object)
    if points.empty:
        return reasons
    if catalog is not None:
        reasons = envelope_reasons(points, catalog)
    servers = [c for c in SERVER_COLUMNS if c in points.columns]
    extra = ["source_kind"] if "source_kind" in points.columns else []
    keys = [*GROUP_COLUMNS, *servers, *extra]
    for _, rows in points.groupby(keys, dropna=False, sort=False):
        found = level_outliers(fit_curve(rows).levels)
        if not found:
            continue
        for index, run_id, level_index in zip(
            rows.index, rows["run_id"], rows["level_index"], strict=True
        ):
            if pd.isna(reasons[index]):
                reasons[index] = found.get((str(run_id), int(level_index)))
    return reasons
