"""InferenceX's session results (`scenario_type` such as "agentic-coding", SemiAnalysisAI/InferenceX
2026): `conc` users replaying multi-turn sessions from a public trace against one server, with
`request_accounting` (records profiled, warm-up and error drops), `request_metrics` (latencies in
SECONDS: mean, p50, p75, p90, p95, no p99; tokens; throughput over `duration_seconds`; the
trace's prefix-cache hit rate) and the server's own counters (`server_metrics`).

Read as a closed-loop level at `conc`: completed = the records profiled, failed = the error drops,
the duration and throughputs the file's; latencies converted to ms, the P99s unknown (none is
written, so a P99 target cannot be judged on it). GPUs: `num_gpus` (else `tp`); the engine
`framework`, its version from the container image's tag where it states one (`:v0.5.20-`); the
dataset the trace's loader; the server's settings (speculative decoding, expert and data
parallelism, KV offloading, disaggregation) its variant. A note says what the traffic is:
sessions whose prompts are mostly in the prefix cache, not independent requests.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

from fleetplan.core.contract import Point, Run
from fleetplan.warehouse.importers.base import (
    FileInput,
    ImportOptions,
    Parsed,
    Reader,
    build,
    hardware,
    model_name,
)
from fleetplan.warehouse.importers.inference_perf import variant_of

_SIGNATURE = frozenset(("scenario_type", "conc", "request_metrics", "request_accounting"))
_STATS = {"mean": "mean", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99"}
_VERSION = re.compile(r":v?(\d+\.\d+(?:\.\d+)?(?:\.post\d+)?)")
_SETTINGS = ("spec_decoding", "ep", "dp_attention", "kv_offloading", "disagg", "pp")


def detect(value: Any) -> bool:
    return isinstance(value, dict) and value.keys() >= _SIGNATURE


def parse(obj: dict, source: FileInput, options: ImportOptions) -> Parsed:
    file = source.name
    top = Reader(obj, file, "the result")
    for key in ("request_metrics", "request_accounting"):
        if not isinstance(obj[key], dict):
            raise top.error(key, f"expected an object, got {type(obj[key]).__name__}")
    metrics = Reader(obj["request_metrics"], file, "request_metrics")
    accounting = Reader(obj["request_accounting"], file, "request_accounting")
    completed = accounting.number("records_profiled", integer=True)
    if completed is None:
        completed = top.number("num_requests_successful", required=True, integer=True)
    throughput = metrics.obj.get("throughput") if isinstance(metrics.obj, dict) else None
    throughput = Reader(throughput if isinstance(throughput, dict) else {}, file, "throughput")
    duration = throughput.number("duration_seconds")
    if not completed or not duration:
        raise throughput.error("duration_seconds", "no request completed: nothing to store")
    point = build(
        Point,
        file,
        "",
        max_concurrency=top.positive_int_text("conc"),
        completed=completed,
        failed=accounting.number("records_error_dropped", integer=True),
        duration_s=duration,
        request_throughput_rps=completed / duration,
        output_throughput_tps=_rate(throughput, "output"),
        total_throughput_tps=_rate(throughput, "total"),
        input_tokens_mean=_mean(metrics, "input"),
        output_tokens_mean=_mean(metrics, "output_actual"),
        **_latencies(metrics),
    )
    gpu_model, label, count = hardware(
        options,
        file,
        label=top.text("hw"),
        count=top.positive_int_text("num_gpus") or top.positive_int_text("tp"),
        tool="the file",
        field="hw",
        count_field="num_gpus",
    )
    tp = top.positive_int_text("tp")
    image = top.text("image") or ""
    version = _VERSION.search(image)
    settings = [(key, obj[key]) for key in _SETTINGS if _set(obj.get(key))]
    dataset = obj.get("dataset") if isinstance(obj.get("dataset"), dict) else {}
    scenario = top.text("scenario_type")
    hit = _hit_rate(metrics)
    note = (
        f"an InferenceX {scenario} result: {top.positive_int_text('conc')} users replaying "
        "multi-turn sessions from a trace"
        + (f", {hit:.0%} of prompt tokens in the prefix cache" if hit is not None else "")
        + ": not independent requests; no P99 is written (P50 to P95 kept), so no P99 target "
        "can be judged on it"
    )
    run = build(
        Run,
        file,
        tool=f"InferenceX {scenario}",
        engine=(top.text("framework") or "").lower() or None,
        engine_version=version[1] if version else None,
        model=model_name(options, file, top.text("model")),
        dtype=top.text("precision"),
        gpu_model=gpu_model,
        gpu_label=label,
        gpu_count=count,
        tensor_parallel_size=tp if tp and tp <= count else None,
        variant=variant_of(settings) if settings else None,
        dataset=str(dataset.get("loader") or dataset.get("hf_dataset_name") or "") or None,
        source_file=PurePath(file).name,
        source_sha256=source.sha256,
        source_index=0,
        metadata={"image": image, "scenario_type": scenario or ""},
        points=(point.model_copy(update={"notes": (note,)}),),
    )
    return Parsed([run], [note], frozenset({"request_throughput_rps"}))


def _set(value: Any) -> bool:
    """A setting that changes the server: on, or a size above 1 (`ep: 1`, `disagg: false`,
    `kv_offloading: "none"` do not)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value > 1
    return isinstance(value, str) and value.strip().lower() not in ("", "none", "false", "0", "1")


def _latencies(metrics: Reader) -> dict[str, float | None]:
    latency = metrics.obj.get("latency")
    out: dict[str, float | None] = {}
    for metric in ("ttft", "tpot", "itl", "e2el"):
        found = latency.get(metric) if isinstance(latency, dict) else None
        reader = Reader(found if isinstance(found, dict) else {}, metrics.file, f"latency.{metric}")
        for theirs, ours in _STATS.items():
            seconds = reader.number(theirs)
            out[f"{metric}_{ours}_ms"] = seconds * 1000 if seconds is not None else None
    return out


def _rate(throughput: Reader, kind: str) -> float | None:
    part = throughput.obj.get(kind)
    if not isinstance(part, dict):
        return None
    return Reader(part, throughput.file, f"throughput.{kind}").number("tokens_per_second")


def _mean(metrics: Reader, kind: str) -> float | None:
    tokens = metrics.obj.get("tokens")
    part = tokens.get(kind) if isinstance(tokens, dict) else None
    if not isinstance(part, dict):
        return None
    return Reader(part, metrics.file, f"tokens.{kind}").number("mean")


def _hit_rate(metrics: Reader) -> float | None:
    cache = metrics.obj.get("cache")
    if not isinstance(cache, dict):
        return None
    return Reader(cache, metrics.file, "cache").number("theoretical_cache_hit_rate")
