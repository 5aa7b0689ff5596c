"""AIPerf's per-request records (`profile_export.jsonl`, one JSON object per request), read
together with the summary export of the same run: latency statistics recomputed from the requests
by fleetplan's definitions. Alone, the file does not say the load, so it is not a format."""

from __future__ import annotations

import math

import numpy as np

from fleetplan.core.contract import RequestLog
from fleetplan.core.errors import InputError
from fleetplan.core.stats import RequestTimings
from fleetplan.warehouse.importers.base import ImportOptions, build, finite
from fleetplan.warehouse.importers.document import companion_values
from fleetplan.warehouse.importers.genai_perf.metrics import TO_MS, is_request_record

REQUESTS_FILE = "profile_export.jsonl"
_NAMES = (
    "time_to_first_token",
    "ttft",
    "request_latency",
    "output_sequence_length",
    "inter_chunk_latency",
)


def from_records(
    data: bytes, summary_file: str, completed: int, options: ImportOptions
) -> tuple[dict[str, float | None], list[str], RequestLog | None]:
    """Latency statistics recomputed from AIPerf's per-request records (our definitions), and
    the level's request log where every record has its send time (`request_start_ns`)."""
    file = f"{summary_file} (its {REQUESTS_FILE})"
    ttft, e2el, out_tokens, gaps = [], [], [], []
    sends: list[tuple[float | None, float | None, float | None, int, int, str]] = []
    records = companion_values(
        data, name=file, limit=options.size_limit(), max_values=options.value_limit()
    )
    for i, record in enumerate(records):
        if not is_request_record(record):
            raise InputError(f"line {i + 1}: not a request record", file=file)
        phase = record["metadata"].get("benchmark_phase", "profiling")
        if phase not in ("profiling", None):
            continue
        start_ns = _nanoseconds(record["metadata"].get("request_start_ns"))
        if record.get("error"):
            sends.append((start_ns, None, None, 0, 0, str(record["error"])[:2000] or "error"))
            continue
        values = {name: _record_value(record["metrics"], name, file, i) for name in _NAMES}
        first = values["time_to_first_token"] or values["ttft"]
        if values["request_latency"] is None or values["output_sequence_length"] is None:
            raise InputError(
                f"line {i + 1}: no request_latency or output_sequence_length", file=file
            )
        ttft.append(first[0] / 1000 if first else np.nan)
        e2el.append(values["request_latency"][0] / 1000)
        out_tokens.append(values["output_sequence_length"][0])
        chunk = values["inter_chunk_latency"]
        gaps += [g / 1000 for g in chunk] if chunk else []
        isl = _record_value(record["metrics"], "input_sequence_length", file, i)
        ins = int(isl[0]) if isl else 0
        sends.append((start_ns, ttft[-1] if first else None, e2el[-1], ins, out_tokens[-1], ""))
    if len(e2el) != completed:
        raise InputError(
            f"{len(e2el)} successful requests in the per-request file, {completed} in the "
            "summary: not the same run",
            file=file,
        )
    timings = RequestTimings(
        ttft_s=np.array(ttft),
        e2el_s=np.array(e2el),
        output_tokens=np.array(out_tokens, dtype=float),
        itl_s=np.array(gaps),
    )
    stats = {
        k: (None if v is not None and math.isnan(v) else v)
        for k, v in timings.latency_stats().items()
    }
    recomputed = f"latency statistics recomputed from {len(e2el)} requests in {REQUESTS_FILE}"
    return stats, [recomputed], _log(sends, file)


def _log(sends: list[tuple], file: str) -> RequestLog | None:
    """The records as a request log (seconds from the first send), or None where a record
    lacks its send time or a success its TTFT."""
    if len(sends) < 2 or any(start is None for start, *_ in sends):
        return None
    if any(not error and (ttft is None or e2el is None) for _, ttft, e2el, *_, error in sends):
        return None
    first = min(start for start, *_ in sends)
    return build(
        RequestLog,
        file,
        "",
        start_s=tuple((start - first) / 1e9 for start, *_ in sends),  # whole ns first
        ttft_s=tuple(row[1] for row in sends),
        e2el_s=tuple(row[2] for row in sends),
        itl_s=tuple(() for _ in sends),
        input_tokens=tuple(row[3] for row in sends),
        output_tokens=tuple(int(row[4]) for row in sends),
        error=tuple(row[5] for row in sends),
    )


def _record_value(metrics: dict, name: str, file: str, line: int) -> list[float] | None:
    """A per-request metric in ms (times) or tokens, as a list (one value, or chunk gaps)."""
    entry = metrics.get(name)
    if entry is None:
        return None
    if not isinstance(entry, dict) or "value" not in entry:
        raise InputError(f"line {line + 1}: expected {{value, unit}}", file=file, field=name)
    value, unit = entry["value"], str(entry.get("unit", "")).lower()
    values = value if isinstance(value, list) else [value]
    if not all(finite(v) is not None and v >= 0 for v in values):
        raise InputError(f"line {line + 1}: expected non-negative numbers", file=file, field=name)
    factor = TO_MS.get(unit, 1.0)  # no unit, or one we do not know: counts (tokens)
    return [float(v) * factor for v in values]


def _nanoseconds(value: object) -> int | None:
    """A wall-clock time in ns (about 1.8e18: past a float's exact integers, so kept whole)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63:
        return None
    return value
