"""GuideLLM benchmark reports (JSON or YAML), in each layout:
`{"benchmarks"}` (0.2-0.3), `{"args","benchmarks"}` (0.4), `{"metadata":{"version":1},"args",
"benchmarks"}` (0.5-0.6) and `{"metadata":{"version":2},"config","benchmarks"}` (0.7+).

By definition, not by name: GuideLLM's inter-token latency, (last - first token) / (n - 1), is our
TPOT; its "time per output token" includes the first token and is not used; it has no chunk-gap
ITL. Latencies come from `metrics.<name>.successful`; throughputs are recomputed by our
definition (successful requests and their tokens over the benchmark's measured duration, which
excludes warm-up and cool-down) rather than taken from its time-averaged rates. One point per
benchmark, its strategy (synchronous, concurrent, throughput, constant, poisson) giving the load.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from fleetplan.core.contract import Point, RequestLog, Run
from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers.base import (
    FileInput,
    ImportOptions,
    Parsed,
    Reader,
    build,
    finite,
    hardware,
    model_name,
    timestamp,
)
from fleetplan.warehouse.importers.capped import bound
from fleetplan.warehouse.importers.document import Document
from fleetplan.warehouse.importers.offered import EVEN_GAPS_NOTE, replay_note, send_rate

IMPORTER = "guidellm"
VERSION = "1"
_SHAPE = re.compile(r"prompt_tokens=(\d+)\b.*?output_tokens=(\d+)\b")


def _report(value: Any) -> dict | None:
    if not isinstance(value, dict) or not isinstance(value.get("benchmarks"), list):
        return None
    first = value["benchmarks"][0] if value["benchmarks"] else None
    if isinstance(first, dict) and isinstance(first.get("metrics"), dict):
        return value
    return None


def detect(document: Document) -> bool:
    return (
        document.kind in {"json", "yaml"}
        and bool(document.values)
        and _report(document.values[0]) is not None
    )


def _find(value: Any, keys: tuple[str, ...], depth: int = 0) -> Any:
    """The first value under one of `keys`, searched breadth-first a few levels down."""
    if depth > 4 or not isinstance(value, dict):
        return None
    for key in keys:
        if key in value and value[key] not in (None, "", []):
            return value[key]
    for child in value.values():
        found = _find(child, keys, depth + 1)
        if found is not None:
            return found
    return None


class _Bench(Reader):
    """One benchmark of the report (one load level), its metrics' distributions read as ours."""

    def __init__(self, bench: dict, file: str, index: int):
        super().__init__(bench, file, f"benchmark {index + 1}")

    def distribution(self, name: str) -> dict | None:
        metric = self.obj["metrics"].get(name)
        if metric is None:
            return None
        successful = metric.get("successful") if isinstance(metric, dict) else None
        if not isinstance(successful, dict):
            raise self.error(f"metrics.{name}.successful", "expected a distribution")
        return successful

    def stats(self, name: str, ours: str, scale: float = 1.0) -> dict[str, float | None]:
        dist = self.distribution(name) or {}
        percentiles = dist.get("percentiles") if isinstance(dist.get("percentiles"), dict) else {}
        where = f"metrics.{name}.successful"
        out = {f"{ours}_mean_ms": self.check(dist.get("mean"), f"{where}.mean")}
        for p in ("p50", "p90", "p95", "p99"):
            value = percentiles.get(p, dist.get("median") if p == "p50" else None)
            out[f"{ours}_{p}_ms"] = self.check(value, f"{where}.percentiles.{p}")
        if not dist.get("count"):
            out = dict.fromkeys(out)  # no successful request: not latencies
        return {k: v * scale if v is not None else None for k, v in out.items()}

    def total(self, name: str) -> float | None:
        dist = self.distribution(name)
        return (
            self.check(dist.get("total_sum"), f"metrics.{name}.successful.total_sum")
            if dist
            else None
        )

    def mean(self, name: str) -> float | None:
        dist = self.distribution(name)
        return self.check(dist.get("mean"), f"metrics.{name}.successful.mean") if dist else None


def _strategy(bench: dict, report: dict) -> dict:
    for holder in (bench.get("config"), bench.get("args"), bench.get("scheduler")):
        if isinstance(holder, dict) and isinstance(holder.get("strategy"), dict):
            return holder["strategy"]
    found = _find(bench, ("strategy",))
    return found if isinstance(found, dict) else {}


def _count(value: Any) -> int | None:
    """A whole positive count, or None."""
    number = finite(value)
    return int(number) if number is not None and 1 <= number < 2**31 else None


def _load(strategy: dict, bench: _Bench, log: RequestLog | None) -> dict[str, Any]:
    kind = str(strategy.get("type_") or strategy.get("type") or "").lower()
    if kind == "synchronous":
        return {"max_concurrency": 1}
    if kind == "concurrent":
        streams = _count(strategy.get("streams") or strategy.get("max_concurrency"))
        return {"max_concurrency": streams} if streams is not None else {}
    if kind == "throughput":
        return {
            "offered_rate_rps": math.inf,
            "max_concurrency": _count(strategy.get("max_concurrency")),
        }
    if kind in {"constant", "poisson", "async"}:
        rate = bench.check(strategy.get("rate"), "strategy.rate")
        out: dict[str, Any] = {"offered_rate_rps": rate}
        if math.isfinite(rate):
            out["configured_rate_rps"] = rate
        if kind == "poisson":
            out["burstiness"] = 1.0
        elif kind == "constant":
            out["notes"] = (EVEN_GAPS_NOTE,)
        return out
    if kind == "trace":  # 0.8's replay profile: a trace's arrivals, at its time scale
        sent = send_rate(log.start_s) if log is not None else None
        if sent is None:
            raise bench.error("requests", "a trace replay without its requests' send times")
        scale = finite(strategy.get("time_scale"))
        scaled = f" at time scale {scale:g}" if scale is not None else ""
        note = replay_note(
            f"{scaled} (GuideLLM's replay profile)", f"the {sent:.4g} req/s it sent on average"
        )
        return {"offered_rate_rps": sent, "notes": (note,)}
    raise bench.error("strategy", f"unknown load strategy {kind!r}")


def _shape(bench: dict, report: dict) -> tuple[int, int] | None:
    """The fixed synthetic shape the benchmark asked for, or None (a dataset, or varied lengths).
    0.2-0.6 write it as a string `prompt_tokens=N,output_tokens=M`; 0.7+ as a data spec."""
    config = report.get("config") if isinstance(report.get("config"), dict) else {}
    spec = config.get("spec") if isinstance(config.get("spec"), dict) else {}
    data = spec.get("data")
    if isinstance(data, list) and data:
        specs = [d for d in data if isinstance(d, dict)]
        if len(specs) != 1 or specs[0].get("kind") != "synthetic_text":
            return None
        return _fixed(specs[0])
    found = _find(bench, ("data",)) or _find(report, ("data",))
    if isinstance(found, str) and found.lstrip().startswith("{"):
        # 0.2-0.5 with the data given as JSON: '{"type": "emulated", "prompt_tokens": 512, ...}'
        try:
            spec = json.loads(found)
        except ValueError:
            spec = None
        if isinstance(spec, dict):
            return _fixed(spec)
    match = _SHAPE.search(str(found)) if found is not None else None
    return (int(match[1]), int(match[2])) if match else None


def _fixed(d: dict) -> tuple[int, int] | None:
    """A synthetic data spec's prompt and output tokens where both are fixed (no spread)."""
    fixed = all(
        d.get(f"{name}_stdev") in (None, 0) for name in ("prompt_tokens", "output_tokens")
    ) and all(
        d.get(f"{name}_{bound}") in (None, d.get(name))
        for name in ("prompt_tokens", "output_tokens")
        for bound in ("min", "max")
    )
    p, o = d.get("prompt_tokens"), d.get("output_tokens")
    if fixed and isinstance(p, int) and isinstance(o, int) and p >= 1 and o >= 1:
        return p, o
    return None


@dataclass
class _Seen:
    """What the benchmarks of one report say about the run they share."""

    models: set[str] = field(default_factory=set)
    shapes: set[tuple[int, int] | None] = field(default_factory=set)
    starts: list[float] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    report = _report(document.values[0])
    assert report is not None
    file = source.name
    points, seen = [], _Seen()
    for index, raw in enumerate(report["benchmarks"]):
        if not isinstance(raw, dict) or not isinstance(raw.get("metrics"), dict):
            raise InputError(f"benchmark {index + 1}: no metrics", file=file)
        bench = _Bench(raw, file, index)
        points.append(_point(bench, report))
        _note(bench, report, seen)
        # its notes said once a level, but the even gaps' once for the report
        seen.warnings += [f"{bench.where}: {n}" for n in points[-1].notes if n != EVEN_GAPS_NOTE]
    even = sum(EVEN_GAPS_NOTE in p.notes for p in points)
    if even:
        seen.warnings.append(f"{even} of {len(points)} benchmark(s): {EVEN_GAPS_NOTE}")
    if len(seen.models) > 1:
        raise InputError(
            f"the report mixes models ({', '.join(sorted(seen.models))})", file=file, field="model"
        )
    shape = seen.shapes.pop() if len(seen.shapes) == 1 else None
    gpu_model, label, count = hardware(options, file, tool="GuideLLM")
    version = _find(report.get("metadata") or {}, ("guidellm_version", "version"))
    run = build(
        Run,
        file,
        tool="guidellm",
        tool_version=str(version) if version is not None else None,
        model=model_name(options, file, next(iter(seen.models), None)),
        gpu_model=gpu_model,
        gpu_label=label,
        gpu_count=count,
        dataset="synthetic" if shape else None,
        input_len=shape[0] if shape else None,
        output_len=shape[1] if shape else None,
        created_at=timestamp(min(seen.starts)) if seen.starts else None,
        source_file=PurePath(file).name,
        source_sha256=source.sha256,
        source_index=0,
        points=tuple(points),
    )
    # throughputs are recomputed from the tokens over the duration: no stated figure to check
    derived = frozenset({"request_throughput_rps", "output_throughput_tps", "total_throughput_tps"})
    return Parsed([run], seen.warnings, derived)


def _totals(bench: _Bench) -> tuple[int, int, int]:
    """(successful, errored, incomplete) requests."""
    raw = bench.obj
    # 0.2-0.3 keep the counts beside the metrics, 0.4+ inside them.
    totals = raw.get("request_totals") or raw["metrics"].get("request_totals") or {}
    if not isinstance(totals, dict):
        raise bench.error("request_totals", "expected the request counts")
    return (
        int(bench.check(totals.get("successful"), "request_totals.successful") or 0),
        int(bench.check(totals.get("errored"), "request_totals.errored") or 0),
        int(bench.check(totals.get("incomplete"), "request_totals.incomplete") or 0),
    )


def _point(bench: _Bench, report: dict) -> Point:
    raw = bench.obj
    completed, errored, incomplete = _totals(bench)
    duration = bench.check(raw.get("duration"), "duration")
    if (
        duration is None
        and isinstance(raw.get("start_time"), int | float)
        and isinstance(raw.get("end_time"), int | float)
    ):
        duration = raw["end_time"] - raw["start_time"]
    if not duration:
        raise bench.error("duration", "missing or zero: no throughput without it")
    out_tokens = bench.total("output_token_count")
    in_tokens = bench.total("prompt_token_count")
    both = out_tokens is not None and in_tokens is not None
    log = _request_log(bench, completed + errored + incomplete)
    strategy = _strategy(raw, report)
    load = _load(strategy, bench, log)
    configured = load.get("configured_rate_rps")
    if configured is not None:  # a rate asked for: stored at the rate it was really sent at
        sent = send_rate(log.start_s) if log is not None else None
        load["offered_rate_rps"] = sent if sent is not None else configured
        # GuideLLM writes a cap on the requests in flight for every rate (512, 10,240 by
        # default): kept only where it bound, and then read as the closed loop it was (`capped`)
        cap = _count(strategy.get("max_concurrency"))
        if bound(log, cap):
            load["max_concurrency"] = cap
    return build(
        Point,
        bench.file,
        bench.where,
        **load,
        requests=log,
        requests_sent=completed + errored + incomplete,
        completed=completed,
        failed=errored + incomplete,
        complete=incomplete == 0,
        duration_s=duration,
        request_throughput_rps=completed / duration,
        output_throughput_tps=out_tokens / duration if out_tokens is not None else None,
        total_throughput_tps=(out_tokens + in_tokens) / duration if both else None,
        input_tokens_mean=bench.mean("prompt_token_count"),
        output_tokens_mean=bench.mean("output_token_count"),
        **bench.stats("time_to_first_token_ms", "ttft"),
        **bench.stats("inter_token_latency_ms", "tpot"),
        **bench.stats("request_latency", "e2el", scale=1000.0),  # seconds -> ms
    )


def _note(bench: _Bench, report: dict, seen: _Seen) -> None:
    """The benchmark's model, shape, start and warnings, for the run and the person importing."""
    raw = bench.obj
    model = _find(raw, ("backend_model", "model")) or _find(report, ("model",))
    if isinstance(model, str):
        seen.models.add(model)
    seen.shapes.add(_shape(raw, report))
    if isinstance(raw.get("start_time"), int | float):
        seen.starts.append(raw["start_time"])
    seen.warnings.extend(
        f"{bench.where}: GuideLLM warned: {w['message']}"
        for w in (raw["warnings"] if isinstance(raw.get("warnings"), list) else [])
        if isinstance(w, dict) and isinstance(w.get("message"), str)
    )
    incomplete = _totals(bench)[2]
    if incomplete:
        seen.warnings.append(
            f"{bench.where}: {incomplete} requests incomplete (level marked incomplete)"
        )


_OUTCOMES = ("successful", "errored", "incomplete")


def _request_log(bench: _Bench, total: int) -> RequestLog | None:
    """The benchmark's per-request timings (0.7+ keep every request under `requests`, each with
    its `request_start_time`, latency and TTFT): the send times that say the rate the level was
    really sent at. None where GuideLLM kept a sample only (fewer requests than it counted) or
    another layout."""
    requests = bench.obj.get("requests")
    if not isinstance(requests, dict):
        return None
    rows = []
    for outcome in _OUTCOMES:
        entries = requests.get(outcome) or []
        if not isinstance(entries, list):
            return None
        for entry in entries:
            start = finite(entry.get("request_start_time")) if isinstance(entry, dict) else None
            if start is None:
                return None
            rows.append((outcome, start, entry))
    if len(rows) != total or len(rows) < 2:
        return None
    first = min(start for _, start, _ in rows)
    ok = [outcome == "successful" for outcome, _, _ in rows]
    ttft = [_seconds(e.get("time_to_first_token_ms"), 1000) for _, _, e in rows]
    e2el = [finite(e.get("request_latency")) for _, _, e in rows]
    if any(good and (t is None or e is None) for good, t, e in zip(ok, ttft, e2el, strict=True)):
        return None
    return build(
        RequestLog,
        bench.file,
        bench.where,
        start_s=tuple(start - first for _, start, _ in rows),
        ttft_s=tuple(t if good else None for t, good in zip(ttft, ok, strict=True)),
        e2el_s=tuple(e if good else None for e, good in zip(e2el, ok, strict=True)),
        itl_s=tuple(() for _ in rows),
        input_tokens=tuple(_tokens(e.get("prompt_tokens")) for _, _, e in rows),
        output_tokens=tuple(_tokens(e.get("output_tokens")) for _, _, e in rows),
        error=tuple(
            "" if good else outcome for (outcome, _, _), good in zip(rows, ok, strict=True)
        ),
    )


def _seconds(value: Any, per_second: float) -> float | None:
    number = finite(value)
    return number / per_second if number is not None and number >= 0 else None


def _tokens(value: Any) -> int:
    number = finite(value)
    return int(number) if number is not None and number >= 0 else 0
