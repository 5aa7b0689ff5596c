"""The probe suite against an OpenAI-compatible server: warm-up, then each load level, into one
fleetplan run file; or, with `--find-capacity`, the levels a capacity search asks for
(collectors.search decides them, `search_shape` measures them the way the suite does).

One measurement path for every server: `--backend openai` points at one that runs; `--backend
vllm` starts one (collectors.vllm_server) and then does exactly this (collectors.openai_backend
sets both up).
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import math
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import numpy as np
from pydantic import ValidationError
from tqdm import tqdm

from fleetplan.collectors.errors import CollectError
from fleetplan.collectors.events import level_started
from fleetplan.collectors.loadgen import LevelOutcome, arrival_offsets, run_level
from fleetplan.collectors.openai_client import Endpoint
from fleetplan.collectors.prompts import PromptPool, Tokenizer, make_prompts
from fleetplan.collectors.requests_log import RequestResult, impossible_figures, level_point
from fleetplan.collectors.run_file import CollectResult, RunSetup, RunWriter, collector_run
from fleetplan.collectors.search import Measured, SearchOutcome, SearchPlan, find_capacity
from fleetplan.collectors.suite import Suite, TokenShape
from fleetplan.collectors.telemetry import Telemetry
from fleetplan.core.contract import Point, Run, validation_message

# A level whose later sends are behind their schedule by over 5 % of its arrival span offered
# less than its rate: the client, not the server, set the pace.
CLIENT_SLACK = 0.05


@dataclass(frozen=True)
class Target:
    """The server measured, and the tokenizer that makes its prompts."""

    endpoint: Endpoint
    tokenizer: Tokenizer


class _ProgressBar:
    """A tqdm bar per level: requests done, live throughput, P99 TTFT so far."""

    def __init__(self, total: int, label: str, stream: TextIO):
        self.bar = tqdm(
            total=total,
            desc=label,
            unit="req",
            file=stream,
            leave=True,
            dynamic_ncols=True,
            disable=None,
        )
        self.ttfts: list[float] = []
        self.failed = 0

    def __call__(self, result: RequestResult, elapsed_s: float) -> None:
        if result.ok:
            self.ttfts.append(result.ttft_s or 0.0)
        else:
            self.failed += 1
        self.bar.update(1)
        done = self.bar.n - self.failed
        p99 = float(np.percentile(self.ttfts, 99)) * 1000 if self.ttfts else float("nan")
        self.bar.set_postfix_str(
            f"{done / max(elapsed_s, 1e-9):.2f} req/s, p99 TTFT {p99:.0f} ms, {self.failed} failed"
        )

    def close(self) -> None:
        self.bar.close()


def _rate_label(rate: float) -> str:
    return "inf" if math.isinf(rate) else f"{rate:g}/s"


def run_shape(
    target: Target,
    shape: TokenShape,
    suite: Suite,
    telemetry: Telemetry,
    *,
    stream: TextIO,
    on_level: Callable[[list[Point]], None] = lambda points: None,
) -> tuple[list[Point], list[str], bool]:
    """Warm-up, then each load level in increasing order. Stops at the first level the server
    could not finish (it died or stopped answering) or at Ctrl-C, keeping what was measured
    (`on_level` is told the shape's points after each level)."""
    prompts = make_prompts(
        target.tokenizer, suite.num_requests + suite.warmup_requests, shape.input_len, suite.seed
    )
    warmup, measured = prompts[: suite.warmup_requests], prompts[suite.warmup_requests :]
    points: list[Point] = []
    problems: list[str] = []
    try:
        if warmup:
            _warm_up(target.endpoint, warmup, shape, suite, interruptible=True)
        for level, rate in enumerate(suite.rates):
            level_started(shape.name, level, len(suite.rates))
            outcome, point = _measure_level(
                target.endpoint,
                measured,
                shape=shape,
                suite=suite,
                rate=rate,
                level=level,
                telemetry=telemetry,
                stream=stream,
            )
            points.append(point)
            on_level(points)
            level_problems, stopped = _level_problems(outcome, point, shape, rate)
            problems += level_problems
            if stopped:
                return points, problems, True
    except KeyboardInterrupt:  # Ctrl-C outside a level's requests: in the warm-up or between
        where = f"after {len(points)} level(s)" if points else "in the warm-up"
        problems.append(f"{shape.name}: interrupted {where}; the levels measured are kept")
        return points, problems, True
    return points, problems, False


def _warm_up(
    endpoint: Endpoint,
    prompts: list[tuple[str, int]],
    shape: TokenShape,
    suite: Suite,
    *,
    interruptible: bool = False,
) -> float | None:
    """Send the warm-up requests at once; their median time in the system (s). Ctrl-C during
    them stops the collection (`interruptible`, as a suite's levels do) instead of passing."""
    outcome = asyncio.run(
        run_level(endpoint, prompts, output_len=shape.output_len, rate=math.inf, seed=suite.seed)
    )
    if interruptible and outcome.interrupted:
        raise KeyboardInterrupt
    failed = [r.error for r in outcome.results if not r.ok]
    if len(failed) == len(prompts):
        raise CollectError(f"every warm-up request failed: {failed[0]}")
    return float(np.median([r.e2el_s for r in outcome.results if r.ok]))


@dataclass
class ShapeSearch:
    """One token shape's capacity search: its levels as points, in order, and the outcome."""

    points: list[Point]
    problems: list[str]
    outcome: SearchOutcome | None = None


def search_shape(
    target: Target,
    shape: TokenShape,
    suite: Suite,
    telemetry: Telemetry,
    plan: SearchPlan,
    *,
    stream: TextIO,
    on_level: Callable[[list[Point]], None] = lambda points: None,
) -> ShapeSearch:
    """Warm-up, then the capacity search's levels (collectors.search), each measured as a
    suite's level is: same prompts from the start of one pool, energy window, progress bar."""
    pool = PromptPool(target.tokenizer, shape.input_len, suite.seed)
    warmup = suite.warmup_requests
    typical = _warm_up(target.endpoint, pool.first(warmup), shape, suite) if warmup else None
    found = ShapeSearch([], [])

    def measure(rate: float, requests: int, expected: int) -> Measured:
        level = len(found.points)
        level_started(shape.name, level, expected)
        outcome, point = _measure_level(
            target.endpoint,
            pool.first(warmup + requests)[warmup:],
            shape=shape,
            suite=suite,
            rate=rate,
            level=level,
            telemetry=telemetry,
            stream=stream,
        )
        found.points.append(point)
        on_level(found.points)
        problems, stopped = _level_problems(outcome, point, shape, rate)
        found.problems.extend(problems)
        lag = None if stopped else client_lag(outcome, rate, suite, level, shape)
        return Measured(point, stopped=stopped, problem=lag)

    found.outcome = find_capacity(measure, suite.rates, plan, typical_s=typical)
    found.problems.extend(found.outcome.problems)
    return found


def client_lag(
    outcome: LevelOutcome, rate: float, suite: Suite, level: int, shape: TokenShape
) -> str | None:
    """Whether the client kept to its schedule; when it could not, why the level cannot count.
    A client too slow for the rate falls further behind with every request, so the second
    half of its sends is late by a share of the level; a passing stall delays only a few."""
    scheduled = arrival_offsets(len(outcome.results), rate, suite.burstiness, suite.seed + level)
    late = np.asarray([r.start_s for r in outcome.results]) - scheduled
    behind = float(np.median(late[len(late) // 2 :]))
    if behind <= CLIENT_SLACK * scheduled[-1]:
        return None
    return (
        f"{shape.name} at {_rate_label(rate)}: the client sent the second half of its requests "
        f"{behind:.2f} s late (median) over {scheduled[-1]:.1f} s of arrivals: it cannot drive "
        "this rate, so the capacity found may be the client's limit, not the server's"
    )


@contextmanager
def quiet_collector() -> Iterator[None]:
    """No garbage collection while a level's requests stream (the client's clock would stop
    with it): what the process holds so far is frozen out of the collector's sight, new
    objects wait for the end of the level, then are collected. A process that imported a local
    tokenizer's transformers and torch holds about 380,000 objects, whose full collections took
    27-155 ms each during a level on a 2-core host: a pause as long as a tiny model's whole
    stream, read as TTFT and as a stream that came in one piece."""
    enabled = gc.isenabled()
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if enabled:
            gc.enable()
        gc.collect()


def _measure_level(
    endpoint: Endpoint,
    prompts: list[tuple[str, int]],
    *,
    shape: TokenShape,
    suite: Suite,
    rate: float,
    level: int,
    telemetry: Telemetry,
    stream: TextIO,
) -> tuple[LevelOutcome, Point]:
    """One load level, with its energy window and progress bar."""
    bar = _ProgressBar(len(prompts), f"{shape.name} {_rate_label(rate)}", stream)
    window = f"{shape.name}-{level}"
    telemetry.begin_window(window)
    try:
        with quiet_collector():
            outcome = asyncio.run(
                run_level(
                    endpoint,
                    prompts,
                    output_len=shape.output_len,
                    rate=rate,
                    burstiness=suite.burstiness,
                    seed=suite.seed + level,
                    max_concurrency=suite.max_concurrency,
                    on_result=bar,
                )
            )
    finally:
        energy = telemetry.end_window(window)
        bar.close()
    # A level with failed requests did not measure what it set out to: incomplete.
    failed_any = any(not r.ok for r in outcome.results)
    outcome.notes.extend(impossible_figures(outcome.results))
    point = level_point(
        outcome.results,
        duration_s=outcome.duration_s,
        offered_rate_rps=rate,
        max_concurrency=suite.max_concurrency,
        burstiness=suite.burstiness,
        complete=not (outcome.interrupted or outcome.unreachable or failed_any or outcome.notes),
        energy=energy,
    )
    return outcome, point


def _level_problems(
    outcome: LevelOutcome, point: Point, shape: TokenShape, rate: float
) -> tuple[list[str], bool]:
    """What went wrong at a level, in words, and whether the shape stops there."""
    where = f"{shape.name} at {_rate_label(rate)}"
    problems = _check_lengths(outcome.results, shape, where)
    problems += [f"{where}: {note}; level marked incomplete" for note in outcome.notes]
    if point.failed:
        first = next(r.error for r in outcome.results if not r.ok)
        problems.append(
            f"{where}: {point.failed} of {point.requests_sent} requests failed (first: {first})"
        )
    if outcome.interrupted:
        problems.append(
            f"interrupted during {where}: kept {point.completed} finished requests, level "
            "marked incomplete"
        )
    elif outcome.unreachable:
        problems.append(
            f"the server stopped answering during {where}: level marked incomplete, later "
            "levels not run"
        )
    return problems, outcome.interrupted or outcome.unreachable


def _check_lengths(results: list[RequestResult], shape: TokenShape, where: str) -> list[str]:
    """Compare the token counts the server reports with the ones asked for."""
    ok = [r for r in results if r.ok]
    problems = []
    inputs = sorted({r.input_tokens for r in ok})
    if inputs and inputs != [shape.input_len]:
        problems.append(
            f"{where}: the server counted {inputs} prompt tokens for "
            f"{shape.input_len}-token prompts (special tokens such as BOS?)"
        )
    outputs = sorted({r.output_tokens for r in ok})
    if outputs and outputs != [shape.output_len]:
        problems.append(
            f"{where}: outputs of {outputs} tokens for {shape.output_len} asked "
            "(does the server honour ignore_eos?)"
        )
    return problems


def collect(
    target: Target,
    suite: Suite,
    *,
    telemetry: Telemetry,
    setup: RunSetup,
    out_dir: Path,
    stream: TextIO = sys.stderr,
    search: SearchPlan | None = None,
) -> CollectResult:
    """Measure every token shape of the suite, or search each one's capacity (`search`). The
    run file is checked before the first request (where it goes, what it will record) and
    written after every level, so whatever ends the collection, what was measured is kept."""
    started = datetime.now(UTC)
    metadata = _metadata(target, suite, telemetry, setup)
    if search is not None:
        metadata["num_requests"] = f"at least {search.min_requests} per level (capacity search)"
    setup = dataclasses.replace(setup, metadata=metadata)
    for shape in suite.shapes:
        check_setup(shape, setup, started)
    writer = RunWriter(out_dir, started, setup.file_name())
    runs: list[Run] = []
    problems: list[str] = []
    searches: list[tuple[str, SearchOutcome]] = []
    stopped = False
    for shape in suite.shapes:

        def write(points: list[Point], shape: TokenShape = shape) -> None:
            writer.write([*runs, collector_run(shape, setup, started, points)])

        if search is None:
            points, shape_problems, stopped = run_shape(
                target, shape, suite, telemetry, stream=stream, on_level=write
            )
            shape_setup = setup
        else:
            found = search_shape(
                target, shape, suite, telemetry, search, stream=stream, on_level=write
            )
            points, shape_problems, stopped = found.points, found.problems, found.outcome.stopped
            searches.append((shape.name, found.outcome))
            shape_setup = dataclasses.replace(
                setup, metadata={**setup.metadata, **found.outcome.metadata()}
            )
        problems += shape_problems
        if points:
            runs.append(collector_run(shape, shape_setup, started, points))
        if stopped:
            break
    run_file = writer.write(runs)
    return CollectResult(writer.path, run_file, problems, interrupted=stopped, searches=searches)


def check_setup(shape: TokenShape, setup: RunSetup, started: datetime) -> None:
    """Refuse, before the first request, a run that its run file could not record (a GPU
    count, a name or a version the contract refuses): measured levels are never lost to it."""
    placeholder = Point(offered_rate_rps=1.0, requests_sent=1, completed=1, duration_s=1.0)
    try:
        collector_run(shape, setup, started, [placeholder])
    except ValidationError as error:
        message = validation_message(error).detail
        raise CollectError(f"this run could not be recorded: {message}") from None


def _metadata(target: Target, suite: Suite, telemetry: Telemetry, setup: RunSetup) -> dict:
    """What every run of the collection notes about how it was measured."""
    meta = {
        "base_url": target.endpoint.base_url,
        "seed": str(suite.seed),
        "num_requests": str(suite.num_requests),
        "telemetry": telemetry.reason or "nvml",
        **setup.metadata,
    }
    if telemetry.gpus:
        meta["nvml_gpus"] = "; ".join(g.describe() for g in telemetry.gpus)
        driver = telemetry.gpus[0].driver
        if driver:
            meta["driver"] = driver
    return meta
