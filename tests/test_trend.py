"""A growing queue is a rising trend through the level, not a difference between its ends
(fleetplan/core/load.py, `core.stats.trend_z`): on a live ladder of fleetplan's own collector
(tests/fixtures/live/README.md) whose capacity, interpolated before over a level misjudged on
its thirds alone, did not hold for longer runs of the same server."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau

from fleetplan.core.contract import RequestLog, RunFile
from fleetplan.core.load import judge_level, judge_point
from fleetplan.core.stats import trend_z
from fleetplan.planner.curve.load_curve import fit_curve
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.importers.base import ImportOptions
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.queries import benchmark_points
from tests.support.paths import ROOT

LADDER = ROOT / "tests" / "fixtures" / "live" / "ladder-256-16-cpu-quiet.json"


def _points():
    return RunFile.model_validate_json(LADDER.read_bytes()).runs[0].points


def test_trend_z_is_mann_kendall_as_scipy_computes_it():
    rng = np.random.default_rng(7)
    for n, slope in ((5, 0.0), (120, 0.3), (2501, 0.05)):
        x = rng.normal(size=n) + slope * np.linspace(0, 1, n)
        tau, _ = kendalltau(np.arange(n), x)
        sd = math.sqrt(2 * (2 * n + 5) / (9 * n * (n - 1)))
        assert trend_z(x) == pytest.approx(tau / sd, rel=1e-9)
    assert trend_z([1.0, 2.0]) == 0.0
    assert trend_z(np.arange(300.0)) > 20 and trend_z(np.arange(300.0)[::-1]) < -20


def test_late_requests_slower_without_a_trend_kept_up():
    """3.57 req/s: the last third's median request 1.62x the first's (412, 482, 665 ms) but no
    rising trend through the level (z +1.3): noise on a shared server, and 400 requests at 3.8
    req/s on it then kept up. It was "fell behind" on the thirds alone."""
    level = next(p for p in _points() if p.offered_rate_rps == pytest.approx(3.59, abs=0.01))
    load = judge_point(level)
    assert load.stable is True, load.reason
    assert "1.62x as long (trend z +1.3)" in load.reason


def test_a_growing_queue_still_falls_behind():
    """Requests whose time grows with their arrival, steadily: a queue building."""
    n = 200
    starts = np.arange(n) / 4.0  # 4 req/s for 50 s
    e2el = 0.5 + 0.02 * np.arange(n)  # each waits 20 ms more than the one before
    log = RequestLog(
        start_s=starts.tolist(),
        ttft_s=(e2el / 4).tolist(),
        e2el_s=e2el.tolist(),
        itl_s=[()] * n,
        input_tokens=[256] * n,
        output_tokens=[16] * n,
        error=[""] * n,
    )
    load = judge_level(offered_rate_rps=4.0, completed=n, duration_s=54.5, requests=log)
    assert load.stable is False and load.reason.startswith("fell behind"), load.reason
    assert "trend z +" in load.reason


def test_the_live_ladder_is_interpolated_through_the_level_that_kept_up(tmp_path: Path):
    """Before: 3.57 req/s "fell behind" on its thirds, left out of the curve, and the capacity
    for a 577 ms P99 TTFT was interpolated between 1.81 and 7.34 req/s to 5.64 req/s, where 400
    requests then measured 1,027 ms at 4.79 req/s. Now the curve runs through 3.57 req/s (588
    ms) and the capacity stays under it."""
    with Warehouse.open(tmp_path / "w.duckdb") as warehouse:
        list(ingest_paths(warehouse, [LADDER], ImportOptions(gpu="cpu", gpu_count=1)))
        frame = benchmark_points(warehouse)
    judged = {round(row["offered_rate_rps"], 2): row for row in frame.to_dict("records")}
    assert judged[3.57]["stable"] is True and judged[3.57]["load_basis"] == "send times"
    curve = fit_curve(frame)
    assert 3.57 in [round(rate, 2) for rate in curve.stable_rates]
    estimate = curve.capacity(target_ttft_p99_ms=577, target_tpot_p99_ms=None)
    assert 3.0 < estimate.capacity_rps < 3.57


def test_trend_z_of_a_long_level_is_taken_on_evenly_spaced_values():
    from fleetplan.core.stats import TREND_VALUES

    x = np.random.default_rng(3).normal(size=100_000) + np.linspace(0, 1, 100_000)
    spaced = x[np.linspace(0, x.size - 1, TREND_VALUES).astype(int)]
    assert trend_z(x) == pytest.approx(trend_z(spaced)) and trend_z(x) > 10
