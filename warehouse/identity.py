"""What identity a run has: its content, never the bytes of the file that brought it, nor a
checksum the file states.

A run is the measurements (every stored figure of every point, in order) of one model on one GPU
configuration (model, GPU, GPUs per server). The same run pretty-printed, gzipped, with a byte of
white space added, copied into a fleetplan run file or exported to the CSV table and imported
back has the same key; an edited figure makes another run. Labels that describe rather than
measure (dataset, provenance, the tool's name, the file it came from, how the statistics were
computed) are not part of it: labelling a run again does not make it a new one.

Numbers are compared to 10 significant digits, so that a format that writes 15 digits and one that
writes 17 (or a float read back from text) agree.

The store computes a key from a `Run`; the migration that introduced keys (005) from stored rows,
with the same function on the same values.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence

from fleetplan.core.contract import LATENCY_FIELDS, Run

# The stored point columns that are measurements (or the load that was offered): the identity.
POINT_FIELDS: tuple[str, ...] = (
    "offered_rate_rps",
    "max_concurrency",
    "burstiness",
    "requests_sent",
    "completed",
    "failed",
    "complete",
    "duration_s",
    "request_throughput_rps",
    "output_throughput_tps",
    "total_throughput_tps",
    *LATENCY_FIELDS,
    "input_tokens_mean",
    "output_tokens_mean",
    "gpu_energy_j",
    "avg_power_w",
    "energy_method",
    "gpu_memory_used_gb",
    "gpu_utilization_pct",
)
RUN_FIELDS: tuple[str, ...] = ("model", "gpu_model", "gpu_count")


def _canonical(value: object) -> object:
    kind = type(value)
    if kind is float:  # the common case first: most stored figures (inf and nan as repr writes)
        return f"{value:.10g}"
    if kind is str or value is None:
        return value
    if kind is int:
        return f"{float(value):.10g}"
    value = getattr(value, "value", value)  # an enum as its stored text
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int | float):
        number = float(value)
        return repr(number) if math.isinf(number) else f"{number:.10g}"
    raise TypeError(f"not a stored value: {type(value).__name__}")


def content_key(setup: Sequence[object], points: Iterable[Sequence[object]]) -> str:
    """The key of a run from its `RUN_FIELDS` values and each point's `POINT_FIELDS` values."""
    content = [
        [_canonical(v) for v in setup],
        [[_canonical(v) for v in point] for point in points],
    ]
    text = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def run_key(run: Run) -> str:
    """The key of a run as a format read it."""
    setup = [getattr(run, name) for name in RUN_FIELDS]
    # a model's fields are its __dict__ (read there: a getattr each is most of a large file's key)
    points = [[vars(point)[name] for name in POINT_FIELDS] for point in run.points]
    return content_key(setup, points)


def run_keys(runs: Iterable[Run]) -> tuple[str, ...]:
    """The key of each run, in order."""
    return tuple(run_key(run) for run in runs)


def stored_keys(con) -> dict[str, str]:
    """The key of every stored run, by run id. Runs stored twice before keys existed (the same
    content from two files) keep both: the first imported has the key, a later one the key with
    its run id appended (still unique, so nothing is lost; delete the file if it is a copy)."""
    runs = con.execute(
        "SELECT r.run_id, r.model, r.gpu_model, r.gpu_count FROM runs r "
        "JOIN sources s USING (source_id) ORDER BY s.imported_at, r.run_id"
    ).fetchall()
    columns = ", ".join(POINT_FIELDS)  # fixed names above, never input
    points: dict[str, list[tuple]] = {}
    for row in con.execute(
        f"SELECT run_id, {columns} FROM points ORDER BY run_id, level_index"  # noqa: S608
    ).fetchall():
        points.setdefault(row[0], []).append(row[1:])
    keys: dict[str, str] = {}
    taken: set[str] = set()
    for run_id, *setup in runs:
        key = content_key(setup, points.get(run_id, []))
        if key in taken:
            key = f"{key}-{run_id}"
        taken.add(key)
        keys[run_id] = key
    return keys
