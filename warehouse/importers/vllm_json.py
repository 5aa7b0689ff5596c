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
level; a load level seen again starts a new run (a repeat).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import numpy as np
from fleetplan.warehouse.importers.document import Document
from fleetplan.warehouse.importers.values import Reader
from pydantic import ValidationError

from fleetplan.core.contract import LATENCY_METRICS, Point, Run, StatsSource, validation_message
from fleetplan.core.errors import InputError
from fleetplan.core.gpus import canonical_gpu
from fleetplan.core.stats import RequestTimings, disagreements, pooled

if TYPE_CHECKING:
    from fleetplan.warehouse.importers import FileInput, ImportOptions

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
    *_SETUP_STRINGS,
}


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


_NOT_METADATA = (_KNOWN - set(_SETUP_STRINGS)) | {"model_id"}


def looks_like(objects: list[Any]) -> bool:
    first = objects[0]
    if isinstance(first, list) and first and isinstance(first[0], dict):
        first = first[0]
    return isinstance(first, dict) and len(_SIGNATURE.intersection(first)) >= 3


def detect(document: Document) -> bool:
    return document.kind == "json" and looks_like(document.values)


def parse(
    document: Document, source: FileInput, options: ImportOptions
) -> tuple[list[Run], list[str]]:
    return parse_results(
        source.name,
        document.values,
        source.sha256,
        model=options.model,
        gpu=options.gpu,
        gpu_count=options.gpu_count,
    )


def parse_results(
    file: str,
    objects: list[Any],
    sha256: str,
    *,
    model: str | None = None,
    gpu: str | None = None,
    gpu_count: int | None = None,
) -> tuple[list[Run], list[str]]:
    flat: list[Any] = []
    for value in objects:
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
        setup = _setup(reader, name_hint, model=model, gpu=gpu, gpu_count=gpu_count)
        point, point_warnings = _point(reader)
        warnings.extend(f"{where}: {w}" for w in point_warnings)
        load = (point.offered_rate_rps, point.max_concurrency)
        if not groups or groups[-1].setup != setup or load in groups[-1].loads:
            groups.append(_Group(setup, created_at=_date(reader), index=len(groups)))
        groups[-1].loads.add(load)
        groups[-1].points.append(point)
        unknown = sorted(
            k
            for k in obj
            if k not in _KNOWN and not _STAT_KEY.match(k) and not isinstance(obj[k], str)
        )
        if unknown:
            warnings.append(f"{where}: ignored keys {', '.join(unknown)}")
    return [_run(group, file, sha256) for group in groups], _dedupe(warnings)


@dataclass
class _Group:
    """Consecutive results with one setup: one run."""

    setup: dict[str, Any]
    created_at: datetime | None
    index: int
    loads: set[tuple[float | None, int | None]] = field(default_factory=set)
    points: list[Point] = field(default_factory=list)


def _run(group: _Group, file: str, sha256: str) -> Run:
    try:
        return Run(
            **group.setup,
            created_at=group.created_at,
            source_file=PurePath(file).name,
            source_sha256=sha256,
            source_index=group.index,
            points=tuple(group.points),
        )
    except ValidationError as error:
        raise validation_message(error, file=file) from None


def _setup(
    reader: Reader,
    name_hint: re.Match[str] | None,
    *,
    model: str | None,
    gpu: str | None,
    gpu_count: int | None,
) -> dict[str, Any]:
    obj = reader.obj
    file_model = reader.text("model_id")
    chosen_model = _fill(reader, "model_id", file_model, model, "--model")
    if chosen_model is None:
        raise reader.error("model_id", "missing: pass the model (--model)")

    label = next((reader.text(k) for k in _GPU_KEYS if reader.text(k)), None)
    count = next((reader.positive_int_text(k) for k in _GPU_COUNT_KEYS if obj.get(k)), None)
    if label is None and name_hint:
        label = name_hint["gpu"]
    if count is None and name_hint:
        count = int(name_hint["count"])
    if (
        gpu is not None
        and label is not None
        and canonical_gpu(gpu).gpu_id != canonical_gpu(label).gpu_id
    ):
        raise reader.error("gpu_name", f"the file says {label!r} but --gpu says {gpu!r}")
    label = label or gpu
    count = _fill(reader, "gpu_count", count, gpu_count, "--gpu-count")
    if label is None:
        raise reader.error(
            "gpu_name",
            "the file does not say which GPU ran it: pass --gpu and --gpu-count (or add "
            "--metadata gpu_name=... gpu_count=... to vllm bench serve)",
        )
    if count is None:
        raise reader.error("gpu_count", "the file does not say how many GPUs: pass --gpu-count")
    identity = canonical_gpu(label)
    tp = next((reader.positive_int_text(k) for k in _TP_KEYS if obj.get(k)), None)
    metadata = {k: v for k, v in obj.items() if isinstance(v, str) and k not in _NOT_METADATA}
    return {
        "tool": "vllm bench serve" if "endpoint_type" in obj else "vllm benchmark_serving.py",
        "engine": "vllm" if obj.get("backend") in (None, "vllm", "openai", "openai-chat") else None,
        "engine_version": reader.text("vllm_version") or reader.text("engine_version"),
        "model": chosen_model,
        "dtype": reader.text("dtype"),
        "gpu_model": identity.gpu_id,
        "gpu_label": label,
        "gpu_count": count,
        "tensor_parallel_size": tp,
        "host": reader.text("host") or reader.text("hostname"),
        "dataset": reader.text("dataset_name")
        or reader.text("dataset")
        or (name_hint["dataset"] if name_hint else None),
        "metadata": metadata,
    }


def _fill(reader: Reader, key: str, from_file: Any, given: Any, flag: str) -> Any:
    if given is None:
        return from_file
    if from_file is not None and str(from_file) != str(given):
        raise reader.error(key, f"the file says {from_file!r} but {flag} says {given!r}")
    return given


def _date(reader: Reader) -> datetime | None:
    text = reader.text("date")
    if text is None:
        return None
    try:
        return datetime.strptime(text, "%Y%m%d-%H%M%S")
    except ValueError:
        raise reader.error("date", f"expected YYYYMMDD-HHMMSS, got {text!r:.40}") from None


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
    for metric in LATENCY_METRICS:
        stats[f"{metric}_mean_ms"] = reader.number(f"mean_{metric}_ms")
        p50 = reader.number(f"p50_{metric}_ms")
        stats[f"{metric}_p50_ms"] = p50 if p50 is not None else reader.number(f"median_{metric}_ms")
        for p in (90, 95, 99):
            stats[f"{metric}_p{p}_ms"] = reader.number(f"p{p}_{metric}_ms")
    return stats


def _point(reader: Reader) -> tuple[Point, list[str]]:
    warnings: list[str] = []
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
        timings = _timings(reader, completed, total_in, total_out)
    except _CannotRecompute as why:
        timings = None
        warnings.append(f"per-request arrays not used ({why}): statistics as the file reports them")
    if timings is not None and completed > 0:
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
    values = dict(
        offered_rate_rps=_offered_rate(reader),
        max_concurrency=reader.number("max_concurrency", integer=True) or None,
        burstiness=reader.number("burstiness") or None,
        requests_sent=sent,
        completed=completed,
        failed=failed,
        duration_s=duration,
        request_throughput_rps=reader.number("request_throughput"),
        output_throughput_tps=reader.number("output_throughput"),
        total_throughput_tps=reader.number("total_token_throughput"),
        input_tokens_mean=total_in / completed if total_in is not None and completed else None,
        output_tokens_mean=total_out / completed if total_out is not None and completed else None,
        stats_source=stats_source,
        **stats,
    )
    if values["offered_rate_rps"] is None and values["max_concurrency"] is None:
        raise reader.error("request_rate", "missing, and no max_concurrency either")
    try:
        return Point(**values), warnings
    except ValidationError as error:
        problem = validation_message(error)
        raise InputError(
            f"{reader.where}: {problem.reason}", file=reader.file, field=problem.field
        ) from None


class _CannotRecompute(Exception):
    """Per-request arrays are present but not enough to recompute; the reason is a warning."""


def _timings(
    reader: Reader, completed: int, total_in: int | None, total_out: int | None
) -> RequestTimings | None:
    obj = reader.obj
    if "ttfts" not in obj:
        return None
    ttfts = reader.array("ttfts", None)
    n = ttfts.size
    output_lens = reader.array("output_lens", n)
    input_lens = reader.array("input_lens", n)
    latencies = reader.array("latencies", n)
    itls = obj.get("itls")
    if itls is not None and (
        not isinstance(itls, list) or len(itls) != n or not all(isinstance(g, list) for g in itls)
    ):
        raise reader.error("itls", f"expected a list of {n} lists of chunk gaps (seconds)")
    errors = obj.get("errors")
    if errors is not None:
        if not isinstance(errors, list) or len(errors) != n:
            raise reader.error("errors", f"expected a list of {n} error texts")
        ok = np.array([not e for e in errors], dtype=bool)
    elif n == completed:
        ok = np.ones(n, dtype=bool)
    else:
        raise _CannotRecompute("no `errors` array says which requests failed")
    if int(ok.sum()) != completed:
        raise reader.error(
            "completed", f"is {completed} but the per-request data has {int(ok.sum())} successes"
        )
    if input_lens is not None and total_in is not None and int(input_lens[ok].sum()) != total_in:
        raise reader.error(
            "total_input_tokens",
            f"is {total_in} but input_lens of the completed requests sum to "
            f"{int(input_lens[ok].sum())}",
        )
    if output_lens is None or (itls is None and latencies is None):
        raise _CannotRecompute("`output_lens` and `itls` or `latencies` are needed")
    if output_lens.size and (output_lens != np.round(output_lens)).any():
        raise reader.error("output_lens", "expected whole numbers of tokens")
    if total_out is not None and int(output_lens[ok].sum()) != total_out:
        raise reader.error(
            "total_output_tokens",
            f"is {total_out} but output_lens of the completed requests sum to "
            f"{int(output_lens[ok].sum())}",
        )
    kept = [g for g, good in zip(itls, ok, strict=True) if good] if itls is not None else []
    try:
        gaps = np.asarray(pooled(kept)) if kept else np.zeros(0)
    except (TypeError, ValueError):  # a nested or ragged element
        raise reader.error("itls", "expected lists of chunk gaps (numbers, seconds)") from None
    if gaps.size and (
        gaps.dtype.kind not in "if" or not np.isfinite(gaps).all() or (gaps < 0).any()
    ):
        raise reader.error("itls", "expected non-negative finite chunk gaps (seconds)")
    gaps = gaps.astype(float)
    if latencies is not None:
        e2el = latencies[ok]
    else:
        ends = np.cumsum([len(g) for g in kept])
        sums = np.concatenate(([0.0], np.cumsum(gaps)))
        e2el = ttfts[ok] + (sums[ends] - sums[np.concatenate(([0], ends[:-1]))])
    return RequestTimings(
        ttft_s=ttfts[ok],
        e2el_s=e2el,
        output_tokens=output_lens[ok],
        itl_s=gaps,
    )


def _dedupe(warnings: list[str]) -> list[str]:
    return list(dict.fromkeys(warnings))
