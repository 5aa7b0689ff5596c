"""llm-d-benchmark's benchmark report ("BR", YAML or JSON; llm-d/llm-d-benchmark,
`llmdbenchmark/analysis/benchmark_report/`, schema_v0_1.py and schema_v0_2.py): one load level
of one harness run, the format llm-d's guides publish and inference-perf 0.7 writes beside its
stage reports (`inference-perf.partial.stage_N.yaml`, version 0.2.1).

Version 0.2 and 0.2.1 (`results.request_performance.aggregate`): every figure a Statistics object
with its `units` (`s` or `ms`; `s/token` or `ms/token`), `mean` and percentiles (`p50` ... `p99`;
`p0p1`, `p99p9` and the rest not stored). `time_to_first_token` is our TTFT, `request_latency`
our E2EL, `time_per_output_token` our TPOT, `inter_token_latency` our ITL;
`normalized_time_per_output_token` (E2EL / tokens) is none of ours, not stored. `requests.total`
is the requests sent, `failures` those that failed. The duration is `run.time.duration` (ISO
8601, "PT27.078S"), else end - start, else completed / `throughput.request_rate` (derived, so not
checked against it). The load is `scenario.load.standardized`: `rate_qps` the configured rate,
`concurrency` the cap in flight (a report that states neither is refused: nothing says its
load). The server (`scenario.stack`, its `inference_engine` components): the model, the
accelerator and its count (x replicas, summed over the components, prefill and decode alike),
the tensor parallelism, the engine and its version, and its `native.args` as the variant.

Version 0.1 (`metrics`, `scenario`): the same Statistics for latencies, plain numbers for the
throughputs, `metrics.time.duration` in seconds; the load from the harness's own configuration
(`scenario.load.args`: inference-perf's `load.stages[metadata.stage]`), the model from
`scenario.model.name` (unless "unknown") or that configuration's `server.model_name`.

A report of an inference-perf stage read beside that stage's `stage_N_lifecycle_metrics.json` is
the same level: skipped, said so, so that the stage is stored once (from the lifecycle report,
which states the rate the requests were really sent at).

A TPOT and ITL per streamed message, not per token, are not stored (`inference_perf_tokens`),
and the level says why: where the report says its harness was inference-perf of a release
before v0.5.0 (0.2: `scenario.load.standardized.tool` and `tool_version`; a 0.1 report names
its harness, `scenario.load.name`, but no release), or where the level's own figures prove it
(the time from first token to end over what its TPOT allows, `requests.output_length`'s P90
as the length).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import PurePath
from typing import Any

from fleetplan.core.contract import Point, Run
from fleetplan.core.errors import InputError, NotResultsError
from fleetplan.warehouse.importers.base import (
    FileInput,
    ImportOptions,
    Parsed,
    Reader,
    build,
    hardware,
    model_name,
)
from fleetplan.warehouse.importers.document import Document
from fleetplan.warehouse.importers.inference_perf import NOT_VARIANT, variant_of, within_a_name
from fleetplan.warehouse.importers.inference_perf_tokens import (
    harness_before_per_token,
    per_chunk_proof_of,
    without_per_message,
)
from fleetplan.warehouse.importers.llmd_load import v1_load

IMPORTER = "llm-d-benchmark-report"
VERSION = "2"

_LATENCIES = {
    "time_to_first_token": "ttft",
    "time_per_output_token": "tpot",
    "inter_token_latency": "itl",
    "request_latency": "e2el",
}
_STATS = {"mean": "mean", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99"}
_TO_MS = {"s": 1000.0, "ms": 1.0, "s/token": 1000.0, "ms/token": 1.0}
_ISO_DURATION = re.compile(
    r"^P(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)$"
)
PARTIAL_NAME = re.compile(r"^inference-perf\.partial\.stage_(\d+)\.ya?ml$")


def _version(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    version = value.get("version")
    return str(version) if isinstance(version, str | float | int) else None


def _v2(value: Any) -> bool:
    version = _version(value)
    results = value.get("results") if version else None
    return (
        version is not None
        and version.startswith("0.2")
        and isinstance(results, dict)
        and isinstance(results.get("request_performance"), dict)
    )


def _v1(value: Any) -> bool:
    version = _version(value)
    return (
        version == "0.1"
        and isinstance(value.get("metrics"), dict)
        and isinstance(value.get("scenario"), dict)
    )


def detect(document: Document) -> bool:
    return len(document.values) == 1 and (_v2(document.values[0]) or _v1(document.values[0]))


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    file = source.name
    report = document.values[0]
    partial = PARTIAL_NAME.match(PurePath(file).name)
    lifecycle = f"stage_{partial[1]}_lifecycle_metrics.json" if partial else None
    if lifecycle is not None and lifecycle in options.companions:
        raise NotResultsError(
            "inference-perf's benchmark report of one stage in llm-d's report layout "
            f"(inference-perf.partial.stage_N.yaml), the same stage as the {lifecycle} beside "
            "it, which is what is imported",
            file=file,
        )
    if _v2(report):
        return _parse_v2(report, source, options)
    return _parse_v1(report, source, options)


# -- version 0.2 --------------------------------------------------------------------------------


def _parse_v2(report: dict, source: FileInput, options: ImportOptions) -> Parsed:
    file = source.name
    top = Reader(report, file, "the report")
    aggregate = _object(Reader(report["results"], file, "results"), "request_performance")
    aggregate = _object(aggregate, "aggregate")
    scenario = _dict(report.get("scenario"))
    load = _dict(scenario.get("load"))
    standardized = _dict(load.get("standardized"))
    shape = Reader(standardized, file, "scenario.load.standardized")
    # no cap (YAML's .inf) is no concurrency limit, an unlimited rate no rate
    cap, rate = standardized.get("concurrency"), standardized.get("rate_qps")
    concurrency = None if cap == float("inf") else shape.positive_int_text("concurrency")
    rate = None if rate == float("inf") else shape.number("rate_qps")
    if not rate and not concurrency:
        raise InputError(
            "the report does not say its load (scenario.load.standardized: rate_qps or "
            "concurrency): import the harness's own results (inference-perf's "
            "stage_N_lifecycle_metrics.json) instead",
            file=file,
            field="scenario.load.standardized",
        )
    throughput = _object(aggregate, "throughput", required=False)
    figures = {
        "request_throughput_rps": _mean(throughput, "request_rate"),
        "output_throughput_tps": _mean(throughput, "output_token_rate"),
        "total_throughput_tps": _mean(throughput, "total_token_rate"),
    }
    duration, derived = _duration(top, aggregate, figures["request_throughput_rps"])
    point, notes = _point(
        aggregate,
        file,
        figures,
        duration,
        harness=(standardized.get("tool"), standardized.get("tool_version")),
        configured_rate_rps=rate,
        offered_rate_rps=rate,
        max_concurrency=concurrency,
    )
    server = _stack(scenario.get("stack"), file)
    gpu_model, label, count = hardware(
        options,
        file,
        label=server.get("gpu"),
        count=server.get("gpu_count"),
        tool="the report",
        field="scenario.stack.standardized.accelerator.model",
        count_field="scenario.stack.standardized.accelerator.count",
    )
    model = model_name(options, file, server.get("model"), key="scenario.stack.model.name")
    run = build(
        Run,
        file,
        tool=f"{shape.text('tool') or 'llm-d-benchmark'} (llm-d benchmark report)",
        tool_version=shape.text("tool_version") or None,
        engine=server.get("engine"),
        engine_version=server.get("engine_version"),
        model=model,
        gpu_model=gpu_model,
        gpu_label=label,
        gpu_count=count,
        tensor_parallel_size=server.get("tp") if (server.get("tp") or 0) <= count else None,
        variant=server.get("variant"),
        created_at=_start(report),
        source_file=PurePath(file).name,
        source_sha256=source.sha256,
        source_index=0,
        points=(point,),
        **_traffic_v2(standardized),
    )
    return Parsed([run], notes, derived)


def _stack(stack: Any, file: str) -> dict[str, Any]:
    """The server from the stack's inference-engine components."""
    if not isinstance(stack, list):
        return {}
    # (component, its standardized block) of every inference engine, each pair kept together
    engines = [
        (part, part["standardized"])
        for part in stack
        if isinstance(part, dict)
        and isinstance(part.get("standardized"), dict)
        and part["standardized"].get("kind", "inference_engine") == "inference_engine"
    ]
    if not engines:
        return {}
    found: dict[str, Any] = {}
    first = engines[0][1]
    model = first.get("model")
    if isinstance(model, dict) and isinstance(model.get("name"), str):
        found["model"] = model["name"]
    found["engine"] = first.get("tool") if isinstance(first.get("tool"), str) else None
    version = first.get("tool_version")
    found["engine_version"] = version if isinstance(version, str) and version else None
    counts, labels, roles = [], set(), []
    for part, engine in engines:
        accelerator = _dict(engine.get("accelerator"))
        replicas = engine.get("replicas") if isinstance(engine.get("replicas"), int) else 1
        count = accelerator.get("count")
        counts.append(count * replicas if isinstance(count, int) and count >= 1 else None)
        if isinstance(accelerator.get("model"), str):
            labels.add(accelerator["model"])
        parallelism = accelerator.get("parallelism")
        if isinstance(parallelism, dict) and isinstance(parallelism.get("tp"), int):
            found.setdefault("tp", parallelism["tp"])
        native = _dict(part.get("native"))
        args = _dict(native.get("args"))
        settings = [
            (str(k).lstrip("-").replace("_", "-"), _setting(v))
            for k, v in args.items()
            if str(k).lstrip("-").replace("_", "-") not in NOT_VARIANT
        ]
        role = engine.get("role")
        shown = variant_of(settings) if settings else ""
        roles.append(f"{role} x{replicas}: {shown}".strip() if len(engines) > 1 else shown)
    if all(counts):
        found["gpu_count"] = sum(counts)
    if len(labels) == 1:
        found["gpu"] = labels.pop()
    found["variant"] = within_a_name(" | ".join(r for r in roles if r)) or None
    return found


def _setting(value: Any) -> Any:
    """An engine argument's value as its command line has it: a switch, text, a JSON object."""
    if value is None:
        return True
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return value


def _traffic_v2(standardized: dict) -> dict[str, Any]:
    lengths = []
    for key in ("input_seq_len", "output_seq_len"):
        shape = standardized.get(key)
        fixed = isinstance(shape, dict) and shape.get("distribution") == "fixed"
        value = shape.get("value") if fixed else None
        lengths.append(int(value) if isinstance(value, int | float) and value >= 1 else None)
    if all(lengths):
        return {"dataset": "synthetic", "input_len": lengths[0], "output_len": lengths[1]}
    source = standardized.get("source")
    if isinstance(source, str) and source not in ("", "unknown"):
        return {"dataset": source}
    return {}


# -- version 0.1 --------------------------------------------------------------------------------


def _parse_v1(report: dict, source: FileInput, options: ImportOptions) -> Parsed:
    file = source.name
    metrics = Reader(report["metrics"], file, "metrics")
    scenario = report["scenario"]
    load = _dict(scenario.get("load"))
    args = _dict(load.get("args"))
    level = v1_load(load)
    if level is None:
        raise InputError(
            "the report does not say its load (scenario.load.args: the harness's stages, rate "
            "or concurrency): import the harness's own results instead",
            file=file,
            field="scenario.load.args",
        )
    throughput = Reader(metrics.obj.get("throughput") or {}, file, "metrics.throughput")
    figures = {
        "request_throughput_rps": throughput.number("requests_per_sec"),
        "output_throughput_tps": throughput.number("output_tokens_per_sec"),
        "total_throughput_tps": throughput.number("total_tokens_per_sec"),
    }
    time = _dict(metrics.obj.get("time"))
    duration = Reader(time, file, "metrics.time").number("duration")
    derived: frozenset[str] = frozenset()
    if not duration:
        duration, derived = _from_rate(metrics, figures["request_throughput_rps"])
    point, notes = _point(
        metrics,
        file,
        figures,
        duration,
        harness=(load.get("name"), None),  # the 0.1 schema says no release of its harness
        **level,
    )
    named = _dict(scenario.get("model"))
    model = named.get("name") if isinstance(named.get("name"), str) else None
    server = _dict(args.get("server"))
    if model in (None, "", "unknown"):
        model = server.get("model_name") if isinstance(server.get("model_name"), str) else None
    host = _dict(scenario.get("host"))
    accelerators = host.get("accelerator") if isinstance(host.get("accelerator"), list) else []
    hosts = [a for a in accelerators if isinstance(a, dict)]
    # one entry a host (scenario.host.type: prefill, decode or replica): all of them serve it
    labels = {a.get("model") for a in hosts}
    one_gpu = next(iter(labels)) if len(labels) == 1 else None  # heterogeneous: --gpu names it
    counts = [a.get("count") for a in hosts]
    gpu_model, label, count = hardware(
        options,
        file,
        label=one_gpu if isinstance(one_gpu, str) else None,
        count=sum(counts) if counts and all(isinstance(c, int) for c in counts) else None,
        tool="the report",
        field="scenario.host.accelerator",
    )
    run = build(
        Run,
        file,
        tool=f"{load.get('name') or 'llm-d-benchmark'} (llm-d benchmark report)",
        engine=server.get("type") if isinstance(server.get("type"), str) else None,
        model=model_name(options, file, model, key="scenario.model.name"),
        gpu_model=gpu_model,
        gpu_label=label,
        gpu_count=count,
        source_file=PurePath(file).name,
        source_sha256=source.sha256,
        source_index=0,
        points=(point,),
        **_traffic_v1(args),
    )
    return Parsed([run], notes, derived)


def _traffic_v1(args: dict) -> dict[str, Any]:
    data = _dict(args.get("data"))
    lengths = []
    for key in ("input_distribution", "output_distribution"):
        shape = _dict(data.get(key))
        mean = shape.get("mean")
        fixed = shape.get("std_dev") == 0 or (
            shape.get("min") is not None and shape.get("min") == shape.get("max")
        )
        lengths.append(
            int(mean)
            if fixed and isinstance(mean, int | float) and float(mean).is_integer() and mean >= 1
            else None
        )
    if data.get("type") in ("random", "synthetic") and all(lengths):
        return {"dataset": "synthetic", "input_len": lengths[0], "output_len": lengths[1]}
    return {"dataset": data["type"]} if isinstance(data.get("type"), str) else {}


# -- both ---------------------------------------------------------------------------------------


def _dict(value: Any) -> dict:
    """`value` where it is an object, else an empty one (a part the report leaves out)."""
    return value if isinstance(value, dict) else {}


def _object(reader: Reader, key: str, *, required: bool = True) -> Reader:
    value = reader.obj.get(key)
    if value is None and not required:
        return Reader({}, reader.file, f"{reader.where}.{key}")
    if not isinstance(value, dict):
        raise reader.error(
            key, "missing: expected an object" if value is None else "expected an object"
        )
    return Reader(value, reader.file, f"{reader.where}.{key}")


def _mean(reader: Reader, key: str) -> float | None:
    value = reader.obj.get(key)
    if value is None:
        return None
    if isinstance(value, int | float):  # version 0.1's plain numbers
        return reader.number(key)
    return _object(reader, key).number("mean")


def _latencies(container: Reader) -> dict[str, float | None]:
    latency = _object(container, "latency", required=False)
    values: dict[str, float | None] = {}
    for theirs, ours in _LATENCIES.items():
        if latency.obj.get(theirs) is None:
            continue
        stats = _object(latency, theirs)
        units = stats.obj.get("units")
        if units not in _TO_MS:
            raise stats.error("units", f"expected one of {', '.join(_TO_MS)}, got {units!r}")
        for key, stat in _STATS.items():
            value = stats.number(key)
            values[f"{ours}_{stat}_ms"] = value * _TO_MS[units] if value is not None else None
    return values


def _point(
    container: Reader,
    file: str,
    figures: dict,
    duration: float,
    *,
    harness: tuple[Any, Any],
    **load: Any,
) -> tuple[Point, list[str]]:
    """The level, and what a person should read about it; `harness`: the tool and release the
    report says ran it. A TPOT and ITL that are per streamed message (`inference_perf_tokens`:
    the harness is inference-perf before v0.5.0, or the level's own figures prove it) are not
    stored, and the level says why."""
    requests = _object(container, "requests")
    total = requests.number("total", required=True, integer=True)
    failures = requests.number("failures", integer=True) or 0
    if total - failures < 1:
        raise requests.error("total", "no request completed: nothing to store")
    latencies = _latencies(container)
    note = harness_before_per_token(*harness, latencies) or per_chunk_proof_of(
        latencies, _p90(requests, "output_length")
    )
    if note is not None:
        latencies = without_per_message(latencies)
    point = build(
        Point,
        file,
        "",
        **{k: v for k, v in load.items() if v},
        requests_sent=total,
        completed=total - failures,
        failed=failures,
        duration_s=duration,
        **figures,
        input_tokens_mean=_mean(requests, "input_length"),
        output_tokens_mean=_mean(requests, "output_length"),
        notes=() if note is None else (note,),
        **latencies,
    )
    return point, [] if note is None else [note]


def _p90(reader: Reader, key: str) -> float | None:
    """The P90 of a Statistics object, where the report has one."""
    value = reader.obj.get(key)
    return _object(reader, key).number("p90") if isinstance(value, dict) else None


def _duration(top: Reader, aggregate: Reader, rps: float | None) -> tuple[float, frozenset[str]]:
    run = _dict(top.obj.get("run"))
    time = _dict(run.get("time"))
    stated = time.get("duration")
    if isinstance(stated, str) and (match := _ISO_DURATION.match(stated.strip())):
        hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
        if (total := hours * 3600 + minutes * 60 + seconds) > 0:
            return total, frozenset()
    start, end = _when(time.get("start")), _when(time.get("end"))
    if start and end and end > start:
        return (end - start).total_seconds(), frozenset()
    return _from_rate(aggregate, rps)


def _from_rate(container: Reader, rps: float | None) -> tuple[float, frozenset[str]]:
    requests = _object(container, "requests")
    total = requests.number("total", required=True, integer=True)
    failures = requests.number("failures", integer=True) or 0
    if not rps:
        raise container.error(
            "throughput", "no duration and no request rate: nothing to time it by"
        )
    return (total - failures) / rps, frozenset({"duration_s"})


def _when(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def _start(report: dict) -> datetime | None:
    run = _dict(report.get("run"))
    time = _dict(run.get("time"))
    return _when(time.get("start"))
