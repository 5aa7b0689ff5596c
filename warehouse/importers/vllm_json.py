"""vLLM serving-benchmark results: `vllm bench serve` and the older
`benchmarks/benchmark_serving.py`, written with `--save-result` / `--append-result`.

Variants handled: several objects appended in one file; a JSON list of results (`vllm bench sweep
serve`'s summary.json); the misspelt key `"request_goodput:"`; `request_rate` as `"inf"`; files
without `failed` or `backend`; with or without the per-request arrays (`ttfts`, `itls`, ...).
Arrays are in seconds, statistics in ms. Where the arrays are present the statistics are recomputed
from them by fleetplan's definitions and checked against the stored ones.

The GPU comes from `--metadata` keys (`gpu_name`, `gpu_count`, ...), else from the file-name
convention of the io.net results (`vllm_200prompts16qps_MODEL_DATASET_2xGPU.json`), else from what
the user passes; it is never guessed. Objects with the same setup form one run, one point per load
level; a load level seen again starts a new run (a repeat). The per-request arrays are read in
`vllm_requests`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any

from fleetplan.core.contract import LATENCY_METRICS, Point, Run, StatsSource
from fleetplan.core.errors import InputError
from fleetplan.core.stats import disagreements
from fleetplan.warehouse.importers import serving_text
from fleetplan.warehouse.importers.base import (
    FileInput,
    ImportOptions,
    Parsed,
    Reader,
    build,
    hardware,
    model_name,
)
from fleetplan.warehouse.importers.document import SERVING, Document
from fleetplan.warehouse.importers.inference_perf import variant_of
from fleetplan.warehouse.importers.offered import send_rate
from fleetplan.warehouse.importers.vllm_requests import (
    CannotRecompute,
    request_log,
    request_timings,
)

IMPORTER = "vllm-serve-json"
VERSION = "1"

_FILE_NAME = re.compile(
    r"^vllm_(?P<prompts>\d+)prompts(?P<rate>[\d.]+|inf)qps_(?P<model>.+)_(?P<dataset>[A-Za-z0-9-]+)"
    r"_(?P<count>\d+)x(?P<gpu>[^_]+)\.json$"
)
_STAT_KEY = re.compile(r"^(mean|median|std|p\d+(\.\d+)?)_[a-z0-9_]+_ms$")
_GPU_KEYS = ("gpu_name", "gpu", "gpu_model", "gpu_type", "hardware")
_GPU_COUNT_KEYS = ("gpu_count", "num_gpus", "n_gpus")
_TP_KEYS = ("tensor_parallel_size", "tp", "tp_size")
_SETUP_STRINGS = ("backend", "endpoint_type", "label", "tokenizer_id")
# Keys vLLM writes that fleetplan reads elsewhere or does not need; not reported as unknown.
_KNOWN = {
    "date",
    "model_id",
    "num_prompts",
    "request_rate",
    "burstiness",
    "max_concurrency",
    "multi_turn_concurrency",  # a multi-turn run's load (`_multi_turn`)
    "inter_turn_delay_ms",
    "duration",
    "completed",
    "failed",
    "total_input_tokens",
    "total_output_tokens",
    "request_throughput",
    "request_goodput",
    "request_goodput:",
    "output_throughput",
    "total_token_throughput",
    "input_lens",
    "output_lens",
    "ttfts",
    "itls",
    "latencies",
    "start_times",
    "queue_times",
    "generated_texts",
    "errors",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
    "rtfx",
    "best_of",
    "use_beam_search",
    "ramp_up_strategy",
    "ramp_up_start_rps",
    "ramp_up_end_rps",
    "rps_change_events",
    "total_input_sequences",
    "input_sequence_throughput",
    "input_throughput",
    "good_completed",
    "run_number",  # `vllm bench sweep`: which repetition of the level (each is a level)
    *_SETUP_STRINGS,
}
# The server's settings a `vllm bench sweep serve` summary writes beside each level (its
# `--serve-params`, vLLM's engine arguments): another value is another server (the variant).
SERVER_ARGS = (
    "max_num_seqs",
    "max_num_batched_tokens",
    "max_model_len",
    "gpu_memory_utilization",
    "enable_prefix_caching",
    "enable_chunked_prefill",
    "kv_cache_dtype",
    "block_size",
    "quantization",
    "pipeline_parallel_size",
    "data_parallel_size",
    "enable_expert_parallel",
    "cpu_offload_gb",
    "num_scheduler_steps",
)
# `--metadata framework=sgl`: the server measured, where vLLM's client measured another engine.
_FRAMEWORKS = {"sgl": "sglang", "sglang": "sglang", "vllm": "vllm", "trt": "tensorrt-llm"}
_FRAMEWORKS |= {"trtllm": "tensorrt-llm", "tensorrt-llm": "tensorrt-llm", "tgi": "tgi"}

# Read by `_setup`, which takes a number as well as text (`--metadata gpu_count=2` is text, a
# result edited by hand may hold the number 2): never reported as ignored. Text values are also
# kept as the run's metadata, as the tool wrote them.
_READ_BY_SETUP = frozenset(
    (
        *_GPU_KEYS,
        *_GPU_COUNT_KEYS,
        *_TP_KEYS,
        *SERVER_ARGS,
        "vllm_version",
        "engine_version",
        "dtype",
        "host",
        "hostname",
        "dataset_name",
        "dataset",
    )
)


# Keys every vLLM serving result has; three of them identify the format, so that a result missing
# one of them is still recognised and rejected with a precise message.
_SIGNATURE = frozenset(
    (
        "duration",
        "completed",
        "request_throughput",
        "output_throughput",
        "total_token_throughput",
        "total_input_tokens",
        "num_prompts",
        "request_rate",
    )
)


# How vLLM's client could have recorded the GPUs, said where the file does not (a tool whose lines
# are read as vLLM's, sglang_bench, gives its own to `parse`).
VLLM_ADVICE = "; or add --metadata gpu_name=... gpu_count=... to vllm bench serve"
_NOT_METADATA = (_KNOWN - set(_SETUP_STRINGS)) | {"model_id"}


def looks_like(objects: list[Any]) -> bool:
    first = objects[0]
    if isinstance(first, list) and first and isinstance(first[0], dict):
        first = first[0]
    return isinstance(first, dict) and len(_SIGNATURE.intersection(first)) >= 3


def detect(document: Document) -> bool:
    if document.kind == "text":  # the result banner of its console log (SGLang's: sglang_bench)
        return SERVING.search(document.text) is not None and not serving_text.sglang(document.text)
    return document.kind == "json" and looks_like(document.values)


# Said of every result read from a console log's banner (vLLM's and SGLang's).
LOG_NOTE = (
    "read from the console log's result banner: statistics as printed (2 decimals), no "
    "per-request data; the GPU, as in the JSON result, from --gpu and --gpu-count"
)


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    if document.kind == "text":
        values = serving_text.results(document.text)
        parsed = parse_results(Document("json", values, "", b""), source, options, VLLM_ADVICE)
        return Parsed(parsed.runs, [LOG_NOTE, *parsed.warnings], parsed.derived)
    return parse_results(document, source, options, VLLM_ADVICE)


def parse_results(
    document: Document, source: FileInput, options: ImportOptions, advice: str
) -> Parsed:
    """The results as runs (`parse`, and the tools whose results are read as vLLM's); `advice`:
    how the tool could have recorded its GPUs, where a result does not say them."""
    file = source.name
    flat: list[Any] = []
    for value in document.values:
        flat.extend(value if isinstance(value, list) else [value])
    name_hint = _FILE_NAME.match(PurePath(file).name)
    warnings: list[str] = []
    groups: list[_Group] = []
    for index, obj in enumerate(flat):
        where = f"result {index + 1} of {len(flat)}"
        if not isinstance(obj, dict):
            raise InputError(
                f"{where}: expected a JSON object, got {type(obj).__name__}", file=file
            )
        reader = Reader(obj, file, where)
        _refuse_unmapped_latency(reader)
        setup = _setup(reader, name_hint, options, advice)
        point, point_warnings = _point(reader)
        warnings.extend(f"{where}: {w}" for w in point_warnings)
        load = (point.offered_rate_rps, point.max_concurrency)
        if not groups or groups[-1].setup != setup or load in groups[-1].loads:
            groups.append(_Group(setup, created_at=_date(reader), index=len(groups)))
        groups[-1].loads.add(load)
        groups[-1].points.append(point)
        unstored = sorted(k for k in obj if _STAT_KEY.match(k) and not _stored_stat(k))
        if unstored:
            warnings.append(
                f"{where}: {', '.join(unstored)}: fleetplan stores the mean, median, p90, p95 "
                "and p99 of each latency; these are not stored"
            )
        unknown = sorted(
            k
            for k in obj
            if k not in _KNOWN
            and k not in _READ_BY_SETUP
            and not _STAT_KEY.match(k)
            and not isinstance(obj[k], str)
        )
        if unknown:
            warnings.append(f"{where}: ignored keys {', '.join(unknown)}")
    runs = [_run(group, file, source.sha256) for group in groups]
    return Parsed(runs, list(dict.fromkeys(warnings)))  # each warning once


@dataclass
class _Group:
    """Consecutive results with one setup: one run."""

    setup: dict[str, Any]
    created_at: datetime | None
    index: int
    loads: set[tuple[float | None, int | None]] = field(default_factory=set)
    points: list[Point] = field(default_factory=list)


def _run(group: _Group, file: str, sha256: str) -> Run:
    return build(
        Run,
        file,
        **group.setup,
        created_at=group.created_at,
        source_file=PurePath(file).name,
        source_sha256=sha256,
        source_index=group.index,
        points=tuple(group.points),
    )


def _setup(
    reader: Reader, name_hint: re.Match[str] | None, options: ImportOptions, advice: str
) -> dict:
    """What identifies the run: engine, model, hardware, dataset; from the result, else from
    the io.net file name, else from the user (`--model`, `--gpu`, `--gpu-count`)."""
    obj, file, where = reader.obj, reader.file, reader.where
    model = model_name(options, file, reader.text("model_id"), key="model_id", where=where)
    label = next((reader.text(k) for k in _GPU_KEYS if reader.text(k)), None)
    count = next((reader.positive_int_text(k) for k in _GPU_COUNT_KEYS if obj.get(k)), None)
    if label is None and name_hint:
        label = name_hint["gpu"]
    if count is None and name_hint:
        count = int(name_hint["count"])
    gpu_model, label, count = hardware(
        options,
        file,
        label=label,
        count=count,
        tool="the file",
        where=where,
        field="gpu_name",
        count_field="gpu_count",
        exact_count=True,  # written by the user with --metadata, or from the file name
        advice=advice,
    )
    tp = next((reader.positive_int_text(k) for k in _TP_KEYS if obj.get(k)), None)
    metadata = {k: v for k, v in obj.items() if isinstance(v, str) and k not in _NOT_METADATA}
    settings = [
        (key, obj[key])
        for key in SERVER_ARGS
        if isinstance(obj.get(key), bool | int | float | str) and obj.get(key) != ""
    ]
    framework = _FRAMEWORKS.get(str(obj.get("framework", "")).strip().lower())
    engine = "vllm" if obj.get("backend") in (None, "vllm", "openai", "openai-chat") else None
    return {
        "tool": "vllm bench serve" if "endpoint_type" in obj else "vllm benchmark_serving.py",
        "engine": framework or engine,
        "variant": variant_of(settings) if settings else None,
        "engine_version": reader.text("vllm_version") or reader.text("engine_version"),
        "model": model,
        "dtype": reader.text("dtype"),
        "gpu_model": gpu_model,
        "gpu_label": label,
        "gpu_count": count,
        "tensor_parallel_size": tp,
        "host": reader.text("host") or reader.text("hostname"),
        "dataset": reader.text("dataset_name")
        or reader.text("dataset")
        or (name_hint["dataset"] if name_hint else None),
        "metadata": metadata,
    }


_SECONDS_STAT = re.compile(r"^(mean|median|std|p\d+(\.\d+)?)_(ttft|tpot|itl|e2el)(_s)?$")
_STORED_STAT = re.compile(r"^(mean|median|std|p50|p90|p95|p99)_(ttft|tpot|itl|e2el)_ms$")


def _stored_stat(key: str) -> bool:
    return bool(_STORED_STAT.match(key)) or not re.search(r"_(ttft|tpot|itl|e2el)_ms$", key)


def _refuse_unmapped_latency(reader: Reader) -> None:
    """A latency statistic named as vLLM's but not in ms (`median_ttft`, `p99_tpot_s`): a file
    fleetplan would read without its latencies, so it is refused, naming the key."""
    for key in reader.obj:
        if _SECONDS_STAT.match(str(key)):
            raise reader.error(
                key,
                "a latency statistic without vLLM's `_ms` unit (vLLM writes `median_ttft_ms`): "
                "fleetplan cannot tell its unit, so it refuses the file rather than drop it",
            )


def _date(reader: Reader) -> datetime | None:
    text = reader.text("date")
    if text is None:
        return None
    try:
        return datetime.strptime(text, "%Y%m%d-%H%M%S")
    except ValueError:
        pass
    try:  # ISO 8601 (a multi-turn run's "2026-09-04T20:33:17Z"), stored in UTC as the rest
        found = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise reader.error(
            "date", f"expected YYYYMMDD-HHMMSS or an ISO 8601 time, got {text!r:.40}"
        ) from None
    return found.astimezone(UTC).replace(tzinfo=None) if found.tzinfo else found


def _offered_rate(reader: Reader) -> float | None:
    value = reader.obj.get("request_rate")
    if isinstance(value, str):
        if value.strip().lower() in {"inf", "infinity"}:
            return math.inf
        raise reader.error("request_rate", f"expected a number or 'inf', got {value!r:.40}")
    rate = reader.number("request_rate")
    if rate is not None and rate <= 0:
        raise reader.error("request_rate", f"expected a rate > 0, got {rate}")
    return rate


def _reported_stats(reader: Reader) -> dict[str, float | None]:
    stats: dict[str, float | None] = {}
    # vLLM 0.6.0 named the E2EL `latency` (mean_latency_ms, p99_latency_ms)
    e2el = "latency" if _old_e2el(reader) else "e2el"
    for metric in LATENCY_METRICS:
        named = e2el if metric == "e2el" else metric
        stats[f"{metric}_mean_ms"] = reader.number(f"mean_{named}_ms")
        p50 = reader.number(f"p50_{named}_ms")
        stats[f"{metric}_p50_ms"] = p50 if p50 is not None else reader.number(f"median_{named}_ms")
        for p in (90, 95, 99):
            stats[f"{metric}_p{p}_ms"] = reader.number(f"p{p}_{named}_ms")
    return stats


def _old_e2el(reader: Reader) -> bool:
    keys = reader.obj.keys()
    return not any(k.endswith("_e2el_ms") for k in keys) and "mean_latency_ms" in keys


def _point(reader: Reader) -> tuple[Point, list[str]]:
    """One load level, its statistics recomputed from the per-request arrays where present."""
    warnings: list[str] = []
    counts = _counts(reader)
    completed = counts["completed"]
    total_in = reader.number("total_input_tokens", integer=True)
    total_out = reader.number("total_output_tokens", integer=True)
    stats = _reported_stats(reader)
    for key in ("std_ttft_ms", "p100_ttft_ms", "request_goodput", "request_goodput:"):
        if key in reader.obj and not isinstance(reader.obj[key], str):
            reader.number(key)
    stats_source = StatsSource.REPORTED
    if completed == 0:
        # vLLM writes 0 for every statistic when nothing completed: those are not latencies.
        stats = dict.fromkeys(stats)
        warnings.append("no request completed at this level")
    try:
        timings = request_timings(reader, completed, total_in, total_out)
    except CannotRecompute as why:
        timings = None
        warnings.append(f"per-request arrays not used ({why}): statistics as the file reports them")
    if timings is not None and timings.silent:
        warnings.append(
            f"{timings.silent} of {completed} completed requests streamed no token (0 output "
            "tokens, a TTFT of 0): no first token to time, so they are left out of the latency "
            "statistics"
        )
    if timings is not None and completed > 0 and timings.ttft_s.size:
        recomputed = timings.latency_stats()
        for field, value, other in disagreements(stats, recomputed):
            metric, stat, _ = field.split("_")
            key = f"{stat}_{metric}_ms"  # the file's own name for it
            warnings.append(
                f"{key} is {value:.6g} in the file but {other:.6g} from its per-request data; "
                "the per-request value is stored"
            )
        stats = recomputed
        stats_source = StatsSource.RECOMPUTED
    ramp = _ramp(reader)
    load = _load(reader, ramp)
    if ramp is not None:
        warnings.append(ramp)
    if reader.obj.get("mode") == "multi_turn":
        warnings.append(MULTI_TURN_NOTE)
    log = request_log(reader, completed) if completed > 0 else None
    if log is not None and load["offered_rate_rps"] is not None:
        sent = send_rate(log.start_s)
        if sent is not None and math.isfinite(load["configured_rate_rps"] or math.inf):
            load["offered_rate_rps"] = sent
    point = build(
        Point,
        reader.file,
        reader.where,
        **load,
        **counts,
        request_throughput_rps=reader.number("request_throughput"),
        output_throughput_tps=reader.number("output_throughput"),
        total_throughput_tps=reader.number("total_token_throughput"),
        input_tokens_mean=total_in / completed if total_in is not None and completed else None,
        output_tokens_mean=total_out / completed if total_out is not None and completed else None,
        stats_source=stats_source,
        requests=log,
        notes=() if ramp is None else (ramp,),
        **stats,
    )
    return point, warnings


def _counts(reader: Reader) -> dict[str, Any]:
    """Requests sent, completed and failed, and the duration (> 0 s)."""
    duration = reader.number("duration", required=True)
    if duration <= 0:
        raise reader.error("duration", f"expected a duration > 0 s, got {duration}")
    completed = reader.number("completed", required=True, integer=True)
    failed = reader.number("failed", integer=True)
    sent = reader.number("num_prompts", integer=True)
    if failed is None and sent is not None and sent >= completed:
        failed = sent - completed
    if sent is None and failed is not None:
        sent = completed + failed
    return {"requests_sent": sent, "completed": completed, "failed": failed, "duration_s": duration}


def _ramp(reader: Reader) -> str | None:
    """The note for a level whose rate ramped (`--ramp-up-strategy`, which overrides
    `--request-rate`), or None."""
    strategy = reader.obj.get("ramp_up_strategy")
    if not isinstance(strategy, str) or not strategy.strip():
        return None
    start, end = reader.number("ramp_up_start_rps"), reader.number("ramp_up_end_rps")
    span = f" from {start:g} to {end:g} req/s" if start is not None and end is not None else ""
    return (
        f"its rate ramped{span} (--ramp-up-strategy {strategy:.20}), not one steady rate: it is "
        "read as requests sent as fast as the ramp let them, so what it completed proves a "
        "lower bound of the server's rate, and its P99s are no one rate's"
    )


MULTI_TURN_NOTE = (
    "a multi-turn run (mode multi_turn): its conversations read as a closed loop at "
    "multi_turn_concurrency, each turn sent when the one before it answered; a turn's prompt "
    "carries the conversation so far, which the server's prefix cache may hold"
)


def _multi_turn(reader: Reader) -> int:
    """The concurrency of a multi-turn run (`mode` multi_turn, no request_rate nor
    max_concurrency): its conversations in flight, each sending a turn when the last one
    answered, a closed loop at `multi_turn_concurrency` where no delay separates the turns;
    with a delay, requests in flight are fewer than the conversations by an unknown share, so
    it is refused naming the delay."""
    delay = reader.number("inter_turn_delay_ms")
    if delay:
        raise reader.error(
            "inter_turn_delay_ms",
            f"a multi-turn run whose conversations wait {delay:g} ms between turns: fewer "
            "requests are in flight than multi_turn_concurrency says, by a share the file does "
            "not give, so it is no closed loop to store (one without the delay is)",
        )
    concurrency = reader.number("multi_turn_concurrency", integer=True)
    if not concurrency:
        raise reader.error(
            "multi_turn_concurrency",
            "a multi-turn run (mode multi_turn) without its concurrency, request_rate nor "
            "max_concurrency: no load to store",
        )
    return concurrency


def _load(reader: Reader, ramp: str | None) -> dict[str, Any]:
    """The offered load: a request rate (Poisson, or bursty) and/or a concurrency cap; a ramp
    (`ramp`, its note) as requests sent as fast as it let them."""
    rate = math.inf if ramp is not None else _offered_rate(reader)
    load = {
        "offered_rate_rps": rate,
        "configured_rate_rps": None if ramp is not None else rate,
        "max_concurrency": reader.number("max_concurrency", integer=True) or None,
        "burstiness": reader.number("burstiness") or None,
    }
    if load["offered_rate_rps"] is None and load["max_concurrency"] is None:
        if reader.obj.get("mode") != "multi_turn":
            raise reader.error("request_rate", "missing, and no max_concurrency either")
        load["max_concurrency"] = _multi_turn(reader)
    if ramp is not None:
        return load
    if load["max_concurrency"] is not None and rate is not None and math.isinf(rate):
        # `--max-concurrency N --request-rate inf`: N requests in flight, each sent when one
        # finishes: a closed loop at concurrency N, not a burst of all requests at once
        load["offered_rate_rps"] = None
    return load
