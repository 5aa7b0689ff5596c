"""The load columns of the warehouse (sustained rate, stability, basis, reason): the migration that
adds them to an old warehouse, the judgement at ingest (send times for fleetplan's own runs), the
re-judgement of estimates in their configuration's context, and what `fleetplan benchmarks`
prints."""

from __future__ import annotations

import json
import math

import duckdb
import numpy as np
import pandas as pd
import pytest

from fleetplan.core.contract import RUN_FILE_FORMAT, Point, RequestLog, Run, RunFile
from fleetplan.core.load import LoadBasis
from fleetplan.planner.curve.load_curve import fit_curve
from fleetplan.services.benchmark_tables import points_table
from fleetplan.warehouse import migrations
from fleetplan.warehouse.columns import CANONICAL_COLUMNS, LOAD_COLUMNS
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.load import GROUP_COLUMNS
from fleetplan.warehouse.migrations import MIGRATIONS
from fleetplan.warehouse.preview import FileStatus
from fleetplan.warehouse.queries import benchmark_points

QWEN = "DeepSeek-R1-Distill-Qwen-14B"
BEFORE = "003_point_telemetry"  # the last migration before the load columns
# Point columns later migrations added (004's load columns, 007's configured rate and notes)
LATER_COLUMNS = (*LOAD_COLUMNS, "configured_rate_rps", "notes")
STORED = f"SELECT run_id, level_index, {', '.join(LOAD_COLUMNS)} FROM points ORDER BY ALL"  # noqa: S608


def point_columns(path) -> set[str]:
    with duckdb.connect(str(path), read_only=True) as raw:
        rows = raw.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'points'"
        ).fetchall()
    return {name for (name,) in rows}


def old_copy(sample_path, old_path) -> None:
    """A warehouse as fleetplan wrote it before the load columns, holding the sample's rows."""
    with Warehouse.open(old_path, migrate=False) as wh:
        wh.migrate(upto=BEFORE)
    with duckdb.connect(str(old_path)) as raw:
        raw.execute(f"ATTACH '{sample_path}' AS sample (READ_ONLY)")
        raw.execute("INSERT INTO sources SELECT * FROM sample.sources")
        # as before 005 (no content key) and 008 (no variant)
        raw.execute("INSERT INTO runs SELECT * EXCLUDE (run_key, variant) FROM sample.runs")
        raw.execute(
            f"INSERT INTO points BY NAME SELECT * EXCLUDE ({', '.join(LATER_COLUMNS)}) "  # noqa: S608
            "FROM sample.points"
        )


# -- the migration ------------------------------------------------------------------------------


def test_an_old_warehouse_is_judged_once_as_an_ingest_would(sample_warehouse_path, tmp_path):
    old = tmp_path / "old.duckdb"
    old_copy(sample_warehouse_path, old)
    assert not set(LOAD_COLUMNS) & point_columns(old)
    with Warehouse.open(old) as wh:
        assert wh.applied_migrations()[-1] == MIGRATIONS[-1][0]
        migrated = wh.cursor().execute(STORED).fetchall()
    with Warehouse.open(sample_warehouse_path, read_only=True) as wh:
        ingested = wh.cursor().execute(STORED).fetchall()
    assert len(migrated) == 130 and migrated == ingested  # the same judgement as an ingest today
    assert {row[4] for row in migrated} == {"estimated"}  # no request log was ever stored
    assert {row[3] for row in migrated} == {True, False, None}
    # opened again, nothing is judged again (a value changed by hand stays)
    with Warehouse.open(old) as wh:
        wh.cursor().execute("UPDATE points SET load_reason = 'by hand' WHERE level_index = 0")
    with Warehouse.open(old) as wh:
        assert wh.migrate() == []
        reasons = wh.cursor().execute(
            "SELECT DISTINCT load_reason FROM points WHERE level_index = 0"
        )
        assert reasons.fetchall() == [("by hand",)]


def test_a_failed_backfill_leaves_the_old_warehouse_as_it_was(
    sample_warehouse_path, tmp_path, monkeypatch
):
    old = tmp_path / "old.duckdb"
    old_copy(sample_warehouse_path, old)

    def broken(con):
        raise RuntimeError("disk full")

    monkeypatch.setattr(migrations, "backfill", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        Warehouse.open(old)
    assert not set(LOAD_COLUMNS) & point_columns(old)  # the ALTERs went back with the backfill
    monkeypatch.undo()
    with Warehouse.open(old) as wh:
        assert "004_point_load" in wh.applied_migrations()
        assert wh.cursor().execute("SELECT count(load_basis) FROM points").fetchone() == (130,)


# -- synthetic runs -----------------------------------------------------------------------------


def statistics_point(
    rate: float, e2el_s: float, *, n: int = 200, drain_s: float = 1.0, ttft_ms: float = 50.0
) -> Point:
    """A level known by its statistics only: arrivals over (n - 1) / rate, then a drain."""
    duration = (n - 1) / rate + drain_s
    return Point(
        offered_rate_rps=rate,
        completed=n,
        failed=0,
        duration_s=duration,
        request_throughput_rps=n / duration,
        ttft_p50_ms=ttft_ms,
        ttft_p99_ms=ttft_ms * 1.6,
        e2el_p50_ms=e2el_s * 1000,
        e2el_p99_ms=e2el_s * 1500,
        output_tokens_mean=100.0,
    )


def logged_point(rate: float, e2el_s: float, *, n: int = 200, seed: int = 0) -> Point:
    """A level of fleetplan's own: Poisson arrivals with their send times, each request e2el_s."""
    gaps = np.random.default_rng(seed).exponential(1 / rate, n)
    starts = np.cumsum(gaps) - gaps[0]
    log = RequestLog(
        start_s=tuple(float(s) for s in starts),
        ttft_s=tuple(0.05 for _ in range(n)),
        e2el_s=tuple(e2el_s for _ in range(n)),
        itl_s=tuple(() for _ in range(n)),
        input_tokens=tuple(16 for _ in range(n)),
        output_tokens=tuple(1 for _ in range(n)),
        error=tuple("" for _ in range(n)),
    )
    return Point(
        offered_rate_rps=rate,
        completed=n,
        failed=0,
        duration_s=float(starts[-1]) + e2el_s,
        ttft_p50_ms=50.0,
        ttft_p99_ms=50.0,
        e2el_p50_ms=e2el_s * 1000,
        e2el_p99_ms=e2el_s * 1000,
        output_tokens_mean=1.0,
        requests=log,
    )


def run_file(path, *points: Point, dataset: str = "chat", gpu_count: int = 1):
    run = Run(
        tool="fleetplan collect",
        model="test/model",
        gpu_model="rtx-4090",
        gpu_count=gpu_count,
        dataset=dataset,
        points=points,
    )
    path.write_text(
        RunFile(format=RUN_FILE_FORMAT, format_version=1, runs=(run,)).model_dump_json()
    )
    return path


def ingest(warehouse_path, *paths) -> None:
    with Warehouse.open(warehouse_path) as wh:
        outcomes = list(ingest_paths(wh, paths))
    assert all(o.status is FileStatus.IMPORTED for o in outcomes), outcomes


def table(warehouse_path, **filters) -> pd.DataFrame:
    with Warehouse.open(warehouse_path, read_only=True) as wh:
        return benchmark_points(wh, **filters)


def stored(warehouse_path) -> pd.DataFrame:
    with Warehouse.open(warehouse_path, read_only=True) as wh:
        return wh.cursor().execute(STORED).df()


# -- ingest -------------------------------------------------------------------------------------


def test_a_fleetplan_run_with_send_times_is_judged_on_them(warehouse_path, tmp_path):
    ingest(warehouse_path, run_file(tmp_path / "run.json", logged_point(4.0, 0.5)))
    (row,) = stored(warehouse_path).to_dict("records")
    assert row["load_basis"] == LoadBasis.SEND_TIMES == "send times"
    assert row["stable"] is True and row["load_reason"].startswith("kept up")
    assert row["sustained_rps"] == pytest.approx(4.0, rel=0.15)
    assert not {"requests", "start_s"} & point_columns(warehouse_path)  # the log is not stored


def test_a_run_collected_from_a_streaming_server_stores_send_times(cli, stream_server, tmp_path):
    url = stream_server(ttft_ms=20, tpot_ms=2)
    warehouse = tmp_path / "wh.duckdb"
    done = cli(
        "collect", "--backend", "openai", "--base-url", url, "--model", "stream-test",
        "--out", tmp_path / "runs", "--gpu", "rtx-4090", "--input-len", 16, "--output-len", 8,
        "--rates", "8", "--num-requests", 40, "--ingest", "--warehouse", warehouse, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (row,) = table(warehouse).to_dict("records")
    assert row["load_basis"] == "send times" and row["stable"] is True, row["load_reason"]
    (path,) = (tmp_path / "runs").glob("*.json")
    (point,) = RunFile.model_validate_json(path.read_bytes()).runs[0].points
    starts = point.requests.start_s
    arriving = (len(starts) - 1) / (max(starts) - min(starts))  # the rate the arrivals came at
    assert row["sustained_rps"] == pytest.approx(arriving, rel=0.1)
    # the measured figure stays what it was: completed over the level's wall time
    assert row["request_throughput_rps"] == pytest.approx(40 / row["duration_s"])


# -- the table: estimates in context, send times as stored ---------------------------------------


def test_an_estimate_is_judged_against_its_configurations_quickest_level(warehouse_path, tmp_path):
    # Alone, a level whose requests wait 2 s for their first token of 5 s looks kept up (its wall
    # time is its arrivals and a short drain); beside the same configuration's level with a 50 ms
    # TTFT, from another file, the wait is a queue: it fell behind.
    ingest(
        warehouse_path, run_file(tmp_path / "loaded.json", statistics_point(2.0, 5.0, ttft_ms=2000))
    )
    alone = table(warehouse_path).iloc[0]
    assert alone["stable"] and alone["sustained_rps"] == 2.0
    ingest(warehouse_path, run_file(tmp_path / "quick.json", statistics_point(0.5, 1.0)))
    points = table(warehouse_path).set_index("offered_rate_rps")
    loaded = points.loc[2.0]
    assert bool(loaded["stable"]) is False  # and not unknown: bool(NA) raises
    assert "waited in line" in loaded["load_reason"] and loaded["load_basis"] == "estimated"
    # the rate it proves (200 requests, the first done no sooner than 1 s in), at most the offered
    assert loaded["sustained_rps"] == min(2.0, 200 / (loaded["duration_s"] - 1.0))
    # what was stored at ingest is left as it was: the context is applied when read
    kept = stored(warehouse_path).set_index("level_index")
    assert kept["stable"].tolist() == [True, True]


def test_slower_requests_under_load_that_kept_pace_kept_up(warehouse_path, tmp_path):
    # Requests five times as long as at the quickest level, without waiting in line, and the
    # completions kept pace: decode slowed under a bigger batch, which is load, not a backlog.
    ingest(
        warehouse_path,
        run_file(tmp_path / "loaded.json", statistics_point(2.0, 5.0, n=2000)),
        run_file(tmp_path / "quick.json", statistics_point(0.5, 1.0)),
    )
    loaded = table(warehouse_path).set_index("offered_rate_rps").loc[2.0]
    assert loaded["stable"] and loaded["load_reason"].startswith("kept up"), loaded["load_reason"]


def test_other_traffic_shapes_and_configurations_are_not_the_context(warehouse_path, tmp_path):
    ingest(
        warehouse_path,
        run_file(tmp_path / "a.json", statistics_point(0.5, 3.0), statistics_point(2.0, 5.0)),
    )
    before = table(warehouse_path)[list(LOAD_COLUMNS)]
    assert before["stable"].tolist() == [True, True]  # 5 s against 3 s: under twice as long
    ingest(
        warehouse_path,
        run_file(tmp_path / "b.json", statistics_point(0.5, 0.2), dataset="code"),
        run_file(tmp_path / "c.json", statistics_point(0.5, 0.2), gpu_count=2),
    )
    after = table(warehouse_path)
    mine = after[(after["dataset"] == "chat") & (after["gpu_count"] == 1)]
    pd.testing.assert_frame_equal(mine[list(LOAD_COLUMNS)].reset_index(drop=True), before)


def test_a_level_with_failures_is_never_the_quickest(warehouse_path, tmp_path):
    # Its requests failed fast: it says nothing of what "unloaded" looks like, for the table as
    # for the load model (both take the quickest among complete levels without failures).
    failing = statistics_point(1.0, 0.5).model_copy(update={"failed": 50})
    ingest(
        warehouse_path,
        run_file(tmp_path / "a.json", statistics_point(0.5, 3.0), statistics_point(2.0, 5.0)),
        run_file(tmp_path / "b.json", failing),
    )
    points = table(warehouse_path)
    assert points.set_index("offered_rate_rps").loc[2.0, "stable"]  # 5 s against 3 s, not 0.5 s
    (level,) = [lv for lv in fit_curve(points).levels if lv.offered_rps == 2.0]
    assert level.stable and level.load_reason == points.iloc[-1]["load_reason"]


def test_send_times_judgements_are_kept_as_stored(warehouse_path, tmp_path):
    # Requests of 5 s against a 1 s level of the same configuration: an estimate would say it
    # fell behind; the send times show that arrivals and completions kept pace.
    ingest(
        warehouse_path,
        run_file(tmp_path / "own.json", logged_point(2.0, 5.0, n=300)),
        run_file(tmp_path / "quick.json", statistics_point(0.5, 1.0)),
    )
    points = table(warehouse_path)
    # configured at 2 req/s; stored at the rate its send times say it was sent at
    own = points[points["configured_rate_rps"] == 2.0].iloc[0]
    assert own["offered_rate_rps"] == pytest.approx(2.0, rel=0.15)
    assert own["load_basis"] == "send times" and own["stable"]
    row = stored(warehouse_path).query("load_basis == 'send times'").iloc[0]
    assert own["sustained_rps"] == row["sustained_rps"] and own["load_reason"] == row["load_reason"]


# -- the bundled sample -------------------------------------------------------------------------


def test_the_drain_case_of_the_sample_through_the_import_path(sample_warehouse_path):
    """H100 PCIe, Qwen-14B, 4 req/s offered: it kept up (P99 TTFT 47 ms) and sustained 4 req/s;
    the measured 3.39 req/s (the wall time counts the drain) stays in its own column."""
    points = table(sample_warehouse_path, model=QWEN, gpu="h100-pcie")
    at_four = points[points["offered_rate_rps"] == 4.0]
    assert len(at_four) == 2
    for row in at_four.to_dict("records"):
        assert row["stable"] is True and row["sustained_rps"] == pytest.approx(4.0)
        assert row["request_throughput_rps"] == pytest.approx(3.39, abs=0.01)
        assert row["load_basis"] == "estimated" and row["load_reason"].startswith("kept up")
    bursts = points[points["offered_rate_rps"] == 32.0]
    assert bursts["stable"].isna().all() and bursts["load_reason"].str.contains("burst").all()
    columns = list(points.columns)
    at = columns.index("request_throughput_rps")
    assert (
        columns[at + 1 : at + 5] == list(LOAD_COLUMNS) == list(CANONICAL_COLUMNS[at + 1 : at + 5])
    )


def test_the_table_and_the_load_model_judge_every_level_alike(sample_warehouse_path):
    points = table(sample_warehouse_path)
    by_level = points.set_index(["run_id", "level_index"])
    compared = 0
    for _, group in points.groupby(list(GROUP_COLUMNS), dropna=False):
        levels = fit_curve(group).levels
        assert len(levels) > 0  # a loop over nothing asserts nothing
        for level in levels:
            row = by_level.loc[(level.run_id, level.level_index)]
            assert level.load_reason == row["load_reason"]
            assert level.stable == (None if pd.isna(row["stable"]) else bool(row["stable"]))
            assert level.sustained_rps == pytest.approx(row["sustained_rps"], nan_ok=True)
            compared += 1
    assert compared > 100
    # the filters keep whole configurations: the same judgement with or without them
    filtered = table(sample_warehouse_path, model=QWEN, gpu="h100-pcie")
    same = by_level.loc[list(zip(filtered["run_id"], filtered["level_index"], strict=True))]
    assert same["load_reason"].tolist() == filtered["load_reason"].tolist()


def test_benchmarks_prints_the_load_columns(cli, sample_warehouse_path):
    done = cli(
        "benchmarks", "--warehouse", sample_warehouse_path, "--format", "json", "--model", QWEN,
        "--gpu", "h100-pcie", check=True,
    )  # fmt: skip
    rows = json.loads(done.stdout)
    at_four = [row for row in rows if row["offered_rate_rps"] == 4.0]
    assert at_four and all(
        (row["sustained_rps"], row["stable"], row["load_basis"]) == (4.0, True, "estimated")
        for row in at_four
    )
    burst = next(row for row in rows if row["offered_rate_rps"] == 32.0)
    # what the burst proves the server completes at least: 200 requests, the first no sooner
    # than the configuration's quickest request time (4.08 s, at 1 req/s) after the start
    assert burst["stable"] is None and math.isclose(
        burst["sustained_rps"], 200 / (burst["duration_s"] - 4.0839), rel_tol=1e-3
    )
    header = cli("benchmarks", "--warehouse", sample_warehouse_path, check=True).stdout
    assert ",request_throughput_rps,sustained_rps,stable,load_basis,load_reason," in header


def test_the_pages_table_says_kept_up_in_words(warehouse_path, tmp_path):
    closed = Point(max_concurrency=8, completed=100, duration_s=20.0)
    # all at once, then 1.5 s for the slowest (a p99 E2EL longer than the duration is refused)
    burst = statistics_point(math.inf, 1.0, drain_s=1.5)
    tiny = Point(offered_rate_rps=2.0, completed=1, duration_s=1.0)
    ingest(
        warehouse_path,
        run_file(
            tmp_path / "a.json",
            statistics_point(0.5, 1.0),
            statistics_point(2.0, 5.0, ttft_ms=2000),  # waited in line: fell behind
        ),
        run_file(tmp_path / "b.json", closed, burst, tiny, dataset="other"),
    )
    shown = points_table(table(warehouse_path))
    words = dict(zip(shown["load_reason"].str[:12], shown["kept_up"], strict=True))
    assert sorted(shown["kept_up"]) == [
        "burst: cannot tell", "cannot tell", "closed loop: cannot tell", "no", "yes",
    ]  # fmt: skip
    assert words["kept up: 200"] == "yes" and words["fell behind:"] == "no"
