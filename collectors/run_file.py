"""What a collection leaves behind: one fleetplan run file (a run per token shape), written the
same way by every backend, and the table `fleetplan collect` prints of it."""

from __future__ import annotations

import math
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
