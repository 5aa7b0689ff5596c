"""InferenceX (SemiAnalysisAI/InferenceX) results, in the layouts its public repository holds
(its session results, "agentic-coding" and the like: `inferencex_sessions`).

- The trimmed `benchmark_serving.py` JSON (`experimental/token_position_decode_slo/`): vLLM's
  result keys, but its latency statistics are in SECONDS under names without `_ms`
  (`median_ttft`, `p99_tpot`, `median_e2el`: median and p99 only). Read as a vLLM result with each
  of those converted to ms (`vllm_json` does the rest); a latency key of that shape fleetplan
  cannot map is refused, naming it. The file names the setup (`glm5_fp8_vllm_tp8_isl10240_osl128
  _conc16.json`): the tensor-parallel size (`tp8`, `tep8`, `dep8`), which is the server's GPU
  count, and the dtype; the GPU is not in the file (`--gpu`).
- The together-runner baseline (`together_runner/baselines/`): `hw`, `framework`, `precision`,
  `tp`, `conc`, `metrics{...}` (ms) and `gpu{n_gpus, mean_power_per_gpu_w, total_avg_power_w}`,
  the host's GPU power sampled over the level. GPUs per server is `tp`; the power is the host's
  `total_avg_power_w` where it sampled exactly those GPUs, else (a TP4 server on an 8-GPU host)
  the mean per GPU x `tp`, with a warning that idle GPUs pulled that mean down. The file states
  no duration: it is successful requests / request throughput, and the energy is the power over
  it (`power_integration`).

Both are closed-loop levels: a fixed concurrency (`max_concurrency` with `request_rate` inf, or
`conc`), never a burst.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

from fleetplan.core.contract import EnergyMethod, Point, Run
from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers import inferencex_sessions, vllm_json
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

IMPORTER = "inferencex"
VERSION = "1"

# A latency statistic in seconds, as the trimmed layout names it.
_SECONDS_KEY = re.compile(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)$")
_STORED_STATS = {"mean", "median", "p50", "p90", "p95", "p99"}
_NAME = re.compile(r"_(?:tp|tep|dep)(?P<tp>\d+)_", re.IGNORECASE)
_DTYPE = re.compile(r"_(?P<dtype>fp8|fp4|bf16|fp16|int8|int4|nvfp4|mxfp4)_", re.IGNORECASE)
_TOGETHER = frozenset(("hw", "conc", "metrics"))


def _together(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.keys() >= _TOGETHER
        and isinstance(value.get("metrics"), dict)
    )


def _trimmed(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and vllm_json.looks_like([value])
        and any(_SECONDS_KEY.match(str(k)) for k in value)
        and not any(str(k).endswith("_ms") for k in value)
    )


def detect(document: Document) -> bool:
    if document.kind != "json" or len(document.values) != 1:
        return False
    value = document.values[0]
    return _together(value) or _trimmed(value) or inferencex_sessions.detect(value)


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    value = document.values[0]
    if inferencex_sessions.detect(value):
        return inferencex_sessions.parse(value, source, options)
    if _together(value):
        return _parse_together(value, source, options)
    return _parse_trimmed(value, source, options)


# -- the trimmed benchmark_serving.py layout ---------------------------------------------------


def _parse_trimmed(obj: dict, source: FileInput, options: ImportOptions) -> Parsed:
    file = source.name
    converted: dict[str, Any] = {}
    for key, value in obj.items():
        match = _SECONDS_KEY.match(str(key))
        if match is None:
            converted[key] = value
            continue
        stat, metric = match.groups()
        if stat not in _STORED_STATS and stat != "std":
            raise InputError(
                f"a latency statistic fleetplan cannot map ({stat} of {metric.upper()}; it "
                "stores mean, median, p90, p95 and p99): refused rather than dropped",
                file=file,
                field=key,
            )
        seconds = Reader(obj, file, "the result").number(key)
        converted[f"{stat}_{metric}_ms"] = seconds * 1000 if seconds is not None else None
    name = PurePath(file).name
    if (tp := _NAME.search(name)) and not any(k in obj for k in ("tensor_parallel_size", "tp")):
        converted["tensor_parallel_size"] = int(tp["tp"])
        converted.setdefault("gpu_count", int(tp["tp"]))
    if (dtype := _DTYPE.search(name)) and "dtype" not in obj:
        converted["dtype"] = dtype["dtype"].lower()
    inner = Document("json", [converted], "", b"")
    runs, warnings, derived = vllm_json.parse(inner, source, options)
    shaped = [_shape(run) for run in runs]
    note = (
        "latencies in seconds in the file (InferenceX's trimmed benchmark_serving.py), in ms here"
    )
    return Parsed(shaped, [note, *warnings], derived)


def _shape(run: Run) -> Run:
    """The run as InferenceX's: its tool, and the fixed token shape of its random prompts."""
    point = run.points[0]
    update: dict[str, Any] = {"tool": "InferenceX benchmark_serving.py", "engine": "vllm"}
    ins, outs = point.input_tokens_mean, point.output_tokens_mean
    if (
        run.dataset is None
        and ins
        and outs
        and float(ins).is_integer()
        and float(outs).is_integer()
    ):
        update |= {"dataset": "random", "input_len": int(ins), "output_len": int(outs)}
    return run.model_copy(update=update)


# -- the together-runner baseline -------------------------------------------------------------

_TOGETHER_STATS = {
    "ttft": ("mean_ttft_ms", "median_ttft_ms", "p90_ttft_ms", "p95_ttft_ms", "p99_ttft_ms"),
    "tpot": ("mean_tpot_ms", "median_tpot_ms", "p90_tpot_ms", "p95_tpot_ms", "p99_tpot_ms"),
    "itl": ("mean_itl_ms", "median_itl_ms", "p90_itl_ms", "p95_itl_ms", "p99_itl_ms"),
    "e2el": ("mean_e2el_ms", "median_e2el_ms", "p90_e2el_ms", "p95_e2el_ms", "p99_e2el_ms"),
}
_OURS = ("mean", "p50", "p90", "p95", "p99")
_TOGETHER_COUNTS = {
    "successful_requests",
    "total_token_throughput",
    "output_token_throughput",
    "request_throughput",
    "input_token_throughput",
    "completed",
    "failed",
}


def _parse_together(obj: dict, source: FileInput, options: ImportOptions) -> Parsed:
    file = source.name
    top = Reader(obj, file, "the result")
    warnings: list[str] = []
    point = _together_point(obj, top, warnings)
    model = model_name(options, file, top.text("model"))
    gpu_model, label, count = hardware(
        options,
        file,
        label=top.text("hw"),
        count=top.positive_int_text("tp"),
        tool="the file",
        field="hw",
        count_field="tp",
    )
    framework, tp = top.text("framework"), top.positive_int_text("tp")
    isl, osl = top.positive_int_text("isl"), top.positive_int_text("osl")
    run = build(
        Run,
        file,
        tool="InferenceX together_runner",
        engine=framework.lower() if framework else None,
        model=model,
        dtype=top.text("precision"),
        gpu_model=gpu_model,
        gpu_label=label,
        gpu_count=count,
        tensor_parallel_size=tp if tp and tp <= count else None,
        host=top.text("host"),
        dataset="random" if isl and osl else None,
        input_len=isl,
        output_len=osl,
        source_file=PurePath(file).name,
        source_sha256=source.sha256,
        source_index=0,
        metadata={k: v for k in ("image", "profile", "cluster", "ts") if (v := top.text(k))},
        points=(point,),
    )
    # the duration is successful requests / request throughput; the energy is power x it
    return Parsed([run], warnings, frozenset({"duration_s", "gpu_energy_j"}))


def _together_point(obj: dict, top: Reader, warnings: list[str]) -> Point:
    file = top.file
    metrics = Reader(obj["metrics"], file, "metrics")
    stats: dict[str, float | None] = {}
    known = {name for names in _TOGETHER_STATS.values() for name in names} | _TOGETHER_COUNTS
    for key in metrics.obj:
        if re.match(r"^(mean|median|std|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)(_ms)?$", key) and (
            key not in known and not key.startswith("std_")
        ):
            raise metrics.error(
                key, "a latency statistic fleetplan cannot map: refused rather than dropped"
            )
    for metric, names in _TOGETHER_STATS.items():
        for ours, name in zip(_OURS, names, strict=True):
            stats[f"{metric}_{ours}_ms"] = metrics.number(name)
    completed = metrics.number("successful_requests", integer=True)
    if completed is None:
        completed = metrics.number("completed", required=True, integer=True)
    rps = metrics.number("request_throughput", required=True)
    if not completed or not rps:
        raise metrics.error("successful_requests", "no request completed: nothing to store")
    duration = completed / rps
    tp = top.positive_int_text("tp")
    power, power_warning = _power(obj, file, tp)
    if power_warning:
        warnings.append(power_warning)
    concurrency = top.positive_int_text("conc")
    point = build(
        Point,
        file,
        "",
        max_concurrency=concurrency,
        completed=completed,
        failed=metrics.number("failed", integer=True),
        duration_s=duration,
        request_throughput_rps=rps,
        output_throughput_tps=metrics.number("output_token_throughput"),
        total_throughput_tps=metrics.number("total_token_throughput"),
        avg_power_w=power,
        gpu_energy_j=power * duration if power is not None else None,
        energy_method=EnergyMethod.POWER_INTEGRATION if power is not None else EnergyMethod.NONE,
        **stats,
    )
    return point


def _power(obj: dict, file: str, tp: int | None) -> tuple[float | None, str | None]:
    """The server's GPU power (W) over the level, and a warning where it is approximate."""
    gpu = obj.get("gpu")
    if gpu is None:
        return None, None
    if not isinstance(gpu, dict):
        raise InputError("expected an object of GPU power figures", file=file, field="gpu")
    reader = Reader(gpu, file, "gpu")
    sampled = reader.positive_int_text("n_gpus")
    total = reader.number("total_avg_power_w")
    per_gpu = reader.number("mean_power_per_gpu_w")
    if total is not None and (sampled is None or tp is None or sampled == tp):
        return total, None
    if per_gpu is not None and tp is not None:
        warning = (
            f"GPU power sampled over the host's {sampled} GPUs for a TP{tp} server: stored as "
            f"the mean per GPU ({per_gpu:g} W) x {tp}, which idle GPUs pull down (a low bound)"
            if sampled and sampled != tp
            else None
        )
        try:
            return per_gpu * tp, warning
        except OverflowError:  # a GPU count past a float: no power at all
            return None, None
    return total, None
