"""fleetplan run files (`"format": "fleetplan.runs"`, `RUN_FILE_FORMAT`): the data contract as
JSON, strictly validated. Collectors write them; the bundled sample data ships as one. Statistics
of a point that carries its request log are recomputed from it and checked against the stored
ones."""

from __future__ import annotations

import math
from pathlib import PurePath

import numpy as np

from fleetplan.core.contract import RUN_FILE_FORMAT, Point, RequestLog, Run, RunFile, StatsSource
from fleetplan.core.errors import InputError
from fleetplan.core.stats import RequestTimings, disagreements
from fleetplan.warehouse.importers.base import FileInput, ImportOptions, Parsed, validation
from fleetplan.warehouse.importers.document import Document
from fleetplan.warehouse.importers.offered import send_rate

IMPORTER = "fleetplan-runs"
VERSION = "1"
FORMAT = RUN_FILE_FORMAT


def detect(document: Document) -> bool:
    first = document.values[0] if document.values else None
    return isinstance(first, dict) and first.get("format") == FORMAT


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    file = source.name
    if len(document.values) > 1:
        raise InputError("a fleetplan run file holds one JSON document", file=file)
    with validation(file):
        run_file = RunFile.model_validate_json(document.data)
    runs = _with_origins(run_file.runs, source)
    warnings: list[str] = []
    checked = []
    for r, run in enumerate(runs):
        points = []
        for i, point in enumerate(run.points):
            if point.requests is None:
                points.append(point)
                continue
            updated, problems = _recompute(point, point.requests)
            warnings += [f"runs.{r}.points.{i}: {p}" for p in problems]
            points.append(_sent_at(updated, point.requests))
        checked.append(run.model_copy(update={"points": tuple(points)}))
    return Parsed(checked, warnings)


def _with_origins(runs: tuple[Run, ...], source: FileInput) -> list[Run]:
    """Each run with the file it came from (where it does not say), no two from one origin."""
    file, sha256 = source.name, source.sha256
    found = []
    seen: set[tuple[str, int]] = set()
    for position, run in enumerate(runs):
        fill = {}
        if run.source_file is None:
            fill["source_file"] = PurePath(file).name
        if run.source_sha256 is None:
            fill["source_sha256"] = sha256
        if run.source_index is None:
            fill["source_index"] = position
        run = run.model_copy(update=fill) if fill else run
        origin = (run.source_sha256, run.source_index)
        if origin in seen:
            raise InputError(
                f"two runs claim the same origin (source_sha256 {origin[0][:12]}..., source_index "
                f"{origin[1]})",
                file=file,
                field=f"runs.{position}.source_index",
            )
        seen.add(origin)
        found.append(run)
    return found


def _sent_at(point: Point, log: RequestLog) -> Point:
    """A level of fleetplan's own run at the rate its requests were sent at (its request log's
    send times), the rate it was configured at beside it (a file that states both keeps both)."""
    rate = point.offered_rate_rps
    if rate is None or math.isinf(rate) or point.configured_rate_rps is not None:
        return point
    sent = send_rate(log.start_s)
    if sent is None:
        return point
    return point.model_copy(update={"offered_rate_rps": sent, "configured_rate_rps": rate})


def _recompute(point: Point, log: RequestLog) -> tuple[Point, list[str]]:
    """Statistics from the per-request timings, checked against the stored ones."""
    ok = log.succeeded
    if len(ok) != point.completed:
        return point, [
            f"completed is {point.completed} but the request log has {len(ok)} successes"
        ]
    if not ok:
        return point, []
    timings = RequestTimings(
        ttft_s=np.array([log.ttft_s[i] for i in ok], dtype=float),
        e2el_s=np.array([log.e2el_s[i] for i in ok], dtype=float),
        output_tokens=np.array([log.output_tokens[i] for i in ok], dtype=float),
        itl_s=np.array([gap for i in ok for gap in log.itl_s[i]], dtype=float),
    )
    recomputed = timings.latency_stats()
    stored = {name: getattr(point, name) for name in recomputed}
    problems = [
        f"{name} is {value:.6g} in the file but {other:.6g} from its request log"
        for name, value, other in disagreements(stored, recomputed)
    ]
    return point.model_copy(update={**recomputed, "stats_source": StatsSource.RECOMPUTED}), problems
