"""What a collection leaves behind: one fleetplan run file (a run per token shape), written the
same way by every backend, and the table `fleetplan collect` prints of it."""

from __future__ import annotations

import errno
import hashlib
import math
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from fleetplan import __version__
from fleetplan.collectors.errors import CollectError
from fleetplan.collectors.events import run_metadata
from fleetplan.collectors.hardware import Hardware
from fleetplan.collectors.search import SearchOutcome
from fleetplan.collectors.suite import TokenShape
from fleetplan.core.contract import RUN_FILE_FORMAT, Point, Run, RunFile
from fleetplan.core.gpus import canonical_gpu


@dataclass(frozen=True)
class RunSetup:
    """What ran, as each of a collection's runs records it: GPUs, model and engine."""

    hardware: Hardware
    model: str
    engine: str | None = None
    engine_version: str | None = None
    dtype: str | None = None
    tensor_parallel_size: int | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)

    def file_name(self, prefix: str = "") -> str:
        """How a run file of this setup is named (after its time): model and GPUs."""
        gpu_id = canonical_gpu(self.hardware.label).gpu_id
        return f"{prefix}{self.model}-{self.hardware.count}x{gpu_id}"


@dataclass
class CollectResult:
    path: Path
    run_file: RunFile
    problems: list[str] = field(default_factory=list)
    interrupted: bool = False
    # `--find-capacity`: each token shape's search, (shape name, outcome)
    searches: list[tuple[str, SearchOutcome]] = field(default_factory=list)


def collector_run(
    shape: TokenShape, setup: RunSetup, started: datetime, points: list[Point]
) -> Run:
    """One token shape's run as every backend records it, stamped with what the caller's level
    events add (a campaign, its host)."""
    return Run(
        tool="fleetplan collect",
        tool_version=__version__,
        gpu_model=canonical_gpu(setup.hardware.label).gpu_id,
        gpu_label=setup.hardware.label,
        gpu_count=setup.hardware.count,
        host=socket.gethostname(),
        dataset=shape.name,
        input_len=shape.input_len,
        output_len=shape.output_len,
        created_at=started.replace(tzinfo=None),
        metadata={**setup.metadata, **run_metadata()},
        points=tuple(points),
        engine=setup.engine,
        engine_version=setup.engine_version,
        model=setup.model,
        dtype=setup.dtype,
        tensor_parallel_size=setup.tensor_parallel_size,
    )


class RunWriter:
    """Where a collection's run file goes, checked before the first request and rewritten
    (to a temporary file, then renamed over it) after every level: an interruption, a crash
    or a full disk later leaves the levels measured so far, never a half-written file.

    The file always imports with the default limits: where the per-request data would take
    it past them, the largest levels' request logs are left out (their statistics stay, the
    run's metadata says which)."""

    def __init__(self, out_dir: Path, started: datetime, name: str):
        slug = re.sub(r"[^A-Za-z0-9.-]+", "-", name).strip("-")
        if len(slug) > MAX_SLUG:  # a file name is at most 255 bytes
            digest = hashlib.sha256(slug.encode()).hexdigest()[:12]
            slug = f"{slug[: MAX_SLUG - 13]}-{digest}"
        self.path = out_dir / f"{started:%Y%m%dT%H%M%SZ}-{slug}.json"
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            probe = out_dir / f".{self.path.name}.probe"
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as error:
            raise CollectError(
                f"cannot write run files to {out_dir}: {_os_reason(error)}"
            ) from None

    def write(self, runs: list[Run]) -> RunFile:
        """Write what was measured so far; the run file as written."""
        run_file = fitted(_run_file(runs))
        data = run_file.model_dump_json(exclude_none=True).encode()
        temporary = self.path.with_name(f".{self.path.name}.tmp")
        try:
            with open(temporary, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, self.path)
        except OSError as error:
            temporary.unlink(missing_ok=True)
            raise CollectError(
                f"cannot write the run file {self.path}: {_os_reason(error)}"
            ) from None
        return run_file


MAX_SLUG = 180


def _os_reason(error: OSError) -> str:
    if error.errno == errno.ENOSPC:
        return "the disk is full"
    return error.strerror or type(error).__name__


def _run_file(runs: list[Run]) -> RunFile:
    if not runs:
        raise CollectError("nothing was measured")
    return RunFile(
        format=RUN_FILE_FORMAT,
        format_version=1,
        generator=f"fleetplan collect {__version__}",
        runs=tuple(runs),
    )


def fitted(run_file: RunFile) -> RunFile:
    """The run file within the import's default size and value limits: the largest request
    logs left out until it fits (each run's metadata says which levels lost theirs)."""
    from fleetplan.warehouse.importers.base import ImportOptions  # the limits ingest applies
    from fleetplan.warehouse.importers.document import count_values

    limits = ImportOptions()
    size_limit, value_limit = limits.size_limit(), limits.value_limit()
    while True:
        data = run_file.model_dump_json(exclude_none=True).encode()
        if len(data) <= size_limit and count_values(data) <= value_limit:
            return run_file
        logged = [
            (len(p.requests.start_s) + sum(map(len, p.requests.itl_s)), r, i)
            for r, run in enumerate(run_file.runs)
            for i, p in enumerate(run.points)
            if p.requests is not None
        ]
        if not logged:
            return run_file  # only statistics left: as small as it gets
        _, r, i = max(logged)
        run_file = _without_log(run_file, r, i)


def _without_log(run_file: RunFile, r: int, i: int) -> RunFile:
    run = run_file.runs[r]
    points = list(run.points)
    points[i] = points[i].model_copy(update={"requests": None})
    dropped = [str(j) for j, p in enumerate(points) if p.requests is None]
    metadata = {
        **run.metadata,
        "request_log": f"left out of levels {', '.join(dropped)} to stay within the import limits",
    }
    runs = list(run_file.runs)
    runs[r] = run.model_copy(update={"points": tuple(points), "metadata": metadata})
    return run_file.model_copy(update={"runs": tuple(runs)})


def write_run_file(
    runs: list[Run], out_dir: Path, started: datetime, name: str
) -> tuple[Path, RunFile]:
    """One run file for everything a collection measured, named by time, model and GPUs."""
    writer = RunWriter(out_dir, started, name)
    return writer.path, writer.write(runs)


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
