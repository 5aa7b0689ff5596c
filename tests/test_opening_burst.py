"""A level that opens faster than it goes on (issue 32): GuideLLM 0.8.1 sends a rate level's first
third at about 1.8x the rest's rate (benchmarks/RESULTS.md, "GuideLLM's pair at 400 requests a
level"); the import says so on the level, and never of Poisson arrivals or a closed loop."""

from __future__ import annotations

import numpy as np
import pytest

from fleetplan.core.contract import RUN_FILE_FORMAT, Point, RequestLog, Run, RunFile
from fleetplan.warehouse.importers.base import ImportOptions
from fleetplan.warehouse.importers.offered import opening_note, rate_notes
from fleetplan.warehouse.importers.registry import parse, read_file
from tests.support.paths import ROOT


def poisson_starts(rate: float, n: int, seed: int) -> list[float]:
    gaps = np.random.default_rng(seed).exponential(1 / rate, n)
    return [float(s) for s in np.cumsum(gaps) - gaps[0]]


def opening_starts(rate: float, n: int, *, faster: float, seed: int = 7) -> list[float]:
    """Poisson gaps, the first third of them shortened `faster` times (GuideLLM's opening)."""
    gaps = np.random.default_rng(seed).exponential(1 / rate, n)
    gaps[: n // 3] /= faster
    return [float(s) for s in np.cumsum(gaps) - gaps[0]]


def logged_point(starts: list[float], **update) -> Point:
    """A rate level of fleetplan's own with these send times, each request 0.5 s."""
    n = len(starts)
    log = RequestLog(
        start_s=tuple(starts),
        ttft_s=(0.05,) * n,
        e2el_s=(0.5,) * n,
        itl_s=((),) * n,
        input_tokens=(16,) * n,
        output_tokens=(1,) * n,
        error=("",) * n,
    )
    fields = dict(
        offered_rate_rps=4.0,
        completed=n,
        failed=0,
        duration_s=starts[-1] + 0.5,
        ttft_p50_ms=50.0,
        ttft_p99_ms=50.0,
        e2el_p50_ms=500.0,
        e2el_p99_ms=500.0,
        output_tokens_mean=1.0,
        requests=log,
    )
    return Point(**{**fields, **update})


def run_file(path, *points: Point):
    run = Run(
        tool="fleetplan collect",
        model="test/model",
        gpu_model="rtx-4090",
        gpu_count=1,
        dataset="chat",
        points=points,
    )
    run_file = RunFile(format=RUN_FILE_FORMAT, format_version=1, runs=(run,))
    path.write_text(run_file.model_dump_json())
    return path


@pytest.mark.parametrize("n", [30, 60, 200, 400])
def test_poisson_arrivals_are_never_said_to_open_with_a_burst(n):
    said = [opening_note(poisson_starts(4.0, n, seed)) for seed in range(200)]
    assert said.count(None) == len(said)


def test_an_opening_at_1_8x_the_rest_is_said_with_its_figures():
    note = opening_note(opening_starts(4.0, 400, faster=1.8))
    assert note is not None and note.startswith("opened with a burst: its first 133 requests")
    first, rest = note.split(" sent at ")[1].split(" req/s")[0], note.split(" at ")[2]
    assert float(first) > 1.5 * float(rest.split(" req/s")[0])
    assert "not Poisson arrivals by chance" in note
    # a backlog released at once, as GuideLLM's first level: the same
    assert opening_note(opening_starts(2.0, 400, faster=30)) is not None
    # too few requests to tell, however it opened
    assert opening_note(opening_starts(4.0, 29, faster=30)) is None
    # a first third sent all at once: the extreme of it
    at_once = opening_note([0.0] * 41 + [0.25 * k for k in range(1, 80)])
    assert at_once is not None and "its first 41 requests sent at once" in at_once
    assert "the other 80 at 4 req/s" in at_once


def test_the_import_notes_a_bursting_level_and_leaves_a_closed_loop_alone(tmp_path):
    burst = logged_point(opening_starts(4.0, 300, faster=1.8))
    steady = logged_point(poisson_starts(4.0, 300, seed=3))
    # a closed loop at concurrency 16: its first 16 requests all start at once, by design
    closed_starts = [0.0] * 16 + [0.25 * k for k in range(1, 285)]
    closed = logged_point(closed_starts, offered_rate_rps=None, max_concurrency=16)
    path = run_file(tmp_path / "run.json", burst, steady, closed)
    options = ImportOptions()
    parsed = parse(read_file(path, options), options)
    opened = [w for w in parsed.warnings if "opened with a burst" in w]
    assert len(opened) == 1 and opened[0].startswith("run 1 of 1, level 1: opened with a burst")
    notes = [[n for n in p.notes if "opened with a burst" in n] for p in parsed.runs[0].points]
    assert [len(n) for n in notes] == [1, 0, 0]
    # the level is stored as it ran: the note is the only change
    assert parsed.runs[0].points[0].requests.start_s == burst.requests.start_s
    # notes are added once: a file imported again (its notes kept) is not noted twice
    again, warnings = rate_notes(parsed.runs)
    assert again[0].points[0].notes == parsed.runs[0].points[0].notes and not warnings


def test_the_committed_guidellm_rate_sweep_of_60_requests_is_not_noted():
    """Its first thirds were sent at 1.55x the rest (4.0 and 8.1 against 2.6 and 5.2 req/s):
    within what 60 Poisson arrivals may give, so no note (the 400-request run is noted)."""
    path = ROOT / "tests/fixtures/real_clients/guidellm-rate/benchmarks.json"
    options = ImportOptions(gpu="cpu", gpu_count=1)
    parsed = parse(read_file(path, options), options)
    assert parsed.runs and parsed.runs[0].points
    assert not [w for w in parsed.warnings if "opened with a burst" in w]


def test_a_log_without_send_times_spread_out_is_left_alone():
    assert opening_note((0.0,) * 40) is None
