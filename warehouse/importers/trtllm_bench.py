"""TensorRT-LLM's `trtllm-bench throughput` / `trtllm-bench latency` reports (`--report_json`):
one JSON object, `json.dumps(ReportUtility.get_statistics_dict(), indent=4)` (NVIDIA/TensorRT-LLM,
`tensorrt_llm/bench/dataclasses/reporting.py`); or the text report it prints, in the log a user
kept (`trtllm_text` reads it into the same shape).

By definition, not by name (reporting.py): `performance.total_latency_ms` is the first request's
start to the last one's end (the level's duration); `request_latency_percentiles_ms` our E2EL,
`streaming_metrics.ttft_percentiles` our TTFT and `tpot_percentiles` our TPOT (ms; `average` is
the mean, `minimum`/`maximum` are not stored; streaming runs only); the throughputs are over the
duration, `system_output_throughput_tok_s` and `system_total_throughput_tok_s` our output and
total throughput. `request_info.num_requests` completed, `avg_input_length` and
`avg_output_length` the mean tokens. No ITL.

The load: trtllm-bench does not write its `--concurrency`. `world_info.issue_rate` is the rate its
requests were queued at. Queued far faster than served (more than twice the request throughput:
the default, every request at once), the level is stored at that rate, sent at once. Queued at
about the rate served, the requests waited for free slots: a closed loop, stored at the mean
number in flight it measured (`avg_num_concurrent_requests`, rounded up), and a note says the
concurrency is that measured mean, not the flag.

The run: `engine.model`, `engine.version` (TensorRT-LLM's), `dtype`, `world_info.world_size`
GPUs (TP x PP), `tp_size`; the GPU is `machine.name` where the report has it (newer releases),
else `--gpu`. The engine's settings (backend, quantization, KV-cache dtype, max batch size and
tokens, scheduling policy, KV-cache memory fraction, PP, EP) are the server's variant. Fixed
input and output lengths (`dataset.isl_stats` and `osl_stats` minimum = maximum) are synthetic
traffic of those lengths; else the dataset file's name. An `energy` block is not stored (its
window and method are not documented).
"""

from __future__ import annotations

import math
from pathlib import PurePath
from typing import Any

from fleetplan.core.contract import Point, Run
from fleetplan.warehouse.importers import trtllm_text
from fleetplan.warehouse.importers.base import (
    FileInput,
    ImportOptions,
    Parsed,
    Reader,
    build,
    hardware,
    model_name,
)
from fleetplan.warehouse.importers.document import BANNER, Document
from fleetplan.warehouse.importers.inference_perf import variant_of

IMPORTER = "trtllm-bench"
VERSION = "1"

_SIGNATURE = frozenset(("engine", "world_info", "request_info", "performance"))
_PERCENTILES = {"average": "mean", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99"}
# Queued faster than this many times the request throughput: every request at once.
_BURST = 2.0
_VARIANT_KEYS = (
    ("engine", "backend"),
    ("engine", "quantization"),
    ("engine", "kv_cache_dtype"),
    ("world_info", "pp_size"),
    ("world_info", "ep_size"),
    ("world_info", "max_batch_size"),
    ("world_info", "max_num_tokens"),
    ("world_info", "scheduling_policy"),
    ("world_info", "kv_cache_percentage"),
)


def _report(value: Any) -> bool:
    return isinstance(value, dict) and value.keys() >= _SIGNATURE


def detect(document: Document) -> bool:
    if document.kind == "text":  # a banner report: trtllm-bench's PERFORMANCE OVERVIEW
        return BANNER.search(document.text) is not None
    return document.kind == "json" and len(document.values) == 1 and _report(document.values[0])


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    file = source.name
    report = trtllm_text.report(document.text) if document.kind == "text" else document.values[0]
    parts = {key: _part(report, key, file) for key in (*_SIGNATURE, "streaming_metrics")}
    engine, world, requests = parts["engine"], parts["world_info"], parts["request_info"]
    warnings: list[str] = []
    point = _point(parts, file, warnings)
    machine = report.get("machine")
    label = Reader(machine, file, "machine").text("name") if isinstance(machine, dict) else None
    gpu_model, label, count = hardware(
        options,
        file,
        label=label,
        count=world.positive_int_text("world_size"),
        tool="trtllm-bench",
        field="machine.name",
        count_field="world_info.world_size",
    )
    tp = world.positive_int_text("tp_size")
    settings = [
        (key, value)
        for part, key in _VARIANT_KEYS
        if (value := parts[part].obj.get(key)) not in (None, "", "None")
        and isinstance(value, str | int | float)
        and not (key in ("pp_size", "ep_size") and value == 1)  # no pipeline, no experts
    ]
    if "energy" in report:
        warnings.append("energy: not stored (its window and method are not documented)")
    if "streaming_metrics" not in report:
        has_e2el = "request_latency_percentiles_ms" in report["performance"]
        warnings.append(
            "no streaming_metrics (a run without --streaming): TTFT and TPOT unknown, "
            + ("E2EL only" if has_e2el else "and no request latencies: its throughputs only")
        )
    run = build(
        Run,
        file,
        tool="trtllm-bench",
        engine="tensorrt-llm",
        engine_version=engine.text("version"),
        model=model_name(options, file, engine.text("model"), key="engine.model"),
        dtype=engine.text("dtype"),
        gpu_model=gpu_model,
        gpu_label=label,
        gpu_count=count,
        tensor_parallel_size=tp if tp and tp <= count else None,
        variant=variant_of(settings) if settings else None,
        source_file=PurePath(file).name,
        source_sha256=source.sha256,
        source_index=0,
        points=(point,),
        **_traffic(report, file, requests),
    )
    return Parsed([run], warnings)


def _part(report: dict, key: str, file: str) -> Reader:
    value = report.get(key, {} if key == "streaming_metrics" else None)
    reader = Reader(report, file, "the report")
    if not isinstance(value, dict):
        raise reader.error(key, f"expected an object, got {type(value).__name__}")
    return Reader(value, file, key)


def _stats(part: Reader, key: str, metric: str) -> dict[str, float | None]:
    value = part.obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise part.error(key, f"expected percentiles, got {type(value).__name__}")
    inner = Reader(value, part.file, f"{part.where}.{key}")
    return {f"{metric}_{ours}_ms": inner.number(theirs) for theirs, ours in _PERCENTILES.items()}


def _point(parts: dict[str, Reader], file: str, warnings: list[str]) -> Point:
    performance, requests = parts["performance"], parts["request_info"]
    streaming, world = parts["streaming_metrics"], parts["world_info"]
    completed = requests.number("num_requests", required=True, integer=True)
    total_ms = performance.number("total_latency_ms", required=True)
    if not completed or not total_ms:
        raise performance.error("total_latency_ms", "no request completed: nothing to store")
    rps = performance.number("request_throughput_req_s")
    served = rps or completed / (total_ms / 1000)
    issued = world.number("issue_rate")
    in_flight = requests.number("avg_num_concurrent_requests")
    load: dict[str, Any]
    if issued is not None and (math.isinf(issued) or issued > _BURST * served):
        load = {"offered_rate_rps": issued}
    elif in_flight:
        load = {"max_concurrency": max(1, math.ceil(in_flight - 1e-9))}
        warnings.append(
            f"requests queued at {issued:.4g} req/s, about the {served:.4g} served: a closed loop. "
            f"trtllm-bench does not write its --concurrency; the level's concurrency is the mean "
            f"it measured in flight ({in_flight:.4g}, rounded up to {load['max_concurrency']})"
            if issued is not None
            else f"no issue rate: the level's concurrency is the mean measured in flight "
            f"({in_flight:.4g}, rounded up)"
        )
    else:
        raise world.error("issue_rate", "missing, and no requests in flight: the load is unknown")
    return build(
        Point,
        file,
        "",
        **load,
        completed=completed,
        requests_sent=completed,
        duration_s=total_ms / 1000,
        request_throughput_rps=rps,
        output_throughput_tps=performance.number("system_output_throughput_tok_s"),
        total_throughput_tps=performance.number("system_total_throughput_tok_s"),
        input_tokens_mean=requests.number("avg_input_length"),
        output_tokens_mean=requests.number("avg_output_length"),
        **_stats(performance, "request_latency_percentiles_ms", "e2el"),
        **_stats(streaming, "ttft_percentiles", "ttft"),
        **_stats(streaming, "tpot_percentiles", "tpot"),
    )


def _traffic(report: dict, file: str, requests: Reader) -> dict[str, Any]:
    dataset = report.get("dataset")
    if not isinstance(dataset, dict):
        return {}
    lengths = []
    for key in ("isl_stats", "osl_stats"):
        stats = dataset.get(key)
        low = stats.get("minimum") if isinstance(stats, dict) else None
        high = stats.get("maximum") if isinstance(stats, dict) else None
        lengths.append(low if isinstance(low, int) and low == high and low >= 1 else None)
    if all(lengths):
        return {"dataset": "synthetic", "input_len": lengths[0], "output_len": lengths[1]}
    path = dataset.get("dataset_path")
    if isinstance(path, str) and path not in ("", "None"):
        return {"dataset": PurePath(path).stem}
    return {}
