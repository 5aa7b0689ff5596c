"""The saturation the queue form runs to is the lowest rate a level fell behind at, not the most
a burst completed (planner/curve/levels.py, `saturation_of`): on a live ladder of fleetplan's own
collector (tests/fixtures/live/README.md, `knee-ladder/`) whose burst completed 8.15 req/s while
a minute at 3.92 req/s fell behind, and where 400 requests at 5.64 req/s then measured P99 TTFT
831 and 1,552 ms against the 466 ms the queue form to 8.15 req/s had predicted."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fleetplan.core.contract import RunFile
from fleetplan.core.spread import judge_runs
from fleetplan.planner.curve.levels import CurveLevel, saturation_of
from fleetplan.planner.curve.load_curve import fit_curve
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.importers.base import ImportOptions
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.queries import benchmark_points
from tests.support.paths import ROOT

KNEE = ROOT / "tests" / "fixtures" / "live" / "knee-ladder"


@pytest.fixture(scope="module")
def frame(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    path: Path = tmp_path_factory.mktemp("knee") / "w.duckdb"
    with Warehouse.open(path) as warehouse:
        ladder = sorted(KNEE.glob("ladder-*.json"))
        list(ingest_paths(warehouse, ladder, ImportOptions(gpu="cpu", gpu_count=1)))
        return benchmark_points(warehouse)


def test_the_queue_form_runs_to_the_rate_a_level_fell_behind_at(frame):
    judged = {round(row["offered_rate_rps"], 2): row for row in frame.to_dict("records")}
    assert judged[3.92]["stable"] is False and judged[7.88]["stable"] is False
    assert judged[15.69]["stable"] is None and judged[15.69]["sustained_rps"] > 8  # the burst
    curve = fit_curve(frame)
    assert curve.saturation_rps == pytest.approx(judged[3.92]["sustained_rps"])
    assert "fell behind at 3.92 req/s offered" in curve.saturation_basis
    assert "at least the 8.15 req/s" in curve.saturation_basis  # what it set aside, said
    # the model says nothing past the knee, where it had predicted 466 ms at 5.64 req/s
    assert curve.predict(5.64, extrapolate=True) is None
    estimate = curve.capacity(target_ttft_p99_ms=583, target_tpot_p99_ms=None, extrapolate=True)
    assert 1.98 < estimate.capacity_rps < 3.75  # was 6.61 req/s


def test_what_the_server_measured_past_the_knee_misses_what_it_was_promised(frame):
    runs = [
        RunFile.model_validate_json(path.read_bytes()).runs[0].points[0]
        for path in sorted(KNEE.glob("check-5.6418-*.json"))
    ]
    ttfts = [[1000 * p.requests.ttft_s[i] for i in p.requests.succeeded] for p in runs]
    judged = judge_runs(ttfts, 583.0, min_runs=2)
    assert judged.decision == "misses" and judged.runs == 2
    assert [round(p.ttft_p99_ms) for p in runs] == [831, 1552]


def _level(rate: float, stable: bool | None, sustained: float, p99: float = 0) -> CurveLevel:
    return CurveLevel(
        run_id="r", level_index=0, source_file="f.json", offered_rps=rate,
        sustained_rps=sustained, stable=stable, ttft_p99_ms=p99 or 100.0 * rate,
        tpot_p99_ms=10.0, load_reason="",
    )  # fmt: skip


def test_only_a_fall_above_every_kept_up_rate_lowers_the_saturation():
    burst = _level(16.0, None, 8.0)
    # a fall at 4 req/s with 8 kept up above it: a stall, not the knee (the live vLLM bench
    # sweep, 60-request levels); the burst's 8 stays
    saturation, words = saturation_of([_level(4.0, False, 3.7), burst], [2.0, 8.0])
    assert saturation == 8.0 and "fell behind" not in words
    saturation, words = saturation_of([_level(4.0, False, 3.7), burst], [2.0])
    assert saturation == 3.7 and words.startswith("the 3.7 req/s a level that fell behind at 4")
    # the lowest rate it fell behind at counts, not the level that sustained least
    falls = [_level(6.0, False, 3.5), _level(4.0, False, 3.9), burst]
    assert saturation_of(falls, [2.0])[0] == 3.9
    # a burst alone: the most it completed, as before
    saturation, words = saturation_of([burst], [2.0])
    assert saturation == 8.0 and words.startswith("at least the 8 req/s")


def test_a_fall_with_no_level_kept_up_or_a_quicker_level_above_is_a_stall():
    # io.net, DeepSeek-8B on four 4090s: 1 req/s fell behind at 24.5 s P99 TTFT (a cold start),
    # 8 req/s then measured 871 ms and a burst completed 8.69 req/s; nothing kept up
    burst = _level(16.0, None, 8.69, p99=833.0)
    stall = _level(1.0, False, 1.0, p99=24_487.0)
    assert saturation_of([stall, _level(8.0, None, 6.83, p99=871.0), burst], [])[0] == 8.69
    # with a level kept up below it, a quicker level above still marks the fall a stall
    assert saturation_of([stall, burst], [0.5])[0] == 8.69
