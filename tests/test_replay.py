"""`fleetplan simulate --trace`: a request trace replayed through a plan's fleet (planner/replay),
on plans made from the sample warehouse, with synthetic traces here and the Azure traces in
tests/test_replay_azure.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fleetplan.core.errors import InputError
from fleetplan.planner.replay.fleet import PlanShapeError, PoolKey, Slot, Targets, fleet_of
from fleetplan.planner.replay.run import replay
from fleetplan.planner.replay.trace import match_classes, requests_of
from fleetplan.services.replay import server_models

ROOT = Path(__file__).resolve().parents[1]
SITE = {"name": "dc", "electricity_usd_per_kwh": 0.12, "grid_gco2_per_kwh": 350, "pue": 1.2}
MODEL = "DeepSeek-R1-Distill-Qwen-14B"


def poisson_trace(
    path: Path,
    rate: float,
    seconds: float,
    *,
    start="2024-03-01 10:00:00",
    seed=0,
    lengths=(200, 150),
    burst: tuple[float, float, float] | None = None,
):
    """A generic CSV trace: Poisson arrivals at `rate` (and `burst` = (from s, to s, rate) on
    top), lognormal lengths of the given means (CV 0.8)."""
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.exponential(1 / rate, int(rate * seconds * 1.2)))
    times = times[times < seconds]
    if burst is not None:
        lo, hi, extra = burst
        more = lo + np.cumsum(rng.exponential(1 / extra, int(extra * (hi - lo) * 1.2)))
        times = np.sort(np.concatenate([times, more[more < hi]]))
    n = len(times)

    def draw(mean):
        s2 = np.log1p(0.64)
        return np.maximum(np.rint(rng.lognormal(np.log(mean) - s2 / 2, np.sqrt(s2), n)), 1)

    stamps = pd.Timestamp(start) + pd.to_timedelta(times, unit="s")
    frame = pd.DataFrame(
        {
            "timestamp": stamps.strftime("%Y-%m-%d %H:%M:%S.%f"),
            "input_tokens": np.minimum(draw(lengths[0]), 1024).astype(int),
            "output_tokens": draw(lengths[1]).astype(int),
        }
    )
    frame.to_csv(path, index=False)
    return path


def scenario(path: Path, classes: list[dict], gpus: list[dict], **more) -> Path:
    raw = {
        "name": "replay test",
        "model": MODEL,
        "classes": classes,
        "gpus": gpus,
        "sites": [SITE],
        **more,
    }
    path.write_text(json.dumps(raw))
    return path


def plan_json(cli, tmp_path: Path, warehouse: Path, name: str, **kwargs) -> Path:
    out = tmp_path / f"{name}.json"
    done = cli(
        "plan",
        "--scenario",
        scenario(tmp_path / f"{name}-scenario.json", **kwargs),
        "--json",
        out,
        "--warehouse",
        warehouse,
    )
    assert done.returncode == 0, done.stderr
    return out


H100 = {"gpu_model": "h100-pcie", "hourly_usd": 2.4, "site": "dc"}
R4090 = {"gpu_model": "rtx-4090", "hourly_usd": 0.3, "site": "dc"}


@pytest.fixture
def peak_plan(cli, tmp_path, sample_warehouse_template) -> Path:
    chat = {"name": "chat", "rate_rps": 6.0, "ttft_p99_ms": 400, "tpot_p99_ms": 60}
    return plan_json(
        cli, tmp_path, sample_warehouse_template, "peak", classes=[chat], gpus=[H100, R4090]
    )


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_json_contract_for_a_peak_plan(cli, tmp_path, peak_plan, sample_warehouse_template):
    trace = poisson_trace(tmp_path / "t.csv", rate=3.0, seconds=1200)
    done = cli(
        "simulate",
        "--plan",
        peak_plan,
        "--trace",
        trace,
        "--format",
        "json",
        "--warehouse",
        sample_warehouse_template,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert {"classes", "seed", "method"} <= set(out)
    assert out["plan"] == "peak" and out["seed"] == 0
    (chat,) = out["classes"]
    assert {"name", "requests", "ttft_p99_ms", "tpot_p99_ms", "goodput", "meets", "hours"} <= set(
        chat
    )
    assert chat["name"] == "chat"
    assert chat["requests"] == len(pd.read_csv(trace))
    assert [h["hour"] for h in chat["hours"]] == [10]
    hour = chat["hours"][0]
    assert {"hour", "requests", "ttft_p99_ms", "tpot_p99_ms", "goodput", "meets"} <= set(hour)
    # Half the planned rate on the planned fleet: the targets hold, nearly every request meets.
    assert chat["meets"] and hour["meets"]
    assert 0 < chat["ttft_p99_ms"] <= 400 and 0 < chat["tpot_p99_ms"] <= 60
    assert chat["goodput"] > 0.98
    # Every pool says what its simulated server rests on.
    assert out["servers"] and all(s["basis"] for s in out["servers"].values())


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_same_seed_same_answer_and_another_seed_routes_otherwise(
    cli, tmp_path, peak_plan, sample_warehouse_template
):
    trace = poisson_trace(tmp_path / "t.csv", rate=3.0, seconds=600)
    args = (
        "simulate",
        "--plan",
        peak_plan,
        "--trace",
        trace,
        "--format",
        "json",
        "--warehouse",
        sample_warehouse_template,
    )
    first, again = cli(*args), cli(*args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == again.stdout
    other = json.loads(cli(*args, "--seed", "5").stdout)
    assert other["seed"] == 5
    assert json.loads(first.stdout)["classes"] != other["classes"]


@pytest.mark.slow  # seconds of replay
def test_far_above_the_plan_it_misses_and_says_the_busiest_minute_and_the_headroom(
    cli, tmp_path, peak_plan, sample_warehouse_template
):
    # A burst of 60 req/s more for five minutes in a half-hour at the planned rate (6 req/s):
    # far past what the plan's two servers carry (the serving model's, not only the plan's),
    # within what a few times the servers hold (100 req/s more was held by none of them once
    # the calibration priced the prefills the bundled levels had found cached)
    trace = poisson_trace(tmp_path / "t.csv", rate=6.0, seconds=1800, burst=(600, 900, 60.0))
    done = cli(
        "simulate",
        "--plan",
        peak_plan,
        "--trace",
        trace,
        "--format",
        "json",
        "--warehouse",
        sample_warehouse_template,
    )
    assert done.returncode == 0, done.stderr
    hour = json.loads(done.stdout)["classes"][0]["hours"][0]
    assert not hour["meets"]
    assert hour["busiest_minute"]["start"].startswith("10:1")  # the burst: 10:10-10:15
    assert hour["busiest_minute"]["rate_rps"] > 15
    room = hour["headroom"]
    assert room["factor"] is not None and room["factor"] > 1
    planned = json.loads(peak_plan.read_text())["recommended"]["pools"]
    assert sum(room["servers"].values()) > sum(p["servers"] for p in planned)
    text = cli(
        "simulate", "--plan", peak_plan, "--trace", trace, "--warehouse", sample_warehouse_template
    )
    assert "MISSES" in text.stdout and "busiest minute 10:1" in text.stdout
    assert f"holds with servers x {room['factor']:g}" in text.stdout


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_day_plan_replays_each_hour_on_that_hours_fleet(cli, tmp_path, sample_warehouse_template):
    day = ROOT / "examples" / "day-chat-nightly.json"
    plan = tmp_path / "day.json"
    assert (
        cli(
            "plan", "--scenario", day, "--json", plan, "--warehouse", sample_warehouse_template
        ).returncode
        == 0
    )
    raw = json.loads(plan.read_text())
    fleet = fleet_of(raw)
    assert fleet.kind == "day"
    servers = {h: sum(s.servers for s in fleet.hours[h].get("chat", [])) for h in (3, 12)}
    assert servers[12] > servers[3] > 0  # the day plan's fleet follows the day
    # 4 req/s from 02:30 to 03:30: the night's one server is short in 03 h.
    trace = poisson_trace(tmp_path / "t.csv", rate=4.0, seconds=3600, start="2024-03-01 02:30:00")
    done = cli(
        "simulate",
        "--plan",
        plan,
        "--trace",
        trace,
        "--class",
        "chat",
        "--format",
        "json",
        "--warehouse",
        sample_warehouse_template,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["plan"] == "day"
    chat = next(c for c in out["classes"] if c["name"] == "chat")
    assert [h["hour"] for h in chat["hours"]] == [2, 3]
    assert sum(h["requests"] for h in chat["hours"]) == chat["requests"]
    nightly = next(c for c in out["classes"] if c["name"] == "nightly eval")
    assert nightly["requests"] == 0 and nightly["hours"] == []
    # --start moves the same trace to noon, where the day's fleet is larger: it does better.
    noon = json.loads(
        cli(
            "simulate",
            "--plan",
            plan,
            "--trace",
            trace,
            "--class",
            "chat",
            "--start",
            "12",
            "--format",
            "json",
            "--warehouse",
            sample_warehouse_template,
        ).stdout
    )
    at_noon = next(c for c in noon["classes"] if c["name"] == "chat")
    assert [h["hour"] for h in at_noon["hours"]] == [12]
    assert at_noon["ttft_p99_ms"] < chat["ttft_p99_ms"]


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_hosts_failing_send_requests_elsewhere_and_lose_those_in_flight(sample_tables):
    """Availability: a pool of servers up half the time loses requests; the same fleet always up
    loses none."""
    points = sample_tables.points
    pool = PoolKey("chat", "h100-pcie", 1)
    hours = [{"chat": [Slot(pool, 4, 1.0)]} for _ in range(24)]
    from fleetplan.planner.replay.fleet import Fleet

    up = Fleet("peak", hours, {}, {"chat": Targets(1000.0, 100.0)}, {"chat": MODEL})
    failing = Fleet("peak", hours, {pool: 0.5}, up.targets, up.models)
    models = server_models(points, up)
    rng = np.random.default_rng(0)
    times = np.sort(rng.uniform(0, 40 * 3600, 6000))  # 40 h: many outages
    frame = pd.DataFrame(
        {
            "timestamp": pd.Timestamp("2024-01-01") + pd.to_timedelta(times, "s"),
            "input_tokens": 200,
            "output_tokens": 100,
        }
    )
    requests = requests_of({"chat": frame}, ["chat"])
    always = replay(up, models, requests, seed=1)
    half = replay(failing, models, requests, seed=1, repair_hours=0.25)
    assert not always.failed.any()
    # Four servers up half the time each: all four down a sixteenth of the time (those
    # requests fail), and requests in flight at a failure are lost.
    share = half.failed.mean()
    assert 0.03 < share < 0.10, share  # about 1/16
    assert np.isinf(half.ttft_ms[half.failed]).all()
    # The requests that found their server down went to the pool's other servers: those that
    # did not fail were served.
    assert np.isfinite(half.ttft_ms[~half.failed]).all()


def test_the_router_splits_a_class_by_the_pools_weights(sample_tables):
    a, b = PoolKey("chat", "h100-pcie", 1), PoolKey("chat", "rtx-4090", 2)
    from fleetplan.planner.replay.fleet import Fleet

    hours = [{"chat": [Slot(a, 3, 3.0), Slot(b, 2, 1.0)]} for _ in range(24)]
    fleet = Fleet("peak", hours, {}, {"chat": Targets()}, {"chat": MODEL})
    models = server_models(sample_tables.points, fleet)
    times = np.sort(np.random.default_rng(2).uniform(0, 3600, 8000))
    frame = pd.DataFrame(
        {
            "timestamp": pd.Timestamp("2024-01-01") + pd.to_timedelta(times, "s"),
            "input_tokens": 100,
            "output_tokens": 20,
        }
    )
    served = replay(fleet, models, requests_of({"chat": frame}, ["chat"]))
    share_a = float((served.pool == served.pools.index(a)).mean())
    assert abs(share_a - 0.75) < 0.02, share_a


def test_scale_multiplies_the_rate_and_keeps_the_minutes_shape():
    rng = np.random.default_rng(0)
    times = np.sort(rng.uniform(0, 3600, 3000))
    frame = pd.DataFrame(
        {
            "timestamp": pd.Timestamp("2024-01-01 05:00") + pd.to_timedelta(times, "s"),
            "input_tokens": 100,
            "output_tokens": 20,
        }
    )
    once = requests_of({"c": frame}, ["c"])
    assert np.all(once.hour() == 5)
    assert once.time_s[0] == pytest.approx(5 * 3600 + times[0], abs=1e-3)
    for scale in (0.5, 2.0, 3.5):
        scaled = requests_of({"c": frame}, ["c"], scale=scale)
        assert len(scaled) == pytest.approx(scale * len(once), rel=0.06)
        assert np.all(np.diff(scaled.time_s) >= 0)
        assert len(np.unique(scaled.time_s)) == len(scaled)  # no two at the same instant
    moved = requests_of({"c": frame}, ["c"], start_hour=22)
    assert moved.time_s[0] == 22 * 3600
    assert np.allclose(np.diff(moved.time_s), np.diff(once.time_s))
    with pytest.raises(InputError, match="scale"):
        requests_of({"c": frame}, ["c"], scale=0.0)


def test_classes_are_matched_by_name_or_said_which():
    frame = pd.DataFrame(
        {"timestamp": [pd.Timestamp("2024-01-01")], "input_tokens": [1], "output_tokens": [1]}
    )
    assert list(match_classes({"all": frame}, ["chat"])) == ["chat"]
    with pytest.raises(InputError, match="--class NAME"):
        match_classes({"all": frame}, ["chat", "batch"])
    assert list(match_classes({"all": frame}, ["chat", "batch"], only="batch")) == ["batch"]
    with pytest.raises(InputError, match="not one of the plan's"):
        match_classes({"rag": frame}, ["chat"])
    with pytest.raises(InputError, match="not a class of the plan"):
        match_classes({"all": frame}, ["chat"], only="rag")


def test_refusals_name_what_is_wrong(cli, tmp_path, peak_plan, sample_warehouse_template):
    trace = poisson_trace(tmp_path / "t.csv", rate=1.0, seconds=60)
    raw = json.loads(peak_plan.read_text())
    raw.pop("inputs")
    bare = tmp_path / "bare.json"
    bare.write_text(json.dumps(raw))
    done = cli(
        "simulate", "--plan", bare, "--trace", trace, "--warehouse", sample_warehouse_template
    )
    assert done.returncode == 1 and "inputs.scenario.classes" in done.stderr
    with pytest.raises(PlanShapeError):
        fleet_of(raw)
    done = cli("simulate", "--plan", peak_plan, "--trace", trace, "--start", "25")
    assert done.returncode == 2 and "an hour 0-23" in done.stderr
    missing = cli(
        "simulate",
        "--plan",
        peak_plan,
        "--trace",
        tmp_path / "none.csv",
        "--warehouse",
        sample_warehouse_template,
    )
    assert missing.returncode == 1 and "cannot read" in missing.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("timestamp,input_tokens\n1,2\n")
    done = cli(
        "simulate", "--plan", peak_plan, "--trace", bad, "--warehouse", sample_warehouse_template
    )
    assert done.returncode == 1 and "output_tokens" in done.stderr
    split = cli(
        "simulate",
        "--plan",
        peak_plan,
        "--trace",
        trace,
        "--class-by",
        "input",
        "--warehouse",
        sample_warehouse_template,
    )
    assert split.returncode == 1 and "not one of the plan's" in split.stderr


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_off_a_terminal_the_replay_says_what_it_is_doing(
    cli, tmp_path, peak_plan, sample_warehouse_template
):
    # a 10-million-row log replayed for two minutes printed nothing off a terminal (tqdm's bar
    # is off there): under systemd or docker it looked hung
    trace = poisson_trace(tmp_path / "t.csv", rate=3.0, seconds=600)
    done = cli(
        "simulate",
        "--plan",
        peak_plan,
        "--trace",
        trace,
        "--warehouse",
        sample_warehouse_template,
        input="",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith(f"fleetplan simulate: reading {trace} [")
    assert lines[1].startswith("fleetplan simulate: replaying the requests through the plan's")
    total = len(pd.read_csv(trace))
    assert f": {total:,} of {total:,} requests (100 %) [" in lines[-1]


def test_progress_lines_off_a_terminal_come_at_most_every_interval():
    import io

    from fleetplan.cli.common import Progress

    stream = io.StringIO()
    progress = Progress("fleetplan x", "request", stream=stream, every_s=3600)
    progress.phase("working")
    for done in range(1, 1001):
        progress.update(done, 1000)
    progress.close()
    lines = stream.getvalue().splitlines()
    # the phase's line, then nothing within the interval but the end (100 %)
    assert len(lines) == 2, lines
    assert lines[0].startswith("fleetplan x: working [0 s]")
    assert lines[1].startswith("fleetplan x: working: 1,000 of 1,000 requests (100 %)")
