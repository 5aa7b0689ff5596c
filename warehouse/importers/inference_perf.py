"""inference-perf (kubernetes-sigs/inference-perf, llm-d's benchmark tool) lifecycle reports.

inference-perf writes, per load stage, `stage_N_lifecycle_metrics.json`, and over the whole run a
`summary_lifecycle_metrics.json`, with its resolved `config.yaml` beside them. Each stage file is
one level; the summary pools the stages' requests, so it is not a level (it is skipped, said so).
Told apart by content: a stage's `load_summary` has `requested_rate` and `achieved_rate`, the
summary's has neither.

By definition, from inference-perf's `summarize_requests` (reportgen): `request_latency` is the
request's start to its last token (our E2EL); `time_to_first_token` our TTFT;
`time_per_output_token` is (last token - first token) / (output tokens - 1) per request (our
TPOT); `inter_token_latency` the gaps between consecutive tokens, pooled over requests (our ITL).
Before v0.5.0 both were per streamed message, not token: not stored (`inference_perf_tokens`).
`normalized_time_per_output_token` is E2EL / output tokens per request, which is none
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

import hashlib
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
from fleetplan.warehouse.importers.inference_perf_tokens import per_token_only
from fleetplan.warehouse.importers.offered import EVEN_GAPS_NOTE, replay_note

IMPORTER = "inference-perf"
VERSION = "2"  # 2: a TPOT and ITL per streamed message are not stored
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


def _prometheus(report: dict) -> bool:
    """inference-perf's report of the server's Prometheus metrics: the lifecycle report's shape
    with rates where the client's latencies would be (`successes.queue_len`, no `latency`)."""
    successes = report["successes"]
    return "latency" not in successes and ("queue_len" in successes or "rate" in successes)


def detect(document: Document) -> bool:
    """A lifecycle report: inference-perf writes JSON; the same report in YAML (llm-d-benchmark
    keeps its converter's golden inputs so) reads the same."""
    return (
        document.kind in ("json", "yaml")
        and len(document.values) == 1
        and _lifecycle(document.values[0])
    )


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    file = source.name
    report = document.values[0]
    load = Reader(report["load_summary"], file, "load_summary")
    if _prometheus(report):
        raise NotResultsError(
            "inference-perf's Prometheus metrics (stage_N_prometheus_metrics.json, "
            "summary_prometheus_metrics.json): the server's own counters scraped over the "
            "stage, not a level's client measurements: its stage is imported from the "
            "stage_N_lifecycle_metrics.json beside it",
            file=file,
        )
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
    model = model_name(options, file, context.get("model"), key=context["model_from"])
    if context.get("model_note"):
        warnings.append(context["model_note"])
        point = point.model_copy(update={"notes": (*point.notes, context["model_note"])})
    gpu_model, label, count = hardware(
        options,
        file,
        label=context.get("gpu"),
        count=context.get("gpu_count"),
        tool="inference-perf",
        field="gpu",
        count_field="gpu_count",
        advice=_gpu_advice(options),
    )
    run = build(
        Run,
        file,
        tool="inference-perf",
        engine=context.get("engine"),
        engine_version=context.get("engine_version"),
        variant=context.get("variant"),
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
        metadata=_metadata(stage, context),
        points=(point,),
    )
    return Parsed([run], warnings, DERIVED)


def _metadata(stage: int | None, context: dict[str, Any]) -> dict[str, str]:
    """The run's metadata: its stage, and how many distinct prompts its requests drew from
    (a shared-prefix dataset's groups x prompts per group)."""
    metadata = {"stage": str(stage)} if stage is not None else {}
    if context.get("distinct_prompts"):
        metadata["distinct_prompts"] = str(context["distinct_prompts"])
    return metadata


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
    # a TPOT and ITL per streamed message are unknown rather than wrong: never planned with
    stats, per_message = per_token_only(report, successes, _latencies(successes, warnings))
    if per_message is not None:
        warnings.append(per_message)
    requested = load.number("requested_rate")
    achieved = load.number("achieved_rate")
    closed_loop = stage_load.get("max_concurrency") is not None
    if stage_load.get("note") is not None:
        warnings.append(stage_load["note"])
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
        notes=tuple(n for n in (per_message, stage_load.get("note")) if n is not None),
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
    """What config.yaml, exp-config.yaml and manifests.yaml beside the results say. The model
    the server ran (manifests, exp-config.yaml) wins over the name the client's config.yaml
    gave its requests, and a disagreement is a note (`model_note`)."""
    found: dict[str, Any] = {}
    config = _yaml(options, "config.yaml", file)
    if isinstance(config, dict):
        found |= _from_config(config)
    server: dict[str, Any] = {}
    experiment = _yaml(options, "exp-config.yaml", file)
    if isinstance(experiment, dict):
        server |= _from_experiment(experiment)
    manifests = _yaml(options, "manifests.yaml", file, every=True)
    if manifests:
        server |= {k: v for k, v in _from_manifests(manifests).items() if k not in server}
    client_model = found.get("model")
    found |= {k: v for k, v in server.items() if v is not None}
    if "model" in server and client_model is not None and client_model != server["model"]:
        found["model_note"] = (
            f"config.yaml names the model {client_model!r} in its requests, the server's "
            f"{server['model_from']} serves {server['model']!r}: the run is the server's model"
        )
    found.setdefault("model_from", "config.yaml: server.model_name")
    return found


def _gpu_advice(options: ImportOptions) -> str:
    """What to add where the files name no GPU: the experiment's files where they are absent;
    where they are there and say none (an exp-config.yaml names the model and its tensor
    parallelism, not the GPU), that they do not."""
    here = [name for name in ("exp-config.yaml", "manifests.yaml") if name in options.companions]
    if not here:
        return " (or keep the experiment's exp-config.yaml or manifests.yaml beside the results)"
    return f" ({' and '.join(here)} beside the results name no GPU model)"


def _from_experiment(experiment: dict) -> dict[str, Any]:
    """An experiment's exp-config.yaml (inference-sim): the model, its tensor parallelism (the
    server's GPUs) and the engine's settings, which are the server's variant."""
    found: dict[str, Any] = {}
    if isinstance(experiment.get("model"), str) and experiment["model"].strip():
        found |= {"model": experiment["model"].strip(), "model_from": "exp-config.yaml: model"}
    tp = _whole(experiment.get("tensor_parallelism", experiment.get("tensor_parallel_size")))
    if tp:
        found |= {"tp": tp, "gpu_count": tp}
    if "max_num_seqs" in experiment:
        found["engine"] = "vllm"
    settings = [
        (key, value)
        for key, value in experiment.items()
        if key not in _NOT_VARIANT_KEYS and isinstance(value, str | int | float | bool)
    ]
    if settings:
        found["variant"] = variant_of(settings)
    return found


# exp-config.yaml keys that are not the engine's settings (or are stored on their own)
_NOT_VARIANT_KEYS = frozenset(("model", "tensor_parallelism", "tensor_parallel_size", "app"))


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
            groups = [_whole(shared.get(k)) for k in ("num_groups", "num_prompts_per_group")]
            if all(groups):
                # the stage's requests cycle through these prompts: an engine that caches
                # prefixes finds them again (`planner.estimate.prefix_cache`)
                found["distinct_prompts"] = groups[0] * groups[1]
            found["output_len"] = _whole(shared.get("output_len"))
    load = config.get("load")
    if isinstance(load, dict):
        found["load"] = load
    return found


def _stage_load(context: dict[str, Any], stage: int | None, file: str) -> dict[str, Any]:
    """A concurrent load's stage: its concurrency (a closed-loop level). A constant load's
    (even gaps) or a trace's replay: an open loop, and a note on how it sent."""
    load = context.get("load")
    kind = str(load.get("type", "")).lower() if isinstance(load, dict) else ""
    if kind == "constant":
        return {"note": EVEN_GAPS_NOTE}
    if kind.startswith("trace"):
        return {"note": replay_note(f" (inference-perf's {kind} load)", "the rate it achieved")}
    if kind != "concurrent":
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
    """What Kubernetes manifests say of the server (the first that says each): GPUs per server
    (the `nvidia.com/gpu` limit), the GPU (the node selector's product or GKE accelerator
    label), and from the engine's container (`engine_command`) its model, engine, version and
    arguments (the server's variant)."""
    found: dict[str, Any] = {}

    def visit(value: Any) -> None:
        if isinstance(value, dict):
            if "engine" not in found and (server := engine_command(value)) is not None:
                found.update({k: v for k, v in server.items() if v is not None})
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
    if "model" in found:
        found["model_from"] = "manifests.yaml"
    return found


_GPU_LABEL_KEYS = frozenset(
    (
        "nvidia.com/gpu.product",
        "cloud.google.com/gke-accelerator",
        "node.kubernetes.io/instance-type",
        "beta.kubernetes.io/instance-type",
    )
)
_ENGINES = (("sglang", "sglang"), ("vllm", "vllm"), ("text-generation", "tgi"))
_IMAGE_VERSION = re.compile(r":v?(\d+(?:\.\d+)+)(?:[-+.\w]*)$")
# Engine arguments that are not the server's configuration (where it listens, its name, its
# logs) or are stored on their own (the model, tensor parallelism).
NOT_VARIANT = frozenset(
    (
        "model",
        "port",
        "host",
        "served-model-name",
        "api-key",
        "download-dir",
        "disable-log-requests",
        "disable-log-stats",
        "uvicorn-log-level",
        "tensor-parallel-size",
        "tp",
        "tp-size",
        "trust-remote-code",
    )
)
_ENV_VARIANT = re.compile(r"^(VLLM|SGLANG|SGL)_(?!.*(LOG|PORT|HOST|TOKEN|KEY|DIR|PATH|ROOT))")


def engine_command(container: dict[str, Any]) -> dict[str, Any] | None:
    """A Kubernetes container that runs an inference engine (its image, command or arguments
    name vLLM, SGLang or TGI): {engine, engine_version, model, tp, variant}, else None.
    `$(NAME)` in its arguments is the container's env variable NAME, as Kubernetes expands it."""
    raw_command, raw_args = container.get("command") or [], container.get("args") or []
    if not isinstance(raw_command, list) or not isinstance(raw_args, list):
        return None
    image = container.get("image") if isinstance(container.get("image"), str) else ""
    command = [str(a) for a in raw_command if isinstance(a, str | int)]
    args = [str(a) for a in raw_args if isinstance(a, str | int | float)]
    said = " ".join([image, *command, *args]).lower()
    engine = next((name for word, name in _ENGINES if word in said), None)
    if engine is None or not (image or command):
        return None
    env = {
        str(item["name"]): str(item["value"])
        for item in container.get("env") or []
        if isinstance(item, dict) and "name" in item and isinstance(item.get("value"), str | int)
    }
    expand = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
    if "-m" in command[:-1]:  # python -m MODULE: the interpreter's flag, not the engine's
        at = command.index("-m")
        command = command[:at] + command[at + 2 :]
    words = [expand.sub(lambda m: env.get(m[1], m[0]), word) for word in [*command, *args]]
    flags, positional = _flags(words)
    model = flags.get("model") or flags.get("model-path") or _served(positional)
    tp = _whole(flags.get("tensor-parallel-size", flags.get("tp", flags.get("tp-size"))))
    settings = [(k, v) for k, v in flags.items() if k not in NOT_VARIANT and k != "model-path"]
    settings += [(name, value) for name, value in env.items() if _ENV_VARIANT.match(name)]
    version = _IMAGE_VERSION.search(image)
    return {
        "engine": engine,
        "engine_version": version[1] if version else None,
        "model": model if isinstance(model, str) and model and "$(" not in model else None,
        "tp": tp,
        "variant": variant_of(settings) if settings else None,
    }


def _flags(words: list[str]) -> tuple[dict[str, str | bool], list[str]]:
    """An engine's command line as {flag: value} (`--a=b`, `--a b`, `"--a b"` as one item,
    `--switch`; underscores read as dashes, as the engines read them) and its positional
    words."""
    flags: dict[str, str | bool] = {}
    positional: list[str] = []
    pending: str | None = None
    for word in words:
        if word.startswith("-") and not _number(word):
            name, _, value = word.lstrip("-").partition("=")
            if not value and " " in name:
                name, value = name.split(None, 1)
            name = name.replace("_", "-")
            flags[name] = value if value else True
            pending = None if value else name
        elif pending is not None:
            flags[pending] = word
            pending = None
        else:
            positional.append(word)
    return flags, positional


def _number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _served(positional: list[str]) -> str | None:
    """The model of `vllm serve MODEL`."""
    if "serve" in positional and positional.index("serve") + 1 < len(positional):
        return positional[positional.index("serve") + 1]
    return None


_LONGEST_VARIANT = 500  # the data contract's limit on a name


def variant_of(settings: list[tuple[str, Any]]) -> str:
    """The server's variant from its settings, as the engine's command line would write them
    ("--max-num-seqs=128 --no-enable-prefix-caching"), in the order given; environment
    variables as NAME=value; cut to a name's length (`within_a_name`)."""
    words = []
    for key, value in settings:
        if key.isupper():
            words.append(f"{key}={value}")
        elif value is True:
            words.append(f"--{key.replace('_', '-')}")
        else:
            shown = str(value).lower() if isinstance(value, bool) else " ".join(str(value).split())
            words.append(f"--{key.replace('_', '-')}={shown}")
    return within_a_name(" ".join(words))


def within_a_name(text: str) -> str:
    """`text` as a variant may hold it: longer than a name may be, cut, with a digest of the
    whole (two servers that differ after the cut stay two)."""
    if len(text) <= _LONGEST_VARIANT:
        return text
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return f"{text[: _LONGEST_VARIANT - 30].rstrip()} ... sha256:{digest}"


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
