"""inference-perf (kubernetes-sigs/inference-perf, llm-d's benchmark tool) lifecycle reports.

inference-perf writes, per load stage, `stage_N_lifecycle_metrics.json`, and over the whole run a
`summary_lifecycle_metrics.json`, with its resolved `config.yaml` beside them. Each stage file is
one level; the summary pools the stages' requests, so it is not a level (it is skipped, said so).
Told apart by content: a stage's `load_summary` has `requested_rate` and `achieved_rate`, the
summary's has neither.

By definition, from inference-perf's `summarize_requests` (reportgen): `request_latency` is the
request's start to its last token (our E2EL); `time_to_first_token` our TTFT;
`time_per_output_token` is (last token - first token) / (output tokens - 1) per request (our
TPOT); `inter_token_latency` the gaps between consecutive streamed chunks, pooled over requests
(our ITL). `normalized_time_per_output_token` is E2EL / output tokens per request, which is none
of fleetplan's metrics (it folds the TTFT into each token): it is not stored, and a warning says
so. Every percentile the file gives (mean, median, p90, p95, p99) is stored, seconds to ms.

The load: `achieved_rate` (requests sent over the send window, `load_summary.count /
send_duration`) is the rate requests were really sent at (`offered_rate_rps`); `requested_rate`
is the configured rate (`configured_rate_rps`). A stage of a `concurrent` load (config.yaml's
`load.type`, with the stage's `concurrency_level`) is a closed-loop level: its concurrency, and
no rate. Successes and failures are the stage's `successes.count` and `failures.count`.

The duration is not stated: it is successes / `requests_per_sec` (inference-perf's throughput
window, first request's start to last request's end), so throughputs are not checked against it
(`DERIVED`). Model, GPU and GPUs per server come from the files beside the results where they
say it (`config.yaml`'s `server.model_name`; an experiment's `exp-config.yaml` `model` and
`tensor_parallelism`, which is the server's GPU count; Kubernetes `manifests.yaml`: the
`nvidia.com/gpu` limit and the GPU product label), else from `--model`, `--gpu`, `--gpu-count`.
"""

from __future__ import annotations

import re
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
from fleetplan.warehouse.importers.document import Document, companion_yaml

IMPORTER = "inference-perf"
VERSION = "1"
# Figures this format derives rather than reads: not checked against the figures it states.
DERIVED = frozenset({"duration_s"})

STAGE_NAME = re.compile(r"^stage_(\d+)_lifecycle_metrics\.json$")
# The files read beside a stage report (by base name), where the tool and the experiment wrote
# them: config.yaml beside it, the server's settings beside it or one folder up.
CONTEXT_NAMES = ("config.yaml", "exp-config.yaml", "manifests.yaml")

_STATS = {"mean": "mean", "median": "p50", "p90": "p90", "p95": "p95", "p99": "p99"}
_METRICS = {
    "time_to_first_token": "ttft",
    "time_per_output_token": "tpot",
    "inter_token_latency": "itl",
    "request_latency": "e2el",
}
_NOT_STORED = {
    "normalized_time_per_output_token": "E2EL / output tokens per request, none of fleetplan's "
    "metrics (it folds the TTFT into every token): not stored",
}


def _lifecycle(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("load_summary"), dict)
        and isinstance(value.get("successes"), dict)
        and "failures" in value
    )


def detect(document: Document) -> bool:
    return document.kind == "json" and len(document.values) == 1 and _lifecycle(document.values[0])


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    file = source.name
    report = document.values[0]
    load = Reader(report["load_summary"], file, "load_summary")
    if "requested_rate" not in load.obj and "achieved_rate" not in load.obj:
        raise NotResultsError(
            "inference-perf's summary over all stages (summary_lifecycle_metrics.json), not a "
            "level: its stages are imported from the stage_N_lifecycle_metrics.json beside it",
            file=file,
        )
    context = _context(options, file)
    stage = _stage_number(file)
    warnings: list[str] = []
    point = _point(report, load, file, _stage_load(context, stage, file), warnings)
    model = model_name(
        options,
        file,
        context.get("model"),
        key="config.yaml: server.model_name",
    )
    gpu_model, label, count = hardware(
        options,
        file,
        label=context.get("gpu"),
        count=context.get("gpu_count"),
        tool="inference-perf",
        field="gpu",
        count_field="gpu_count",
        advice=" (or keep the experiment's exp-config.yaml or manifests.yaml beside the results)",
    )
    run = build(
        Run,
        file,
        tool="inference-perf",
        engine=context.get("engine"),
        model=model,
        gpu_model=gpu_model,
        gpu_label=label,
        gpu_count=count,
        tensor_parallel_size=context.get("tp") if (context.get("tp") or 0) <= count else None,
        dataset=context.get("dataset"),
        input_len=context.get("input_len"),
        output_len=context.get("output_len"),
        source_file=PurePath(file).name,
        source_sha256=source.sha256,
        source_index=0,
        metadata={"stage": str(stage)} if stage is not None else {},
        points=(point,),
    )
    return Parsed([run], warnings, DERIVED)


def _stage_number(file: str) -> int | None:
    match = STAGE_NAME.match(PurePath(file).name)
    return int(match[1]) if match else None


def _point(
    report: dict, load: Reader, file: str, stage_load: dict[str, Any], warnings: list[str]
) -> Point:
    successes = Reader(report["successes"], file, "successes")
    failures = report.get("failures")
    failed = None
    if isinstance(failures, dict):
        failed = Reader(failures, file, "failures").number("count", integer=True)
    elif failures is not None:
        raise InputError("expected an object with its count", file=file, field="failures")
    completed = successes.number("count", required=True, integer=True)
    throughput = successes.obj.get("throughput")
    if not isinstance(throughput, dict):
        raise successes.error("throughput", "missing: no throughput and no duration without it")
    rates = Reader(throughput, file, "successes.throughput")
    rps = rates.number("requests_per_sec")
    if completed == 0 or not rps:
        raise successes.error("count", "no request succeeded in this stage: nothing to store")
    stats = _latencies(successes, warnings)
    requested = load.number("requested_rate")
    achieved = load.number("achieved_rate")
    closed_loop = stage_load.get("max_concurrency") is not None
    return build(
        Point,
        file,
        "",
        offered_rate_rps=None if closed_loop else (achieved or requested or None),
        configured_rate_rps=None if closed_loop else (requested or None),
        max_concurrency=stage_load.get("max_concurrency"),
        requests_sent=load.number("count", integer=True),
        completed=completed,
        failed=failed,
        duration_s=completed / rps,
        request_throughput_rps=rps,
        output_throughput_tps=rates.number("output_tokens_per_sec"),
        total_throughput_tps=rates.number("total_tokens_per_sec"),
        input_tokens_mean=_mean(successes, "prompt_len"),
        output_tokens_mean=_mean(successes, "output_len"),
        **stats,
    )


def _latencies(successes: Reader, warnings: list[str]) -> dict[str, float]:
    latency = successes.obj.get("latency")
    if latency is None:
        return {}
    if not isinstance(latency, dict):
        raise successes.error("latency", "expected an object of latency statistics")
    stats: dict[str, float] = {}
    for key, value in latency.items():
        if key in _NOT_STORED:
            warnings.append(f"successes.latency.{key}: {_NOT_STORED[key]}")
            continue
        if key not in _METRICS:
            raise successes.error(
                f"latency.{key}",
                "a latency fleetplan cannot map to its definitions (TTFT, TPOT, ITL, E2EL): "
                "refused rather than dropped",
            )
        if not isinstance(value, dict):
            raise successes.error(f"latency.{key}", "expected an object of statistics")
        reader = Reader(value, successes.file, f"successes.latency.{key}")
        for stat, ours in _STATS.items():
            seconds = reader.number(stat)
            if seconds is not None:
                stats[f"{_METRICS[key]}_{ours}_ms"] = seconds * 1000
    return stats


def _mean(successes: Reader, key: str) -> float | None:
    value = successes.obj.get(key)
    if not isinstance(value, dict):
        return None
    return Reader(value, successes.file, f"successes.{key}").number("mean")


# -- the files beside the results -------------------------------------------------------------


def _context(options: ImportOptions, file: str) -> dict[str, Any]:
    """What config.yaml, exp-config.yaml and manifests.yaml beside the results say."""
    found: dict[str, Any] = {}
    config = _yaml(options, "config.yaml", file)
    if isinstance(config, dict):
        found |= _from_config(config)
    experiment = _yaml(options, "exp-config.yaml", file)
    if isinstance(experiment, dict):
        if isinstance(experiment.get("model"), str) and experiment["model"].strip():
            found.setdefault("model", experiment["model"].strip())
        tp = _whole(experiment.get("tensor_parallelism", experiment.get("tensor_parallel_size")))
        if tp:
            found["tp"] = tp
            found.setdefault("gpu_count", tp)
        found.setdefault("engine", "vllm" if "max_num_seqs" in experiment else None)
    manifests = _yaml(options, "manifests.yaml", file, every=True)
    if manifests:
        found |= {k: v for k, v in _from_manifests(manifests).items() if k not in found}
    return found


def _yaml(options: ImportOptions, name: str, file: str, *, every: bool = False) -> Any:
    data = options.companions.get(name)
    if data is None:
        return None
    documents = companion_yaml(
        data, name=name, limit=options.size_limit(), max_values=options.value_limit()
    )
    if every:
        return documents
    return documents[0] if documents else None


def _from_config(config: dict) -> dict[str, Any]:
    found: dict[str, Any] = {}
    server = config.get("server")
    if isinstance(server, dict):
        name = server.get("model_name")
        if isinstance(name, str) and name.strip():
            found["model"] = name.strip()
        if server.get("type") in {"vllm", "sglang", "tgi"}:
            found["engine"] = server["type"]
    data = config.get("data")
    if isinstance(data, dict) and isinstance(data.get("type"), str):
        found["dataset"] = data["type"]
        fixed = [_fixed(data.get(f"{k}_distribution")) for k in ("input", "output")]
        if data["type"] in {"random", "synthetic"} and all(fixed):
            # fixed token lengths: what fleetplan and the other tools call synthetic traffic
            found |= {"dataset": "synthetic", "input_len": fixed[0], "output_len": fixed[1]}
        shared = data.get("shared_prefix")
        if data["type"] == "shared_prefix" and isinstance(shared, dict):
            prompt = [_whole(shared.get(k)) for k in ("system_prompt_len", "question_len")]
            if all(prompt):
                found["input_len"] = sum(prompt)
            found["output_len"] = _whole(shared.get("output_len"))
    load = config.get("load")
    if isinstance(load, dict):
        found["load"] = load
    return found


def _stage_load(context: dict[str, Any], stage: int | None, file: str) -> dict[str, Any]:
    """A concurrent load's stage: its concurrency (a closed-loop level)."""
    load = context.get("load")
    if not isinstance(load, dict) or str(load.get("type", "")).lower() != "concurrent":
        return {}
    stages = load.get("stages")
    if stage is None or not isinstance(stages, list) or stage >= len(stages):
        raise InputError(
            "config.yaml says a concurrent load, but which stage this file is cannot be told "
            "(keep its name stage_N_lifecycle_metrics.json and config.yaml beside it)",
            file=file,
            field="load.stages",
        )
    entry = stages[stage] if isinstance(stages[stage], dict) else {}
    level = _whole(entry.get("concurrency_level", entry.get("concurrency")))
    if not level:
        raise InputError(
            f"config.yaml's stage {stage} of a concurrent load has no concurrency_level",
            file=file,
            field=f"load.stages[{stage}]",
        )
    return {"max_concurrency": level}


def _from_manifests(documents: list[Any]) -> dict[str, Any]:
    """GPUs per server and the GPU product from Kubernetes manifests (the first that says)."""
    found: dict[str, Any] = {}

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key == "nvidia.com/gpu" and "gpu_count" not in found and _whole(inner):
                    found["gpu_count"] = _whole(inner)
                elif key in _GPU_LABEL_KEYS and isinstance(inner, str) and "gpu" not in found:
                    found["gpu"] = inner
                else:
                    visit(inner)
        elif isinstance(value, list):
            for inner in value:
                visit(inner)

    for document in documents:
        visit(document)
    return found


_GPU_LABEL_KEYS = frozenset(("nvidia.com/gpu.product", "cloud.google.com/gke-accelerator"))


def _fixed(distribution: Any) -> int | None:
    """The token length of a distribution whose min and max are the same, else None."""
    if not isinstance(distribution, dict):
        return None
    low, high = _whole(distribution.get("min")), _whole(distribution.get("max"))
    return low if low is not None and low == high else None


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 1:
        return value
    if isinstance(value, float) and value.is_integer() and value >= 1:
        return int(value)
    if isinstance(value, str) and value.strip().isdecimal() and len(value.strip()) <= 6:
        return int(value.strip()) or None
    return None
