"""Run the probe suite against an OpenAI-compatible server and write one fleetplan run file.

One measurement path for every server: `--backend openai` points at one that runs; `--backend
vllm` starts one (collectors.vllm_server) and then does exactly this.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import socket
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import numpy as np
import requests
from fleetplan.collectors.events import level_started, run_metadata
from fleetplan.collectors.loadgen import LevelOutcome, run_level
from fleetplan.collectors.openai_client import Endpoint
from fleetplan.collectors.prompts import Tokenizer, make_prompts
from fleetplan.collectors.requests_log import RequestResult, level_point
from fleetplan.collectors.suite import Suite, TokenShape
from fleetplan.collectors.telemetry import Telemetry
from tqdm import tqdm

from fleetplan import __version__
from fleetplan.core.contract import RUN_FILE_FORMAT, Point, Run, RunFile
from fleetplan.core.errors import FleetplanError
from fleetplan.core.gpus import canonical_gpu

log = logging.getLogger(__name__)


class CollectError(FleetplanError):
    """The collection could not start or could not go on."""


@dataclass(frozen=True)
class Hardware:
    """What ran the server: from the user (`--gpu`, `--gpu-count`) or from NVML."""

    label: str
    count: int

    @classmethod
    def resolve(cls, gpu: str | None, count: int | None, telemetry: Telemetry) -> Hardware:
        if gpu is not None:
            return cls(gpu, count or (len(telemetry.gpus) if telemetry.gpus else 1))
        if telemetry.gpus:
            names = sorted({g.name for g in telemetry.gpus})
            if len(names) > 1:
                raise CollectError(f"this host mixes GPUs ({', '.join(names)}): pass --gpu")
            return cls(names[0], count or len(telemetry.gpus))
        raise CollectError(
            "no GPU is visible to NVML here and none was named: pass --gpu and --gpu-count "
            "(the GPUs the server runs on)"
        )


@dataclass
class CollectResult:
    path: Path
    run_file: RunFile
    problems: list[str] = field(default_factory=list)
    interrupted: bool = False


def check_server(endpoint: Endpoint, timeout_s: float = 5.0) -> dict:
    """Fail in seconds, with the reason, when no server answers; returns /v1/models."""
    url = endpoint.base_url.rstrip("/") + "/v1/models"
    try:
        response = requests.get(url, timeout=timeout_s, headers=endpoint.headers())
    except requests.ConnectionError:
        raise CollectError(
            f"no server answers at {endpoint.base_url} (connection refused)"
        ) from None
    except requests.Timeout:
        raise CollectError(
            f"the server at {endpoint.base_url} did not answer within {timeout_s:g} s"
        ) from None
    if response.status_code != 200:
        raise CollectError(
            f"{url} answered HTTP {response.status_code}: is this an OpenAI-compatible server?"
        )
    models = [m.get("id") for m in response.json().get("data", [])]
    if endpoint.model not in models:
        raise CollectError(
            f"the server serves {', '.join(map(str, models)) or 'no model'}, "
            f"not {endpoint.model!r}: pass --model with one of those"
        )
    return response.json()


def server_version(endpoint: Endpoint) -> str | None:
    try:
        response = requests.get(endpoint.base_url.rstrip("/") + "/version", timeout=5)
        return response.json().get("version") if response.ok else None
    except (requests.RequestException, ValueError):
        return None


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
    endpoint: Endpoint,
    shape: TokenShape,
    suite: Suite,
    tokenizer: Tokenizer,
    telemetry: Telemetry,
    *,
    max_concurrency: int | None,
    stream: TextIO,
) -> tuple[list[Point], list[str], bool]:
    """Warm-up, then each load level in increasing order. Stops at the first level the server
    could not finish (it died or stopped answering) or at Ctrl-C, keeping what was measured."""
    prompts = make_prompts(
        tokenizer, suite.num_requests + suite.warmup_requests, shape.input_len, suite.seed
    )
    warmup, measured = prompts[: suite.warmup_requests], prompts[suite.warmup_requests :]
    problems: list[str] = []
    if warmup:
        outcome = asyncio.run(
            run_level(endpoint, warmup, output_len=shape.output_len, rate=math.inf, seed=suite.seed)
        )
        failed = [r.error for r in outcome.results if not r.ok]
        if len(failed) == len(warmup):
            raise CollectError(f"every warm-up request failed: {failed[0]}")
    points = []
    for level, rate in enumerate(suite.rates):
        level_started(shape.name, level, len(suite.rates))
        progress = _ProgressBar(len(measured), f"{shape.name} {_rate_label(rate)}", stream)
        window = f"{shape.name}-{level}"
        telemetry.begin_window(window)
        try:
            outcome: LevelOutcome = asyncio.run(
                run_level(
                    endpoint,
                    measured,
                    output_len=shape.output_len,
                    rate=rate,
                    burstiness=suite.burstiness,
                    seed=suite.seed + level,
                    max_concurrency=max_concurrency,
                    on_result=progress,
                )
            )
        finally:
            energy = telemetry.end_window(window)
            progress.close()
        # A level with failed requests did not measure what it set out to: incomplete.
        failed_any = any(not r.ok for r in outcome.results)
        complete = not (outcome.interrupted or outcome.unreachable or failed_any)
        point = level_point(
            outcome.results,
            duration_s=outcome.duration_s,
            offered_rate_rps=rate,
            max_concurrency=max_concurrency,
            burstiness=suite.burstiness,
            complete=complete,
            energy=energy,
        )
        points.append(point)
        problems += _check_lengths(outcome.results, shape, f"{shape.name} at {_rate_label(rate)}")
        if point.failed:
            first = next(r.error for r in outcome.results if not r.ok)
            problems.append(
                f"{shape.name} at {_rate_label(rate)}: {point.failed} of "
                f"{point.requests_sent} requests failed (first: {first})"
            )
        if outcome.interrupted:
            problems.append(
                f"interrupted during {shape.name} at {_rate_label(rate)}: kept "
                f"{point.completed} finished requests, level marked incomplete"
            )
            return points, problems, True
        if outcome.unreachable:
            problems.append(
                f"the server stopped answering during {shape.name} at "
                f"{_rate_label(rate)}: level marked incomplete, later levels not run"
            )
            return points, problems, True
    return points, problems, False


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
    endpoint: Endpoint,
    suite: Suite,
    tokenizer: Tokenizer,
    telemetry: Telemetry,
    hardware: Hardware,
    out_dir: Path,
    *,
    engine: str | None = None,
    engine_version: str | None = None,
    tensor_parallel_size: int | None = None,
    dtype: str | None = None,
    metadata: dict[str, str] | None = None,
    max_concurrency: int | None = None,
    stream: TextIO = sys.stderr,
) -> CollectResult:
    """Measure every token shape of the suite and write the run file (also when interrupted)."""
    started = datetime.now(UTC)
    runs, problems, stopped = [], [], False
    meta = {
        "base_url": endpoint.base_url,
        "seed": str(suite.seed),
        "num_requests": str(suite.num_requests),
        "telemetry": telemetry.reason or "nvml",
        **(metadata or {}),
    }
    if telemetry.gpus:
        meta["nvml_gpus"] = "; ".join(g.describe() for g in telemetry.gpus)
        driver = telemetry.gpus[0].driver
        if driver:
            meta["driver"] = driver
    for shape in suite.shapes:
        points, shape_problems, stopped = run_shape(
            endpoint,
            shape,
            suite,
            tokenizer,
            telemetry,
            max_concurrency=max_concurrency,
            stream=stream,
        )
        problems += shape_problems
        if points:
            runs.append(
                collector_run(
                    shape,
                    hardware,
                    started,
                    points,
                    meta,
                    engine=engine,
                    engine_version=engine_version,
                    model=endpoint.model,
                    dtype=dtype,
                    tensor_parallel_size=tensor_parallel_size,
                )
            )
        if stopped:
            break
    gpu_id = canonical_gpu(hardware.label).gpu_id
    path, run_file = write_run_file(
        runs, out_dir, started, f"{endpoint.model}-{hardware.count}x{gpu_id}"
    )
    return CollectResult(path, run_file, problems, interrupted=stopped)


def collector_run(
    shape: TokenShape,
    hardware: Hardware,
    started: datetime,
    points: list[Point],
    metadata: dict[str, str],
    **engine: object,
) -> Run:
    """One token shape's run as every backend records it (engine, model and dtype as given),
    stamped with what the caller's hooks add (a campaign, its host)."""
    return Run(
        tool="fleetplan collect",
        tool_version=__version__,
        gpu_model=canonical_gpu(hardware.label).gpu_id,
        gpu_label=hardware.label,
        gpu_count=hardware.count,
        host=socket.gethostname(),
        dataset=shape.name,
        input_len=shape.input_len,
        output_len=shape.output_len,
        created_at=started.replace(tzinfo=None),
        metadata={**metadata, **run_metadata()},
        points=tuple(points),
        **engine,
    )


def write_run_file(
    runs: list[Run], out_dir: Path, started: datetime, name: str
) -> tuple[Path, RunFile]:
    """One run file for everything a collection measured, named by time, model and GPUs."""
    if not runs:
        raise CollectError("nothing was measured")
    run_file = RunFile(
        format=RUN_FILE_FORMAT,
        format_version=1,
        generator=f"fleetplan collect {__version__}",
        runs=tuple(runs),
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    slug = re.sub(r"[^A-Za-z0-9.-]+", "-", name).strip("-")
    path = out_dir / f"{started:%Y%m%dT%H%M%SZ}-{slug}.json"
    path.write_text(run_file.model_dump_json(exclude_none=True), encoding="utf-8")
    return path, run_file


def summary_table(run_file: RunFile) -> str:
    lines = [
        f"{'shape':<12}{'load':>9}{'done':>6}{'fail':>6}{'req/s':>9}{'out tok/s':>11}"
        f"{'p50 TTFT':>10}{'p99 TTFT':>10}{'p99 TPOT':>10}{'energy':>12}"
    ]
    for run in run_file.runs:
        for p in run.points:
            if p.offered_rate_rps is None:
                offered = f"batch {p.max_concurrency}"
            else:
                offered = "inf" if math.isinf(p.offered_rate_rps) else f"{p.offered_rate_rps:g}"
            energy = f"{p.gpu_energy_j:,.0f} J" if p.gpu_energy_j is not None else "not meas."
            lines.append(
                f"{run.dataset or '':<12}{offered:>9}{p.completed:>6}{p.failed or 0:>6}"
                f"{p.request_throughput_rps or 0:>9.2f}{p.output_throughput_tps or 0:>11.1f}"
                f"{_ms(p.ttft_p50_ms):>10}{_ms(p.ttft_p99_ms):>10}{_ms(p.tpot_p99_ms):>10}"
                f"{energy:>12}" + ("" if p.complete else "  (incomplete)")
            )
    return "\n".join(lines)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}ms"
