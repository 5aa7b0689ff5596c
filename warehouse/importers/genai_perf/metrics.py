"""How GenAI-Perf and AIPerf write a metric: `{"unit": ..., "avg": ..., "p50": ...}` under the
metric's name, in the summary (`profile_export_*.json`), in GPU telemetry and, as `{"value",
"unit"}`, in AIPerf's per-request records. Every time is converted to ms (or s) by its unit."""

from __future__ import annotations

from typing import Any

from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers.base import optional_number

TO_MS = {
    "ns": 1e-6,
    "us": 1e-3,
    "µs": 1e-3,
    "ms": 1.0,
    "s": 1000.0,
    "sec": 1000.0,
    "seconds": 1000.0,
}
TO_S = {unit: factor / 1000 for unit, factor in TO_MS.items()}
# Metric names every summary has; two of them (with a request_throughput object) identify one.
_SIGNS = {"request_throughput", "request_latency", "request_count"}


def summary_metrics(value: Any) -> dict[str, Any] | None:
    """The metrics of a summary export (flat, or under "records"), or None if it is not one."""
    if not isinstance(value, dict):
        return None
    inner = value.get("records") if isinstance(value.get("records"), dict) else value
    if len(_SIGNS & inner.keys()) >= 2 and isinstance(inner.get("request_throughput"), dict):
        return inner
    return None


def is_request_record(value: Any) -> bool:
    """One line of AIPerf's per-request file (profile_export.jsonl)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("metadata"), dict)
        and isinstance(value.get("metrics"), dict)
    )


class Metric:
    """One named metric of a set of metrics (absent: every statistic is None)."""

    def __init__(self, metrics: dict[str, Any], name: str, file: str):
        self.raw, self.name, self.file = metrics.get(name), name, file

    def present(self) -> bool:
        return isinstance(self.raw, dict)

    def stat(self, stat: str, *, to: dict[str, float] | None = None) -> float | None:
        """A statistic (avg, p99, min, ...), converted by the metric's unit with `to`."""
        if not self.present():
            return None
        value = optional_number(self.raw.get(stat), file=self.file, field=f"{self.name}.{stat}")
        if value is None or to is None:
            return value
        unit = str(self.raw.get("unit", "")).strip().lower()
        if unit not in to:
            raise InputError(
                f"unknown time unit {unit!r}", file=self.file, field=f"{self.name}.unit"
            )
        return value * to[unit]
