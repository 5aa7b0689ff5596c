"""benchmarks/capacity_curve.py holds each interior level out and fits the rest: the rest must be
judged as `benchmark_points` would have judged it had that level never been measured (issue 19's
accuracy aim). A judgement from a level's own send times (the request log is not stored, and it
depends on no other level) stays; an estimate is made again against the quickest level left."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from fleetplan.planner.curve.load_curve import fit_curve

pytestmark = pytest.mark.slow  # the hold-out over every series of the real sweeps: seconds a test

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location(
        "capacity_model", ROOT / "benchmarks" / "capacity_curve.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _vllm_rate(bench):
    series = {key: rows for _, key, rows in bench.live_series()}
    return series[("vllm-rate", "rate")]


def test_a_send_times_judgement_survives_the_hold_out(bench):
    """vLLM bench serve against the CPU server, asked 2/4/8/16 req/s: its own send times say the
    4 req/s level fell behind (late requests took 1.82x as long). From its statistics alone (60
    requests in 15.3 s) it looks kept up; with that, held out at 8 req/s, the queue form through
    two "stable" levels put the P99 TTFT at 993 ms against 355 measured (+180 %). Kept as
    stored, the level that fell behind is above every level left that kept up: the server
    saturates there (`saturation_of`: the lowest rate it fell behind at), and the model says
    nothing at 8 req/s rather than a figure. (With 8 req/s in, kept up above the fall, the fall
    is a stall, not the knee: the saturation is the burst's, and 8 req/s is on the curve.)"""
    frame = _vllm_rate(bench)
    four = bench._key(frame).sub(3.96).abs() < 0.01
    eight = bench._key(frame).sub(7.93).abs() < 0.01
    assert (frame.loc[four, "load_basis"] == "send times").all()
    assert not frame.loc[four, "stable"].any()
    rest = bench.judged_without(frame[~eight])
    assert not rest.loc[four[~eight], "stable"].any()
    assert (rest.loc[four[~eight], "load_reason"] == frame.loc[four, "load_reason"]).all()
    held_out = fit_curve(rest)
    sustained = float(frame.loc[four, "sustained_rps"].iloc[0])
    assert held_out.saturation_rps == pytest.approx(sustained) and sustained < 3.96
    assert held_out.predict(7.9335, extrapolate=True) is None
    whole = fit_curve(frame)
    assert 7.9335 in [round(rate, 4) for rate in whole.stable_rates]
    assert "fell behind" not in whole.saturation_basis and whole.saturation_rps > 7.9335


def test_an_estimate_is_judged_again_against_what_is_left(bench):
    """An 'estimated' judgement compares a level with the quickest level of its configuration:
    without the held-out level the quickest may be another, so it is made again (the stored one
    could rest on the held-out level)."""
    frame = bench.live_series()
    rows = {key: f for _, key, f in frame}[("inference-perf-rate", "rate")]
    assert (rows["load_basis"] == "estimated").all()
    rest = rows.iloc[1:].copy()
    rest["load_reason"] = "stale"  # what a judgement against the held-out level would say
    again = bench.judged_without(rest)
    assert (again["load_reason"] != "stale").all()


def test_the_held_out_aim_on_all_three_sources(bench):
    """Issue 19's aim, on every source the checkout can read: of the held-out levels below
    saturation the model predicts at least 80 % and puts the P99 TTFT within 25 % for at least
    75 %, beating log-linear interpolation (in rate, and in concurrency for closed loops). The
    InferenceX sweeps are shared data beside the checkout; without them the aim is not claimed
    (io.net and the live runs alone hold 46 levels, their cold and noisy ones among them)."""
    inferencex = bench.inferencex_series()
    if not inferencex:
        pytest.skip("the shared InferenceX sweeps are not beside this checkout")
    rows = bench.evaluate(bench.ionet_series() + inferencex + bench.live_series())
    table = bench.summarise(rows, 0.25)
    row = table[
        (table["metric"] == "P99 TTFT")
        & (table["source"] == "all sources")
        & (table["levels"] == "below saturation")
    ].iloc[0]
    assert row["n"] >= 130
    assert row["model predicted"] >= 0.80
    assert row["model hits/all"] >= 0.75
    assert row["model hits/all"] > max(
        row["baseline hits/all"], row["baseline, concurrency hits/all"]
    )
