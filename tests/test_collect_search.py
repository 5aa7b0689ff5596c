"""The capacity search (`fleetplan collect --find-capacity`): its algorithm against a simulated
server whose capacity is known exactly, then the whole command against the streaming test server
with a known knee, checked against the load model (`fleetplan.planner.curve.load_curve`)."""

from __future__ import annotations

import heapq
import math
import time
from pathlib import Path

import pandas as pd
import pytest

from fleetplan.collectors.loadgen import arrival_offsets
from fleetplan.collectors.requests_log import RequestResult, level_point
from fleetplan.collectors.search import (
    MAX_DOUBLINGS,
    SEARCH_MIN_REQUESTS,
    SPAN_TYPICALS,
    Measured,
    SearchPlan,
    bisection_steps,
    find_capacity,
    level_requests,
)
from fleetplan.core.contract import RunFile
from fleetplan.core.spread import judge_percentile
from tests.support.cli import run_cli


class SlotServer:
    """A server of `slots` completions at once, the rest in a FIFO queue, each completion
    `ttft_s + tpot_s x (tokens - 1)` long: what benchmarks/inputs/stream_server.py --slots does, in
    simulation (no clock, no jitter). It sustains at most slots / that time req/s."""

    def __init__(self, *, slots: int, ttft_s: float, tpot_s: float, tokens: int, burstiness=100.0):
        self.slots, self.ttft_s, self.tpot_s, self.tokens = slots, ttft_s, tpot_s, tokens
        self.burstiness = burstiness
        self.calls: list[tuple[float, int, int]] = []

    @property
    def service_s(self) -> float:
        return self.ttft_s + self.tpot_s * (self.tokens - 1)

    @property
    def knee_rps(self) -> float:
        return self.slots / self.service_s

    def __call__(self, rate: float, requests: int, expected: int) -> Measured:
        self.calls.append((rate, requests, expected))
        offsets = arrival_offsets(requests, rate, self.burstiness, seed=len(self.calls))
        free = [0.0] * self.slots  # when each slot is next free
        results = []
        for arrival in offsets:
            begins = max(arrival, heapq.heappop(free))
            heapq.heappush(free, begins + self.service_s)
            ttft = begins - arrival + self.ttft_s
            results.append(
                RequestResult(
                    start_s=float(arrival),
                    ttft_s=ttft,
                    itl_s=[self.tpot_s] * (self.tokens - 1),
                    e2el_s=ttft + self.tpot_s * (self.tokens - 1),
                    input_tokens=16,
                    output_tokens=self.tokens,
                )
            )
        return Measured(
            level_point(
                results,
                duration_s=max(free),
                offered_rate_rps=rate,
                burstiness=self.burstiness,
            )
        )


def knee_server() -> SlotServer:
    # 4 slots x 0.2 s per completion (20 ms + 18 x 10 ms): 20 req/s at most
    return SlotServer(slots=4, ttft_s=0.020, tpot_s=0.010, tokens=19)


def test_the_search_brackets_a_known_knee_within_the_tolerance():
    server = knee_server()
    assert server.knee_rps == pytest.approx(20.0)
    # TTFT is 20 ms while a slot is free. Past the knee at (1 + e) x 20 req/s, a level of n >= 400
    # requests ends with a queue of about e x n requests, served 20 a second: e x n / 20 s of
    # waiting, over the 100 ms margin once e > 0.5 % (n = 400). Below the knee the nearly even
    # arrivals (gamma shape 100) find a slot free: the capacity is 20 req/s, give or take that.
    # One run a rate: the search's steps (a rate run twice is the next test's).
    plan = SearchPlan(ttft_p99_ms=120.0, tolerance=0.05, min_runs=1)
    outcome = find_capacity(server, [3.0], plan, typical_s=server.service_s)
    phases = [level.phase for level in outcome.levels]
    rates = [level.rate_rps for level in outcome.levels]
    # the doubling ladder from 3 fails first at 24; then [12, 24] halves its ratio 4 times
    assert phases == ["ladder"] * 4 + ["bisect"] * bisection_steps(12, 24, 0.05)
    assert rates[:4] == [3, 6, 12, 24] and bisection_steps(12, 24, 0.05) == 4
    assert rates[4] == pytest.approx(math.sqrt(12 * 24))
    assert outcome.width <= 0.05 and not outcome.infeasible and not outcome.problems
    assert 20 * (1 - 0.05) <= outcome.capacity_rps <= 20 * 1.005
    assert outcome.low < 20 < outcome.high * 1.005
    passed = [level.rate_rps for level in outcome.levels if level.passed]
    failed = [level.rate_rps for level in outcome.levels if not level.passed]
    assert max(passed) == outcome.low < outcome.high == min(failed)
    # every level long enough for its P99: 400 requests at the least, more where the span asks
    for (rate, requests, _), level in zip(server.calls, outcome.levels, strict=True):
        assert requests == level.requests == level.point.requests_sent >= SEARCH_MIN_REQUESTS
        assert requests >= rate * SPAN_TYPICALS * server.service_s
    # the "of n" each level announces is the number the search ends with, once bracketed
    assert [expected for *_, expected in server.calls][4:] == [8, 8, 8, 8]


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_every_rate_whose_p99_decides_is_run_twice_and_one_that_fell_behind_once():
    server = knee_server()
    outcome = find_capacity(server, [3.0], SearchPlan(ttft_p99_ms=120.0), typical_s=0.2)
    assert SearchPlan(ttft_p99_ms=1.0).min_runs == 2
    by_rate: dict[float, list] = {}
    for level in outcome.levels:
        by_rate.setdefault(level.rate_rps, []).append(level)
    assert len(by_rate) > 0  # a loop over nothing asserts nothing
    for rate, levels in by_rate.items():
        first, *again = levels
        assert [level.run for level in levels] == list(range(1, len(levels) + 1))
        if first.verdict == "fell behind":  # the load's judgement, not a percentile's: once
            assert not again and rate > 20
        else:  # the P99 decides only on two runs together
            assert first.verdict == "cannot tell TTFT; measuring again" and not first.passed
            assert "(one run shows no spread between runs; 2 are needed)" in first.reason
            (second,) = again
            # each run must keep up on its own: 1.01x the knee kept up once (late requests
            # 1.49x as long), then fell behind (1.63x), and the rate did not pass
            assert (
                second.verdict == "fell behind" or "over 800 requests in 2 runs)" in second.reason
            )
            assert second.passed == (rate < 20)
    assert 20 * (1 - 0.05) <= outcome.capacity_rps <= 20 * 1.005
    # the rates tried are those of one run a rate: the repeats only confirm each call
    once = find_capacity(knee_server(), [3.0], SearchPlan(ttft_p99_ms=120.0, min_runs=1))
    assert list(by_rate) == [level.rate_rps for level in once.levels]
    with pytest.raises(ValueError, match="min_runs must be 1 to 1"):
        SearchPlan(ttft_p99_ms=1.0, max_runs=1)


def test_every_level_says_what_it_was_and_why_it_passed_or_failed():
    plan = SearchPlan(ttft_p99_ms=120.0, min_runs=1)
    outcome = find_capacity(knee_server(), [3.0], plan)
    meta = outcome.metadata()
    assert meta["search_targets"] == "P99 TTFT <= 120 ms" and meta["search_tolerance"] == "0.05"
    assert float(meta["search_capacity_rps"]) == outcome.low
    assert meta["search_bracket_rps"] == f"{outcome.low!r},{outcome.high!r}"
    levels = [meta[f"search_level_{i:03d}"] for i in range(len(outcome.levels))]
    assert levels[0].startswith("ladder; passed; kept up:") and (
        "P99 TTFT 20 ms (90% interval 20-20 ms over 400 requests): meets 120 ms" in levels[0]
    )
    assert levels[3].startswith("ladder; failed; fell behind:")  # 24 req/s: 1.2x the knee
    assert all(text.startswith("bisect; ") for text in levels[4:])
    table = outcome.table("random-16-19")
    assert "capacity search, random-16-19: P99 TTFT <= 120 ms" in table
    assert f"capacity {outcome.low:.4g} req/s (bracket" in table.splitlines()[-1]
    assert "fell behind" in table and len(table.splitlines()) == 2 + len(outcome.levels) + 1


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_no_capacity_when_the_lowest_rate_already_misses():
    server = knee_server()
    outcome = find_capacity(server, [2.0, 4.0], SearchPlan(ttft_p99_ms=15.0, tpot_p99_ms=5.0))
    assert outcome.infeasible and outcome.capacity_rps is None and outcome.high == 2.0
    first, level = outcome.levels  # a miss too is called on two runs
    assert first.verdict == "cannot tell TTFT, TPOT; measuring again"
    assert level.verdict == "misses TTFT, TPOT"
    assert (
        "P99 TTFT 20 ms (90% interval 20-20 ms over 800 requests in 2 runs): misses 15 ms"
        in level.reason
    )
    assert outcome.summary().startswith("no capacity: even 2 req/s misses (kept up:")


def test_a_ladder_that_always_passes_doubles_then_says_at_least():
    server = SlotServer(slots=10_000, ttft_s=0.001, tpot_s=0.001, tokens=2)
    outcome = find_capacity(server, [1.0, 2.0, math.inf], SearchPlan(ttft_p99_ms=50.0, min_runs=1))
    rates = [level.rate_rps for level in outcome.levels]
    assert rates == [1, 2] + [2 * 2**k for k in range(1, MAX_DOUBLINGS + 1)]  # inf left out
    assert outcome.high is None and outcome.low == rates[-1] and not outcome.infeasible
    assert outcome.summary() == f"capacity at least {rates[-1]:g} req/s: every rate tried passed"


def test_a_level_cut_short_ends_the_search_and_a_problem_fails_its_level():
    server = knee_server()

    def stops_at_the_second(rate: float, requests: int, expected: int) -> Measured:
        measured = server(rate, requests, expected)
        return Measured(measured.point, stopped=len(server.calls) == 2)

    plan = SearchPlan(ttft_p99_ms=120.0, min_runs=1)
    outcome = find_capacity(stops_at_the_second, [3.0], plan)
    assert len(outcome.levels) == 2 and outcome.stopped and not outcome.infeasible
    # the level cut short counts for nothing, whatever it measured before it stopped
    assert outcome.summary() == "search cut short: capacity at least 3 req/s"

    def client_lags(rate: float, requests: int, expected: int) -> Measured:
        measured = server(rate, requests, expected)
        return Measured(measured.point, problem="the client lagged" if rate > 10 else None)

    outcome = find_capacity(client_lags, [3.0], plan)
    assert outcome.problems and outcome.high <= 12  # lagging levels never pass
    assert {level.verdict for level in outcome.levels if level.rate_rps > 10} == {"not judged"}


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_poisson_arrivals_queue_before_the_knee_so_the_capacity_is_lower():
    # The same server under Poisson arrivals (burstiness 1): requests meet a queue at any rate,
    # so the TTFT target is missed well below 20 req/s (what users' traffic looks like).
    server = SlotServer(slots=4, ttft_s=0.020, tpot_s=0.010, tokens=19, burstiness=1.0)
    outcome = find_capacity(server, [3.0], SearchPlan(ttft_p99_ms=120.0))
    assert outcome.width <= 0.05 and outcome.capacity_rps < 0.9 * server.knee_rps


@pytest.mark.parametrize(
    ("low", "high", "tolerance"), [(12, 24, 0.05), (1, 100, 0.05), (50, 51, 0.05), (8, 9, 0.01)]
)
def test_bisection_steps_is_the_number_a_geometric_bisection_takes(low, high, tolerance):
    expected = bisection_steps(low, high, tolerance)
    steps = 0
    while (high - low) / high > tolerance:
        low = math.sqrt(low * high)  # either half: the ratio left is the same
        steps += 1
    assert steps == expected


def test_level_length_rule():
    assert level_requests(1.0, None, SEARCH_MIN_REQUESTS) == 400  # nothing known: the count
    assert level_requests(100.0, 0.09, 400) == 400  # 100 req/s x 6 x 0.09 s = 54 < 400
    assert level_requests(100.0, 2.0, 400) == 1200  # 100 req/s x 6 x 2 s: the span rules
    assert level_requests(100.0, 2.0, 50) == 1200 and level_requests(1.0, 2.0, 50) == 50


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_run_frame_a_search_leaves_fits_the_model():
    # (Also done against the real server below; here exact, without a clock.)
    from fleetplan.core.load import judge_point
    from fleetplan.planner.curve.load_curve import fit_curve

    server = knee_server()
    outcome = find_capacity(server, [3.0], SearchPlan(ttft_p99_ms=120.0))
    curve = fit_curve(level_frame([level.point for level in outcome.levels], judge_point))
    estimate = curve.capacity(target_ttft_p99_ms=120.0, target_tpot_p99_ms=None)
    assert outcome.low <= estimate.capacity_rps <= outcome.high


def level_frame(points, judge) -> pd.DataFrame:
    """Rows of `benchmark_points` for one run's points, with their send-time judgement (what the
    warehouse stores for a fleetplan run file)."""
    rows = []
    for index, point in enumerate(points):
        load = judge(point)
        rows.append(
            {
                **point.model_dump(exclude={"requests"}),
                "run_id": "search",
                "level_index": index,
                "source_file": "search.json",
                "sustained_rps": load.sustained_rps,
                "stable": load.stable,
                "load_basis": load.basis.value,
                "load_reason": load.reason,
            }
        )
    return pd.DataFrame(rows)


# The streaming test server with a known knee: 3 slots, each completion 40 ms to its first token
# and 50 ms to its second (2 output tokens): 90 ms a slot, so 3 / 0.090 = 33.3 req/s at most.
SLOTS, TTFT_MS, TPOT_MS, TOKENS = 3, 40.0, 50.0, 2
LEVEL_REQUESTS = 200  # the suite's own level length: 6 s a level here, the test within ~45 s
KNEE_RPS = SLOTS / ((TTFT_MS + TPOT_MS * (TOKENS - 1)) / 1000)
TTFT_TARGET_MS = 500.0


def collect_openai(url, model, out, *options):
    """`fleetplan collect --backend openai` against `url`, on an "RTX 4090", writing to `out`."""
    return run_cli("collect", "--backend", "openai", "--base-url", url, "--model", model,
                     "--out", out, "--gpu", "rtx-4090", *options, timeout=180)  # fmt: skip


def test_find_capacity_finds_the_test_servers_knee_and_agrees_with_the_model(
    stream_server, tmp_path
):
    from fleetplan.core.load import judge_point
    from fleetplan.planner.curve.load_curve import fit_curve

    url = stream_server(ttft_ms=TTFT_MS, tpot_ms=TPOT_MS, slots=SLOTS)
    warehouse = tmp_path / "wh.duckdb"
    started = time.monotonic()
    # Nearly even arrivals (gamma shape 100): below the knee a request finds a slot free (TTFT
    # 40 ms, plus whatever delays a busy machine adds: up to a few hundred ms seen here under
    # load, hence a target of 500 ms). Past the knee at (1 + e) x 33.3 req/s the queue grows by
    # e x 33.3 requests a second: over a level of 200 requests (6 s; the span rule asks for
    # fewer: 6 x 90 ms at 50 req/s is 27) the last third of the requests wait about 5e s, the
    # first third e s, and the level is judged to have fallen behind once
    # (0.09 + 5e) / (0.09 + e) > 1.5 (late requests taking 1.5x as long), that is e > 1.3 %
    # (roughly: 1.32x measured at e = 1.6 %); its last requests wait past the target from
    # e > 7.7 %. So the search ends within its 5 % tolerance below the knee, or a couple of per
    # cent above it, and it mostly does (33.64 and 33.86 req/s seen, +0.9 and +1.6 %). But a
    # busy machine (other tests beside this one) stalls the client or the server for a few
    # hundred ms now and then: the requests held up arrive together, and near the knee the spare
    # capacity drains such a burst slowly (at 97 % load, 1 req/s), so a level just below the
    # knee can be judged behind (30.84 and 31.05 req/s seen). The lower bound allows that one
    # bisection step more.
    # (400 requests a level, the default, would take the test past a minute: the rule itself is
    # tested on the simulated server above.)
    done = collect_openai(
        url, "stream-test", tmp_path / "runs", "--input-len", 8, "--output-len", TOKENS,
        "--rates", 25, "--num-requests", LEVEL_REQUESTS, "--burstiness", 100,
        "--find-capacity", "--ttft-p99", TTFT_TARGET_MS, "--ingest", "--warehouse", warehouse,
        "--min-runs", 1,  # the knee shows as falling behind, not as a P99: one run decides
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = (tmp_path / "runs").glob("*.json")
    (run,) = RunFile.model_validate_json(path.read_bytes()).runs
    meta = run.metadata
    low, high = (float(rate) for rate in meta["search_bracket_rps"].split(","))
    found = float(meta["search_capacity_rps"])
    assert found == low and (high - low) / high <= 0.05
    # how far below the knee the search ends depends on how loaded the machine is (stalls make
    # a level near the knee fall behind): printed below, not asserted.
    # What holds however loaded: no level sustains more than the slots serve, the search doubles
    # 25 req/s until a level fails, then bisects that last doubling until within 5 % (a rate
    # whose P99 a busy machine left undecided is run again: those repeats are levels of their
    # own, left out here).
    assert found <= KNEE_RPS * 1.03, (found, KNEE_RPS, done.stdout)
    texts = [meta[f"search_level_{i:03d}"] for i in range(len(run.points))]
    first = [i for i, text in enumerate(texts) if " of the rate; " not in text]
    phases = [texts[i].split(";")[0] for i in first]
    # the rates asked (offered_rate_rps is the rate the requests were really sent at)
    rates = [run.points[i].configured_rate_rps or run.points[i].offered_rate_rps for i in first]
    ladder = phases.count("ladder")
    assert ladder >= 2 and phases == ["ladder"] * ladder + ["bisect"] * (len(phases) - ladder)
    assert rates[:ladder] == [25.0 * 2**i for i in range(ladder)], rates
    assert len(phases) - ladder == bisection_steps(rates[ladder - 2], rates[ladder - 1], 0.05)
    assert all(p.requests_sent == LEVEL_REQUESTS and p.burstiness == 100 for p in run.points)
    assert f"capacity {found:.4g} req/s (bracket" in done.stdout
    assert f"imported: 1 run(s), {len(run.points)} point(s)" in done.stdout

    # The model on the same levels. Its curve runs through the levels that kept up, which meet
    # the target up to `low` (the search's passes) and are monotone there: it meets the target up
    # to `low` at least. Without extrapolation it predicts nothing above the highest level that
    # kept up: when no level above the bracket kept up (a sharp knee: past it the queue grows),
    # its capacity is at most `high`. So it lies in the bracket.
    frame = level_frame(run.points, judge_point)
    kept_up_above = frame[(frame["offered_rate_rps"] > high) & frame["stable"].eq(True)]
    assert kept_up_above.empty, frame[["offered_rate_rps", "stable", "load_reason"]]
    curve = fit_curve(frame)
    estimate = curve.capacity(target_ttft_p99_ms=TTFT_TARGET_MS, target_tpot_p99_ms=None)
    assert low <= estimate.capacity_rps <= high, (estimate, low, high)
    # and the rate it sees the server saturate at (what it sustained while behind) is the knee
    # (printed, not asserted: it is a throughput, and a loaded machine lowers it)
    print(f"knee {KNEE_RPS:.2f} req/s, found {found:.2f} [{low:.2f}, {high:.2f}], "
          f"model {estimate.capacity_rps:.2f}, saturation {curve.saturation_rps:.2f}, "
          f"{elapsed:.0f} s")  # fmt: skip


def test_find_capacity_exits_2_when_even_the_lowest_rate_misses(stream_server, tmp_path):
    # 10 req/s, about one request in flight: room for a client on a loaded 2-core machine (at
    # 20 req/s, once in a full suite, the miss came on one run: a run judged without its second)
    url = stream_server(ttft_ms=TTFT_MS, tpot_ms=TPOT_MS)
    done = collect_openai(
        url, "stream-test", tmp_path, "--input-len", 8, "--output-len", TOKENS, "--rates",
        "10,20", "--num-requests", 50, "--warmup", 0, "--find-capacity", "--ttft-p99", 20,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no capacity: even 10 req/s misses" in done.stdout
    (path,) = Path(tmp_path).glob("*.json")
    (run,) = RunFile.model_validate_json(path.read_bytes()).runs
    # --num-requests sets the fewest; no warm-up, no typical request time: exactly that many,
    # and the miss is called on two runs of the rate (--min-runs 2, the default)
    assert [p.requests_sent for p in run.points] == [50, 50]
    assert run.metadata["search_capacity_rps"] == "none"
    assert run.metadata["search_level_000"].startswith("ladder; failed; kept up:")
    assert "one run shows no spread between runs" in run.metadata["search_level_000"]
    assert "run 2 of the rate" in run.metadata["search_level_001"]
    # --min-runs 1 trusts one run: one level
    done = collect_openai(
        url, "stream-test", tmp_path / "once", "--input-len", 8, "--output-len", TOKENS,
        "--rates", "10,20", "--num-requests", 50, "--warmup", 0, "--find-capacity",
        "--ttft-p99", 20, "--min-runs", 1,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    (path,) = Path(tmp_path / "once").glob("*.json")
    (run,) = RunFile.model_validate_json(path.read_bytes()).runs
    assert len(run.points) == 1 and "misses 20 ms" in run.metadata["search_level_000"]


def test_find_capacity_is_refused_for_the_torch_backend(cli, tmp_path):
    done = cli("collect", "--backend", "torch", "--out", tmp_path, "--find-capacity",
                     "--ttft-p99", 100)  # fmt: skip
    assert done.returncode == 3 and "torch backend runs a closed-loop" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_client_too_slow_for_the_rate_is_told_apart_from_a_passing_stall():
    from fleetplan.collectors.collect import client_lag
    from fleetplan.collectors.loadgen import LevelOutcome
    from fleetplan.collectors.suite import Suite, TokenShape

    shape = TokenShape(name="chat", input_len=8, output_len=2)
    suite = Suite(shapes=(shape,), seed=3)
    scheduled = arrival_offsets(400, 50.0, 1.0, seed=3 + 2)  # level 2's schedule

    def sent(starts) -> LevelOutcome:
        return LevelOutcome([RequestResult(start_s=float(t)) for t in starts], duration_s=9.0)

    assert client_lag(sent(scheduled + 0.001), 50.0, suite, 2, shape) is None
    stalled = scheduled.copy()
    stalled[300:320] = scheduled[320]  # 0.4 s held up, then caught up
    assert client_lag(sent(stalled), 50.0, suite, 2, shape) is None
    # a client that manages 45 req/s of the 50 falls behind all along: by 0.9 s at the end
    message = client_lag(sent(scheduled * 50 / 45), 50.0, suite, 2, shape)
    assert message.startswith("chat at 50/s: the client sent the second half of its requests")
    assert "the client's limit" in message


def level_of(ttfts_ms: list[float], rate: float) -> Measured:
    """A level whose requests arrive evenly at `rate` with these TTFTs (and 2 output tokens,
    10 ms apart): it keeps up, so only its TTFTs decide it."""
    results = [
        RequestResult(
            start_s=i / rate,
            ttft_s=ttft / 1000,
            itl_s=[0.010],
            e2el_s=ttft / 1000 + 0.010,
            input_tokens=16,
            output_tokens=2,
        )
        for i, ttft in enumerate(ttfts_ms)
    ]
    duration = max(r.start_s + r.e2el_s for r in results)
    return Measured(level_point(results, duration_s=duration, offered_rate_rps=rate))


def slow_in_the_middle(n: int, slow: int, fast_ms: float = 20.0, slow_ms: float = 150.0):
    """n TTFTs of `fast_ms`, `slow` of them (in the middle third) `slow_ms`."""
    values = [fast_ms] * n
    for k in range(slow):
        values[n // 3 + k * (n // 3) // max(slow, 1)] = slow_ms
    return values


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_rate_whose_p99_the_spread_cannot_decide_is_measured_again_and_judged_by_run():
    # 4 slow requests of 400 (1 %) in the first run: its P99 is 21 ms, but a resample holds 5 or
    # more of them a third of the time (P99 150 ms). Then the same rate without slow requests.
    # Pooled as one sample of 800 (0.5 % slow) it would pass on the second run; judged by run, a
    # quarter of the resamples are the slow run twice, so two runs cannot tell: the slow run may
    # be how the server is half the time. A third run without slow requests leaves the slow run
    # a third of the runs, and the P99 of the 1200 under 100 ms but in a few per cent of them.
    runs = [slow_in_the_middle(400, 4), slow_in_the_middle(400, 0), slow_in_the_middle(400, 0)]
    calls: list[tuple[float, int, int]] = []

    def measure(rate: float, requests: int, expected: int) -> Measured:
        calls.append((rate, requests, expected))
        if rate == 2.0:
            return level_of(runs[sum(1 for c in calls if c[0] == 2.0) - 1], rate)
        return level_of([500.0] * 400, rate)  # every higher rate misses outright

    plan = SearchPlan(ttft_p99_ms=100.0, tolerance=0.6)
    outcome = find_capacity(measure, [2.0], plan)
    rates = [level.rate_rps for level in outcome.levels]
    assert rates == [2.0, 2.0, 2.0, 4.0, 4.0]
    assert [level.run for level in outcome.levels] == [1, 2, 3, 1, 2]
    first, second, third, *higher = outcome.levels
    assert not first.passed and first.verdict == "cannot tell TTFT; measuring again"
    assert "interval 20-150 ms over 400 requests): cannot tell 100 ms" in first.reason
    assert not second.passed and second.verdict == "cannot tell TTFT; measuring again"
    assert "interval 20-150 ms over 800 requests in 2 runs): cannot tell 100 ms" in second.reason
    assert third.passed and "over 1200 requests in 3 runs): meets 100 ms" in third.reason
    assert higher[-1].verdict == "misses TTFT" and outcome.low == 2.0 and outcome.high == 4.0
    # each run more is announced as one level more than planned
    assert [expected for *_, expected in calls] == [1, 2, 3, 4, 5]
    meta = outcome.metadata()
    assert meta["search_level_002"].startswith("ladder; passed; run 3 of the rate; kept up:")
    # pooled as one sample, the old way, the second run alone would have decided
    pooled = judge_percentile(runs[0] + runs[1], 100.0, seed=800)
    assert pooled.decision == "meets"


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_rate_still_undecided_after_its_runs_does_not_pass():
    # 1 % slow in every run: pooled, the P99 stays on the slow requests' edge; after 3 runs the
    # rate has not been shown to meet 100 ms, and the capacity is not credited with it.
    def measure(rate: float, requests: int, expected: int) -> Measured:
        return level_of(slow_in_the_middle(400, 4), rate)

    outcome = find_capacity(measure, [2.0], SearchPlan(ttft_p99_ms=100.0))
    assert [level.run for level in outcome.levels] == [1, 2, 3]
    assert outcome.levels[-1].verdict == "cannot tell TTFT after 3 run(s): not passed"
    assert "over 1200 requests in 3 runs): cannot tell 100 ms" in outcome.levels[-1].reason
    assert outcome.infeasible and outcome.high == 2.0 and outcome.capacity_rps is None
    once = find_capacity(measure, [2.0], SearchPlan(ttft_p99_ms=100.0, max_runs=1, min_runs=1))
    assert len(once.levels) == 1 and once.levels[0].verdict.endswith("after 1 run(s): not passed")


def test_the_stream_server_levels_too_short_to_meet_a_p99_are_measured_again(
    stream_server, tmp_path
):
    # 60 requests a level cannot show a P99 met (fewer than 100: the next request could be
    # slower than any seen), however far under the target they are: the search measures the
    # rate again and judges the 120 requests pooled. 40 req/s is past the server's knee
    # (33.3 req/s): it fails on its load or its TTFT. A tolerance of 0.5 leaves no bisection.
    url = stream_server(ttft_ms=TTFT_MS, tpot_ms=TPOT_MS, slots=SLOTS)
    done = collect_openai(
        url, "stream-test", tmp_path, "--input-len", 8, "--output-len", TOKENS, "--rates", 20,
        "--num-requests", 60, "--warmup", 0, "--burstiness", 100, "--find-capacity",
        "--ttft-p99", 2000, "--tolerance", 0.5,
    )  # fmt: skip
    assert done.returncode in (0, 2), done.stdout + done.stderr
    (path,) = Path(tmp_path).glob("*.json")
    (run,) = RunFile.model_validate_json(path.read_bytes()).runs
    meta = run.metadata
    first = meta["search_level_000"]
    assert first.startswith("ladder; failed; kept up:"), first
    assert "over 60 requests): cannot tell 2000 ms (one run shows no spread" in first
    assert "2 are needed; fewer than 100 requests cannot show a P99 met)" in first
    second = meta["search_level_001"]
    assert "run 2 of the rate" in second and "over 120 requests in 2 runs)" in second, second
    assert [p.offered_rate_rps for p in run.points][:2] == [20.0, 20.0]
    assert all(p.requests_sent == 60 for p in run.points)
