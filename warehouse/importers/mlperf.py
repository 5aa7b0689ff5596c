"""MLPerf Inference LoadGen's `mlperf_log_summary.txt` of an LLM benchmark (mlcommons/inference;
the submissions' `results/<system>/<benchmark>/<scenario>/performance/run_1/`): lines of
`key : value` in three banner sections, latencies in nanoseconds.

- **Server**: Poisson arrivals at `target_qps` (the configured rate); LoadGen's `Scheduled
  samples per second` is the rate it sent at, `Completed samples per second` and `Completed
  tokens per second` the throughputs. An open-loop level, exactly the kind plans rest on.
  Latencies: `... latency (ns)` our E2EL, `... first token latency (ns)` our TTFT, `... time to
  output token (ns)` (LoadGen's time per output token, per sample after its first token) our
  TPOT: mean, P50, P90, P95 and P99 (97 and 99.9 are not stored).
- **Offline**: every sample at once (`samples_per_query` of them): a burst, its E2EL only.
- Other scenarios (SingleStream, MultiStream) are one query at a time of a non-serving kind:
  refused, naming the scenario; so are accuracy runs.

The summary states neither its duration nor its sample count (they are in `mlperf_log_detail
.txt`): a Server run's duration is taken as its `min_duration` (LoadGen stops once the minimum
duration and query count are met), its completed samples the completed rate x that duration,
both said to be derived; an Offline run's count is its `samples_per_query`, its duration the
count over its rate. `Result is : INVALID` is kept, with a note (a constraint was not met).

The model and the hardware are in the submission's path, not in the file: the benchmark folder
(`llama2-70b-99`) names the model (`BENCHMARK_MODELS`; else the SUT name's prefix, else
`--model`), the system folder (`H200-SXM-141GBx8_TRT`) the GPU and its count where fleetplan can
read them, else `--gpu` and `--gpu-count`.
"""

from __future__ import annotations

import math
import re
from pathlib import PurePath
from typing import Any

from fleetplan.core.contract import Point, Run
from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers.base import (
    FileInput,
    ImportOptions,
    Parsed,
    build,
    hardware,
    model_name,
)
from fleetplan.warehouse.importers.document import MLPERF, Document, key_value

IMPORTER = "mlperf-loadgen"
VERSION = "1"

# MLPerf's LLM benchmarks and the checkpoints their reference implementations serve.
BENCHMARK_MODELS = {
    "llama2-70b": "meta-llama/Llama-2-70b-chat-hf",
    "llama2-70b-interactive": "meta-llama/Llama-2-70b-chat-hf",
    "llama3.1-405b": "meta-llama/Llama-3.1-405B-Instruct",
    "llama3.1-8b": "meta-llama/Llama-3.1-8B-Instruct",
    "llama3.1-8b-edge": "meta-llama/Llama-3.1-8B-Instruct",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-Instruct-v0.1",
    "gptj": "EleutherAI/gpt-j-6b",
    "deepseek-r1": "deepseek-ai/DeepSeek-R1",
}
_PERCENTILE = re.compile(r"^(?P<p>\d+\.\d+) percentile (?P<what>.+) \(ns\)$")
_STATS = {"50.00": "p50", "90.00": "p90", "95.00": "p95", "99.00": "p99"}
_METRICS = {
    "latency": "e2el",
    "first token latency": "ttft",
    "time to output token": "tpot",
    "time per output token": "tpot",
}
_QUALITY = re.compile(r"-(99|99\.9)$")
_SYSTEM = re.compile(r"^(?P<label>.+?)x(?P<count>\d{1,3})(?:_.*)?$")


def detect(document: Document) -> bool:
    return document.kind == "text" and MLPERF.search(document.text) is not None


def _values(text: str) -> dict[str, str]:
    """The summary's `key : value` lines by key in lower case (LoadGen's case varies)."""
    out: dict[str, str] = {}
    for pair in filter(None, map(key_value, text.splitlines())):
        out.setdefault(pair[0].lower(), pair[1])
    return out


def _number(values: dict[str, str], *keys: str) -> float | None:
    for key in keys:
        text = values.get(key.lower())
        try:
            number = float(text) if text is not None else None
        except ValueError:
            number = None
        if number is not None and math.isfinite(number):
            return number
    return None


def _latencies(values: dict[str, str]) -> dict[str, float | None]:
    stats: dict[str, float | None] = {}
    for key, text in values.items():
        match = _PERCENTILE.match(key)
        metric = _METRICS.get(match["what"]) if match else None
        if metric and match["p"] in _STATS:
            stats[f"{metric}_{_STATS[match['p']]}_ms"] = _ms(text)
    for metric, keys in (
        ("e2el", ("mean latency (ns)",)),
        ("ttft", ("mean first token latency (ns)",)),
        ("tpot", ("mean time to output token (ns)", "mean time per output token (ns)")),
    ):
        stats[f"{metric}_mean_ms"] = next(
            (ms for k in keys if (ms := _ms(values.get(k, ""))) is not None), None
        )
    return stats


def _ms(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value / 1e6 if math.isfinite(value) and value >= 0 else None


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    file = source.name
    values = _values(document.text)
    scenario = values.get("scenario", "")
    mode = values.get("mode", "")
    if mode and "performance" not in mode.lower():
        raise InputError(f"an MLPerf {mode} run: no performance to store", file=file, field="mode")
    if scenario not in ("Server", "Offline"):
        raise InputError(
            f"an MLPerf {scenario or 'unknown'} scenario: one query at a time, not a serving "
            "load level (fleetplan reads Server and Offline)",
            file=file,
            field="scenario",
        )
    notes: list[str] = []
    if scenario == "Server":
        rate = _number(values, "completed samples per second")
        duration = (_number(values, "min_duration (ms)") or 0) / 1000
        if not rate or not duration:
            raise InputError("no completed samples per second or min_duration", file=file)
        completed = max(round(rate * duration), 1)
        load: dict[str, Any] = {
            "offered_rate_rps": _number(values, "scheduled samples per second", "target_qps"),
            "configured_rate_rps": _number(values, "target_qps"),
        }
        output_tps = _number(values, "completed tokens per second")
        notes.append(
            "MLPerf's summary states no duration or sample count: the run's are taken as its "
            f"min_duration ({duration:g} s) and the completed rate x it ({completed:,})"
        )
    else:
        rate = _number(values, "samples per second")
        completed = int(_number(values, "samples_per_query") or 0)
        if not rate or not completed:
            raise InputError("no samples per second or samples_per_query", file=file)
        duration = completed / rate
        load = {"offered_rate_rps": math.inf}
        output_tps = _number(values, "tokens per second")
    if values.get("result is", "").upper() == "INVALID":
        notes.append("MLPerf judged the run INVALID (a constraint or minimum was not met)")
    point = build(
        Point,
        file,
        "",
        **load,
        requests_sent=completed,
        completed=completed,
        duration_s=duration,
        request_throughput_rps=rate,
        output_throughput_tps=output_tps,
        notes=tuple(notes),
        **_latencies(values),
    )
    path = PurePath(file)
    benchmark = _benchmark(path, values.get("sut name", ""))
    system = _system(path)
    gpu_model, label, count = hardware(
        options,
        file,
        label=system[0] if system else None,
        count=system[1] if system else None,
        tool="MLPerf's summary",
        field="system",
        advice=" (a submission's results/<system>/ folder names them, e.g. H200-SXM-141GBx8_TRT)",
    )
    run = build(
        Run,
        file,
        tool=f"MLPerf LoadGen ({scenario})",
        model=model_name(options, file, BENCHMARK_MODELS.get(benchmark or ""), key="SUT name"),
        gpu_model=gpu_model,
        gpu_label=label,
        gpu_count=count,
        dataset=f"mlperf-{benchmark}" if benchmark else None,
        source_file=path.name,
        source_sha256=source.sha256,
        source_index=0,
        metadata={k: values[k] for k in ("sut name", "result is") if k in values},
        points=(point,),
    )
    derived = {"duration_s", "completed", "requests_sent"} if scenario == "Server" else set()
    return Parsed([run], notes, frozenset({"duration_s", *derived}))


def _benchmark(path: PurePath, sut: str) -> str | None:
    """The MLPerf benchmark: the submission folder's (`llama2-70b-99` -> llama2-70b), else the
    SUT name's prefix (`llama2-70b-Server-SUT`)."""
    for part in reversed(path.parts[:-1]):
        name = _QUALITY.sub("", part.lower())
        if name in BENCHMARK_MODELS:
            return name
    prefix = re.split(r"-(?:Server|Offline)\b", sut)[0].lower() if sut else ""
    return _QUALITY.sub("", prefix) or None


def _system(path: PurePath) -> tuple[str, int] | None:
    """(GPU label, count) from a submission's system folder (`results/H200-SXM-141GBx8_TRT/`)."""
    parts = path.parts
    for i, part in enumerate(parts[:-1]):
        if part == "results" and i + 1 < len(parts) - 1:
            match = _SYSTEM.match(parts[i + 1])
            if match:
                label = match["label"].split("_")[-1]  # "DGX-H100_H100-SXM-80GB" -> the GPU
                return label, int(match["count"])
    return None
