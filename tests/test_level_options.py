"""Tools' options that change what a level means, on their real files (run here against the
vLLM CPU server: tests/fixtures/formats/README.md): `vllm bench serve`'s ramp of rates, gamma
arrivals (`--burstiness`), a rate with a concurrency cap (`--max-concurrency`) that bound or did
not, and percentiles without the P99; AIPerf's rate with a cap (`--request-rate --concurrency`);
GuideLLM's constant rate and its trace replay; inference-perf's constant load. And the cap's
reading itself (warehouse/importers/capped.py) on levels built to show it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fleetplan.core.contract import Point, RequestLog
from fleetplan.core.errors import NotResultsError
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.capped import CAP_SHARE, erlang_c, read_cap, time_at_cap
from fleetplan.warehouse.importers.offered import EVEN_GAPS_NOTE
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.ingest import FileStatus, ingest_paths
from tests.support.paths import ROOT

FOLDER = ROOT / "tests" / "fixtures" / "formats" / "vllm-bench-serve-0.32.0-options"


def only_point(variant: str):
    (path,) = (FOLDER / variant).glob("*.json")
    result = parse(
        FileInput.from_bytes(path.name, path.read_bytes()), ImportOptions(gpu="cpu", gpu_count=1)
    )
    assert result.importer == "vllm-serve-json"
    (run,) = result.runs
    (point,) = run.points
    return point, result.warnings


def test_a_ramp_is_no_steady_rate_and_says_so():
    point, warnings = only_point("ramp-linear")
    # vLLM writes request_rate 'inf' for it: not a burst of every request at once, a ramp
    assert math.isinf(point.offered_rate_rps) and point.configured_rate_rps is None
    (note,) = point.notes
    assert "ramped from 1 to 12 req/s" in note and "--ramp-up-strategy linear" in note
    assert "lower bound" in note and any(note in w for w in warnings)
    assert point.completed == 80 and point.ttft_p99_ms is not None  # its figures are kept


@pytest.mark.parametrize(
    ("variant", "words"),
    [("burst05", "burstier than Poisson"), ("burst4", "more regular than Poisson")],
)
def test_gamma_arrivals_are_an_open_loop_with_a_note_on_which_way_its_p99s_lean(variant, words):
    point, warnings = only_point(variant)
    assert point.offered_rate_rps == pytest.approx(6.0, rel=0.05)
    assert point.burstiness in (0.5, 4.0)
    (note,) = point.notes
    assert words in note
    assert ("optimistic" in note) == (point.burstiness > 1)
    assert any(note in w for w in warnings)


@pytest.mark.parametrize(
    ("variant", "cap", "configured", "basis"),
    [
        # 40 req/s asked, 2 in flight at most: sent at 33 req/s, the cap full nearly throughout
        ("cap-binds", 2, 40.0, "measured from its per-request times"),
        # the same without --save-detailed: Erlang's C from the file's throughput and mean E2EL
        ("cap-binds-summary", 2, 40.0, "Erlang's C formula"),
        # 12 req/s with 4 in flight at most: full for a few per cent of the arrivals
        ("conc-and-rate", 4, 12.0, "measured from its per-request times"),
    ],
)
def test_a_rate_whose_cap_bound_is_read_as_a_closed_loop(variant, cap, configured, basis):
    point, warnings = only_point(variant)
    assert point.offered_rate_rps is None and point.max_concurrency == cap
    assert point.configured_rate_rps == configured
    (note,) = [n for n in point.notes if "a cap full for" in n]
    assert basis in note and f"closed loop at concurrency {cap}" in note
    assert "a wait its TTFTs do not count" in note
    share = float(note.split("a cap full for ")[1].split("%")[0]) / 100
    assert share > CAP_SHARE
    assert any(note in w for w in warnings)
    assert not any("configured at" in n for n in point.notes)  # no rate to compare now


def test_aiperfs_rate_with_a_cap_is_read_the_same_way_from_its_whole_folder(warehouse):
    # aiperf profile --request-rate 40 --concurrency 2: sent at 17.9 req/s, the cap full half
    # the time; its per-request records (profile_export.jsonl) are read with the export
    folder = FOLDER.parent / "aiperf-0.13.0-rate-and-cap"
    options = ImportOptions(gpu="cpu", gpu_count=1, model="tiny-llama")
    outcomes = list(ingest_paths(warehouse, [folder], options))
    (done,) = [o for o in outcomes if o.status is FileStatus.IMPORTED]
    assert done.file.endswith("profile_export_aiperf.json")
    (note,) = [w for w in done.warnings if "a cap full for" in w]
    assert "measured from its per-request times" in note and "concurrency 2" in note
    assert "not as an open loop at 17.9 req/s" in note
    point = warehouse.connection.execute(
        "SELECT offered_rate_rps, configured_rate_rps, max_concurrency FROM points"
    ).fetchall()
    assert point == [(None, 40.0, 2)]


def test_a_cap_that_never_bound_leaves_the_open_loop_as_it_ran():
    point, _ = only_point("cap-loose-summary")  # 4 req/s, 16 in flight at most
    assert point.offered_rate_rps == 4.0 and point.max_concurrency == 16
    assert point.notes == ()


def test_percentiles_without_the_p99_import_with_the_p99s_unknown():
    point, _ = only_point("p50p90-only")
    assert point.ttft_p50_ms is not None and point.tpot_p50_ms is not None
    assert point.ttft_p99_ms is None and point.tpot_p99_ms is None and point.e2el_p99_ms is None


def test_erlang_c_is_the_chance_an_arrival_waits():
    assert erlang_c(1, 0.3) == pytest.approx(0.3)  # M/M/1: the server's utilisation
    assert erlang_c(2, 1.0) == pytest.approx(1 / 3)
    assert erlang_c(4, 0.0) == 0.0 and erlang_c(4, 4.0) == 1.0 and erlang_c(4, 9.0) == 1.0
    waits = [erlang_c(8, load) for load in (1, 2, 4, 6, 7.5)]
    assert waits == sorted(waits) and waits[0] < 1e-4 < waits[-1] < 1
    # thousands in flight (a^N / N! alone would overflow): still a probability
    assert 0 < erlang_c(2048, 2000.0) < 1 and erlang_c(2048, 1000.0) < 1e-12


def log(starts, e2els, errors=None) -> RequestLog:
    n = len(starts)
    return RequestLog(
        start_s=tuple(starts),
        ttft_s=tuple(None if e is None else e / 10 for e in e2els),
        e2el_s=tuple(e2els),
        itl_s=((),) * n,
        input_tokens=(10,) * n,
        output_tokens=(5,) * n,
        error=tuple(errors or [""] * n),
    )


def test_time_at_the_cap_is_measured_over_the_span_of_the_sends():
    # sends at 0..9 s, each request 1.5 s: two in flight for half a second after each send
    # from the second on, up to the last send (8 x 0.5 s of the 9 s span)
    starts = [float(t) for t in range(10)]
    assert time_at_cap(log(starts, [1.5] * 10), 2) == pytest.approx(4 / 9)
    assert time_at_cap(log(starts, [1.5] * 10), 3) == 0.0
    # each ends as the next is sent: never two at once
    assert time_at_cap(log(starts, [1.0] * 10), 2) == 0.0
    # a failed request has no end: not counted as in flight
    failed = log(starts, [1.5] * 9 + [None], [""] * 9 + ["timeout"])
    assert time_at_cap(failed, 2) == pytest.approx(4 / 9)
    failed_early = log(starts, [None] + [1.5] * 9, ["timeout"] + [""] * 9)
    assert time_at_cap(failed_early, 2) == pytest.approx(3.5 / 9)
    assert time_at_cap(log([0.0], [1.0]), 1) is None


def point(**fields) -> Point:
    base = {"completed": 100, "duration_s": 10.0, "request_throughput_rps": 10.0}
    return Point(**(base | fields))


def test_the_reading_needs_a_rate_a_cap_and_something_to_judge_it_by():
    open_loop = point(offered_rate_rps=10.0, configured_rate_rps=10.0)
    assert read_cap(open_loop) == (open_loop, None)
    closed = point(max_concurrency=4)
    assert read_cap(closed) == (closed, None)
    burst = point(offered_rate_rps=math.inf, max_concurrency=4)
    assert read_cap(burst) == (burst, None)
    # rate and cap, but neither per-request times nor a mean E2EL: kept, and said so
    blind = point(offered_rate_rps=10.0, max_concurrency=4)
    same, note = read_cap(blind)
    assert same is blind and "cannot be told" in note
    # a mean E2EL of 1 s at 10 req/s is 10 in flight: a cap of 4 is full (Erlang C = 1)
    full, note = read_cap(point(offered_rate_rps=10.0, max_concurrency=4, e2el_mean_ms=1000.0))
    assert full.offered_rate_rps is None and "a cap full for 100%" in note
    # 0.1 in flight against a cap of 4: never full
    kept, note = read_cap(point(offered_rate_rps=10.0, max_concurrency=4, e2el_mean_ms=10.0))
    assert kept.offered_rate_rps == 10.0 and note is None
    # no mean E2EL, but TTFT, TPOT and the output length give it
    parts = point(
        offered_rate_rps=10.0,
        max_concurrency=2,
        ttft_mean_ms=100.0,
        tpot_mean_ms=20.0,
        output_tokens_mean=46.0,
    )
    read, note = read_cap(parts)  # (100 + 20 x 45) ms = 1 s: 10 in flight, cap 2
    assert read.offered_rate_rps is None and "Erlang's C formula at 10 in flight" in note


def test_guidellms_constant_rate_is_said_to_be_more_regular_than_poisson():
    def points(path):
        result = parse(
            FileInput.from_bytes(path.name, path.read_bytes()),
            ImportOptions(gpu="cpu", gpu_count=1, model="tiny-llama"),
        )
        return [p for run in result.runs for p in run.points]

    constant = points(FOLDER.parent / "guidellm-0.6.1" / "benchmarks.json")  # --rate-type constant
    assert constant and all(p.notes[0] == EVEN_GAPS_NOTE for p in constant)
    poisson = points(
        ROOT / "tests" / "fixtures" / "real_clients" / "guidellm-rate" / "benchmarks.json"
    )
    assert poisson and all(p.burstiness == 1.0 for p in poisson)
    assert not any(EVEN_GAPS_NOTE in p.notes for p in poisson)


def test_guidellms_trace_replay_is_stored_at_the_rate_it_sent_and_its_trace_is_passed_over(
    warehouse,
):
    # guidellm run --profile kind=replay, the trace beside its report (README): GuideLLM 0.8.1's
    # "trace" strategy was refused as an unknown load strategy
    folder = FOLDER.parent / "guidellm-0.8.1-replay"
    options = ImportOptions(gpu="cpu", gpu_count=1)
    outcomes = {Path(o.file).name: o for o in ingest_paths(warehouse, [folder], options)}
    assert outcomes["benchmarks.json"].status is FileStatus.IMPORTED
    trace = outcomes["trace.jsonl"]
    assert trace.status is FileStatus.SKIPPED and "a request trace" in trace.message
    assert outcomes["console.txt"].status is FileStatus.SKIPPED
    ((offered, configured, notes),) = warehouse.connection.execute(
        "SELECT offered_rate_rps, configured_rate_rps, notes FROM points"
    ).fetchall()
    lines = (folder / "trace.jsonl").read_text().splitlines()
    span = json.loads(lines[-1])["timestamp"] - json.loads(lines[0])["timestamp"]
    assert offered == pytest.approx((len(lines) - 1) / span, rel=0.05)  # the trace's own rate
    assert configured is None
    assert "replayed a trace's arrivals at time scale 1" in notes


@pytest.mark.parametrize(
    "header",
    ["TIMESTAMP,ContextTokens,GeneratedTokens", "timestamp,input_tokens,output_tokens,class"],
)
def test_a_request_trace_in_csv_is_passed_over_naming_what_reads_it(tmp_path, header):
    path = tmp_path / "trace.csv"
    path.write_text(
        f"{header}\n2023-11-16 18:15:46.6805900,374,44{',chat' * header.count('class')}\n"
    )
    with pytest.raises(NotResultsError, match=r"a request trace .* `fleetplan workload`"):
        parse(FileInput.from_bytes(path.name, path.read_bytes()), ImportOptions())


def test_inference_perfs_constant_load_is_said_to_be_more_regular_than_poisson(warehouse):
    # load.type constant in the config.yaml beside the stage reports (README)
    folder = FOLDER.parent / "inference-perf-0.7.0-constant"
    options = ImportOptions(gpu="cpu", gpu_count=1)
    outcomes = list(ingest_paths(warehouse, [folder], options))
    imported = [o for o in outcomes if o.status is FileStatus.IMPORTED]
    assert len(imported) == 2 and all(EVEN_GAPS_NOTE in o.warnings for o in imported)
    assert not [o for o in outcomes if o.status is FileStatus.REJECTED]
    rows = warehouse.connection.execute(
        "SELECT configured_rate_rps, notes FROM points ORDER BY configured_rate_rps"
    ).fetchall()
    assert [rate for rate, _ in rows] == [4.0, 8.0]
    assert all(EVEN_GAPS_NOTE in notes for _, notes in rows)


def test_guidellms_rate_with_a_cap_that_bound_is_a_closed_loop_and_its_default_caps_are_not():
    # --profile kind=poisson,rate=40,max_concurrency=2: sent at 20.6 req/s, the cap full 71 %
    (path,) = (FOLDER.parent / "guidellm-0.8.1-rate-and-cap").glob("*.json")
    options = ImportOptions(gpu="cpu", gpu_count=1)
    result = parse(FileInput.from_bytes(path.name, path.read_bytes()), options)
    ((point,),) = [run.points for run in result.runs]
    assert point.offered_rate_rps is None and point.max_concurrency == 2
    assert point.configured_rate_rps == 40.0
    assert any("a cap full for" in n and "concurrency 2" in n for n in point.notes)
    # every rate level of GuideLLM states a cap (10,240 by default): never full, not kept
    rate = ROOT / "tests" / "fixtures" / "real_clients" / "guidellm-rate" / "benchmarks.json"
    result = parse(FileInput.from_bytes(rate.name, rate.read_bytes()), options)
    points = [p for run in result.runs for p in run.points]
    assert points and all(p.max_concurrency is None and p.offered_rate_rps for p in points)
