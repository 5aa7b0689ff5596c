"""GenAI-Perf (`profile_export_genai_perf.json`) and AIPerf (`profile_export_aiperf.json`, flat or
under `"records"`, with its per-request `profile_export.jsonl` when given together).

By definition, not by name: their "inter_token_latency" is (latency - TTFT) / (output tokens - 1)
per request, which is our TPOT; their "inter_chunk_latency" (gaps between streamed chunks) is
closest to our ITL. Each metric carries its unit (ns, us, ms, s); every time is converted to ms.
Throughputs are the tools' own; the total-token throughput, where not given, is the output
throughput plus requests/s x mean input tokens. With the per-request file alongside, latency
statistics are recomputed from the requests (and any disagreement with the summary is reported);
the per-request file alone does not say the load, so it is refused. GPU energy, where telemetry
was on, is the energy counter's rise over the profiling window (DCGM's energy, reported in MJ).
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

import numpy as np
from fleetplan.warehouse.importers.document import Document, companion_values
from fleetplan.warehouse.importers.values import build, finite, hardware, model_name, number
from pydantic import ValidationError

from fleetplan.core.contract import EnergyMethod, Point, Run, StatsSource, validation_message
from fleetplan.core.errors import InputError
from fleetplan.core.stats import RequestTimings, disagreements

if TYPE_CHECKING:
    from fleetplan.warehouse.importers import FileInput, ImportOptions

IMPORTER = "genai-perf-aiperf"
VERSION = "1"
_TO_MS = {
    "ns": 1e-6,
    "us": 1e-3,
    "µs": 1e-3,
    "ms": 1.0,
    "s": 1000.0,
    "sec": 1000.0,
    "seconds": 1000.0,
}
_TO_S = {unit: factor / 1000 for unit, factor in _TO_MS.items()}
ALIASES = {  # our field: their metric names, newest first
    "ttft": ("time_to_first_token", "ttft"),
    "tpot": ("inter_token_latency",),
    "itl": ("inter_chunk_latency",),
    "e2el": ("request_latency",),
}
_DISPLAY = {"aiperf": "AIPerf", "genai-perf": "GenAI-Perf"}
_SIGNS = {"request_throughput", "request_latency", "request_count"}


def _metrics(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        return None
    inner = value.get("records") if isinstance(value.get("records"), dict) else value
    if len(_SIGNS & inner.keys()) >= 2 and isinstance(inner.get("request_throughput"), dict):
        return inner
    return None


def _is_request_record(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("metadata"), dict)
        and isinstance(value.get("metrics"), dict)
    )


def detect(document: Document) -> bool:
    first = document.values[0] if document.values else None
    return document.kind == "json" and (_metrics(first) is not None or _is_request_record(first))


class _Metric:
    def __init__(self, metrics: dict[str, Any], name: str, file: str):
        self.raw, self.name, self.file = metrics.get(name), name, file

    def present(self) -> bool:
        return isinstance(self.raw, dict)

    def stat(self, stat: str, *, to: dict[str, float] | None = None) -> float | None:
        if not self.present():
            return None
        value = self.raw.get(stat)
        if value is None:
            return None
        value = number(value, file=self.file, field=f"{self.name}.{stat}")
        if to is None:
            return float(value)
        unit = str(self.raw.get("unit", "")).strip().lower()
        if unit not in to:
            raise InputError(
                f"unknown time unit {unit!r}", file=self.file, field=f"{self.name}.unit"
            )
        return float(value) * to[unit]


def parse(
    document: Document, source: FileInput, options: ImportOptions
) -> tuple[list[Run], list[str]]:
    first = document.values[0]
    if _is_request_record(first):
        raise InputError(
            "an AIPerf per-request file (profile_export.jsonl): it does not say the load, so "
            "import it together with the profile_export_aiperf.json beside it (same folder or "
            "same upload), or that file alone",
            file=source.name,
        )
    metrics = _metrics(first)
    assert metrics is not None
    file = source.name
    warnings: list[str] = []
    m = {name: _Metric(metrics, name, file) for name in metrics}

    def get(name: str) -> _Metric:
        return m.get(name) or _Metric({}, name, file)

    stats: dict[str, float | None] = {}
    for ours, names in ALIASES.items():
        metric = next((get(n) for n in names if get(n).present()), _Metric({}, names[0], file))
        stats[f"{ours}_mean_ms"] = metric.stat("avg", to=_TO_MS)
        for p in ("p50", "p90", "p95", "p99"):
            stats[f"{ours}_{p}_ms"] = metric.stat(p, to=_TO_MS)
    if get("inter_chunk_latency").present():
        warnings.append("ITL is the tool's inter-chunk latency (gaps between streamed chunks)")
    rps = get("request_throughput").stat("avg")
    completed = get("request_count").stat("avg")
    failed = get("error_request_count").stat("avg")
    duration = get("benchmark_duration").stat("avg", to=_TO_S)
    if duration is None and rps and completed:
        duration = completed / rps
    out_tps = get("output_token_throughput").stat("avg")
    in_mean = get("input_sequence_length").stat("avg")
    out_mean = get("output_sequence_length").stat("avg")
    total_tps = get("total_token_throughput").stat("avg")
    if total_tps is None and out_tps is not None and rps is not None and in_mean is not None:
        total_tps = out_tps + rps * in_mean
    if completed is None or not duration:
        raise InputError(
            "no request count or duration: nothing to store", file=file, field="request_count"
        )
    config = first.get("input_config") if isinstance(first.get("input_config"), dict) else {}
    concurrency, rate, burstiness = _load(config)
    energy, power, gpu_label, gpu_count = _telemetry(first, file)
    stats_source = StatsSource.REPORTED
    companion = options.companions.get(REQUESTS_FILE)
    if companion is not None:
        recomputed, more = _from_records(companion, file, int(completed), options)
        warnings += [
            f"statistic differs from the per-request file: {field} is {a:.6g} in the "
            f"summary but {b:.6g} from the requests"
            for field, a, b in disagreements(
                {k: v for k, v in stats.items() if k.endswith("mean_ms")},
                recomputed,
                rel_tol=1e-3,
                abs_tol_ms=1e-3,
            )
        ]
        stats |= {k: v for k, v in recomputed.items() if v is not None}
        stats_source = StatsSource.RECOMPUTED
        warnings += more
    try:
        point = Point(
            offered_rate_rps=rate,
            max_concurrency=concurrency,
            burstiness=burstiness,
            stats_source=stats_source,
            requests_sent=int(completed + (failed or 0)),
            completed=int(completed),
            failed=int(failed) if failed is not None else None,
            duration_s=duration,
            request_throughput_rps=rps,
            output_throughput_tps=out_tps,
            total_throughput_tps=total_tps,
            input_tokens_mean=in_mean,
            output_tokens_mean=out_mean,
            gpu_energy_j=energy,
            avg_power_w=power,
            energy_method=EnergyMethod.NVML_COUNTER if energy is not None else EnergyMethod.NONE,
            **stats,
        )
    except ValidationError as error:
        problem = validation_message(error)
        if (
            problem.field in {"offered_rate_rps", "max_concurrency"}
            and "offered load" in problem.reason
        ):
            raise InputError(
                "the export does not say the load (concurrency or request rate)",
                file=file,
                field="input_config.loadgen",
            ) from None
        raise InputError(problem.reason, file=file, field=problem.field) from None
    tool = _tool(first, config)
    shape = _shape(config)
    gpu_model, label, count = hardware(
        options, file, label=gpu_label, count=gpu_count, tool=_DISPLAY[tool]
    )
    run = build(
        Run,
        file,
        tool=tool,
        tool_version=_text(first.get("aiperf_version") or first.get("genai_perf_version")),
        model=model_name(options, file, _model(config), key="input_config.model"),
        gpu_model=gpu_model,
        gpu_label=label,
        gpu_count=count,
        dataset="synthetic" if shape else None,
        input_len=shape[0] if shape else None,
        output_len=shape[1] if shape else None,
        created_at=_when(first),
        source_file=PurePath(file).name,
        source_sha256=source.sha256,
        source_index=0,
        metadata={k: str(v)[:2000] for k, v in (("cli_command", _cli(config)),) if v},
        points=(point,),
    )
    return [run], warnings


def _text(value: Any) -> str | None:
    return str(value)[:200] if value not in (None, "") else None


def _model(config: dict) -> str | None:
    endpoint = config.get("endpoint") if isinstance(config.get("endpoint"), dict) else {}
    names = endpoint.get("model_names") or config.get("model_names") or config.get("model")
    if isinstance(names, list) and names and isinstance(names[0], str):
        return names[0]
    if isinstance(names, str):
        return names
    items = (
        (config.get("models") or {}).get("items")
        if isinstance(config.get("models"), dict)
        else None
    )
    if isinstance(items, list) and items and isinstance(items[0], dict):
        return _text(items[0].get("name"))
    return None


def _load(config: dict) -> tuple[int | None, float | None, float | None]:
    """(max concurrency, offered request rate, burstiness) from the run's settings: AIPerf's
    `loadgen` (<= 0.8) or `phases` (0.9+), GenAI-Perf's `perf_analyzer.stimulus` or top level."""
    loadgen = config.get("loadgen") if isinstance(config.get("loadgen"), dict) else config
    analyzer = config.get("perf_analyzer") if isinstance(config.get("perf_analyzer"), dict) else {}
    stimulus = analyzer.get("stimulus") if isinstance(analyzer.get("stimulus"), dict) else {}
    concurrency = stimulus.get("concurrency", loadgen.get("concurrency"))
    rate = stimulus.get("request_rate", loadgen.get("request_rate"))
    burstiness = None
    if loadgen is not config:  # AIPerf <= 0.8 writes only non-default settings; poisson is its
        mode = str(loadgen.get("request_rate_mode") or "poisson").lower()  # documented default
        burstiness = {"poisson": 1.0, "constant": math.inf}.get(mode)
    phases = config.get("phases")
    for phase in phases if isinstance(phases, list) else []:
        if isinstance(phase, dict) and phase.get("name", "profiling") == "profiling":
            concurrency = phase.get("concurrency", concurrency)
            rate = phase.get("request_rate", phase.get("rate", rate))
            kind = str(phase.get("type", "")).lower()
            burstiness = {"poisson": 1.0, "constant": math.inf}.get(kind)
    concurrency = (
        int(concurrency)
        if isinstance(concurrency, int | float) and 1 <= concurrency < 2**31
        else None
    )
    rate = finite(rate)
    rate = rate if rate is not None and rate > 0 else None
    return concurrency, rate, burstiness if rate is not None else None


def _tool(export: dict, config: dict) -> str:
    """AIPerf and GenAI-Perf write the same metrics; their settings tell them apart."""
    cli = str(_cli(config) or "")
    if (
        {"records", "aiperf_version", "schema_version", "telemetry_data"} & export.keys()
        or {"loadgen", "phases", "models"} & config.keys()
        or cli.startswith("aiperf")
    ):
        return "aiperf"
    return "genai-perf"


def _shape(config: dict) -> tuple[int, int] | None:
    """The fixed synthetic prompt and output lengths asked for, if the run used them."""
    data = config.get("input") if isinstance(config.get("input"), dict) else {}
    sets = config.get("datasets")
    if isinstance(sets, list):  # AIPerf 0.9+
        if len(sets) != 1 or not isinstance(sets[0], dict) or sets[0].get("type") != "synthetic":
            return None
        prompts = sets[0].get("prompts")
        if not isinstance(prompts, dict):
            return None
        isl, osl = prompts.get("isl"), prompts.get("osl")
    elif isinstance(data.get("prompt"), dict):  # AIPerf <= 0.8
        if data.get("file") or data.get("public_dataset"):
            return None
        isl, osl = data["prompt"].get("input_tokens"), data["prompt"].get("output_tokens")
    else:  # GenAI-Perf
        if data.get("file") or data.get("prompt_source") not in (None, "synthetic"):
            return None
        isl, osl = data.get("synthetic_tokens"), data.get("output_tokens")
    lengths = []
    for spec in (isl, osl):
        if not isinstance(spec, dict) or spec.get("stddev") not in (None, 0, 0.0):
            return None
        mean = spec.get("mean")
        if not isinstance(mean, int | float) or not 1 <= mean < 2**31 or mean != int(mean):
            return None
        lengths.append(int(mean))
    return lengths[0], lengths[1]


def _cli(config: dict) -> str | None:
    artifacts = config.get("artifacts") if isinstance(config.get("artifacts"), dict) else {}
    return config.get("cli_command") or artifacts.get("cli_command")


def _when(export: dict) -> datetime | None:
    value = export.get("start_time")
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).replace(tzinfo=None)
        except ValueError:
            return None
    return None


def _telemetry(
    export: dict, file: str
) -> tuple[float | None, float | None, str | None, int | None]:
    """(energy J, mean power W, GPU name, GPU count) from the tools' GPU telemetry, if any."""
    gpus: list[dict] = []
    data = export.get("telemetry_data")
    if isinstance(data, dict):  # AIPerf: telemetry_data.endpoints.<ep>.gpus.gpu_N
        endpoints = data.get("endpoints")
        for endpoint in endpoints.values() if isinstance(endpoints, dict) else []:
            found = endpoint.get("gpus") if isinstance(endpoint, dict) else None
            if isinstance(found, dict):
                gpus += [g for g in found.values() if isinstance(g, dict)]
        energies, powers = [], []
        for gpu in gpus:
            metrics = gpu.get("metrics") if isinstance(gpu.get("metrics"), dict) else {}
            energy = _first_metric(metrics, _ENERGY_NAMES, file)
            power = _first_metric(metrics, _POWER_NAMES, file)
            low, high, factor = energy.stat("min"), energy.stat("max"), _energy_factor(energy)
            if low is not None and high is not None and factor is not None and high >= low:
                energies.append((high - low) * factor)
            if power.stat("avg") is not None:
                powers.append(power.stat("avg"))
        names = sorted({str(g.get("gpu_name")) for g in gpus if g.get("gpu_name")})
        label = names[0] if len(names) == 1 else None
        return (
            sum(energies) if energies and len(energies) == len(gpus) else None,
            sum(powers) if powers and len(powers) == len(gpus) else None,
            label,
            len(gpus) or None,
        )
    stats = export.get("telemetry_stats")
    if isinstance(stats, dict):  # GenAI-Perf: telemetry_stats.<metric>.gpuN
        energy = (
            stats.get("energy_consumption")
            if isinstance(stats.get("energy_consumption"), dict)
            else {}
        )
        power = (
            stats.get("gpu_power_usage") if isinstance(stats.get("gpu_power_usage"), dict) else {}
        )
        unit = _energy_unit(energy.get("unit"))
        per_gpu = [v for k, v in energy.items() if k.startswith("gpu") and isinstance(v, dict)]
        joules = [
            (v["max"] - v["min"]) * unit
            for v in per_gpu
            if unit is not None
            and _finite(v.get("max"))
            and _finite(v.get("min"))
            and v["max"] >= v["min"]
        ]
        watts = [
            v["avg"]
            for k, v in power.items()
            if k.startswith("gpu") and isinstance(v, dict) and _finite(v.get("avg"))
        ]
        return (
            sum(joules) if per_gpu and len(joules) == len(per_gpu) else None,
            sum(watts) if watts else None,
            None,
            len(per_gpu) or None,
        )
    return None, None, None, None


def _finite(value: Any) -> bool:
    return finite(value) is not None


# AIPerf names them after its DCGM mapping (energy in MJ); older and forked exporters prefix them.
_ENERGY_NAMES = ("energy_consumption", "nvidia_energy_consumption", "nvidia_total_gpu_energy")
_POWER_NAMES = ("gpu_power_usage", "nvidia_power_usage")


def _first_metric(metrics: dict, names: tuple[str, ...], file: str) -> _Metric:
    found = next((name for name in names if isinstance(metrics.get(name), dict)), names[0])
    return _Metric(metrics, found, file)


def _energy_factor(metric: _Metric) -> float | None:
    return _energy_unit(metric.raw.get("unit") if metric.present() else None)


# Case matters: mJ is not MJ. No unit means the tools' documented MJ; an unknown unit, unknown
# energy.
_ENERGY_UNITS = {"MJ": 1e6, "kJ": 1e3, "J": 1.0, "mJ": 1e-3, "Wh": 3600.0, "kWh": 3.6e6}


def _energy_unit(unit: Any) -> float | None:
    return _ENERGY_UNITS.get(str(unit).strip()) if unit not in (None, "") else 1e6


REQUESTS_FILE = "profile_export.jsonl"


def _from_records(
    data: bytes, summary_file: str, completed: int, options: ImportOptions
) -> tuple[dict[str, float | None], list[str]]:
    """Latency statistics recomputed from AIPerf's per-request records (our definitions)."""
    file = f"{summary_file} (its {REQUESTS_FILE})"
    ttft, e2el, out_tokens, gaps = [], [], [], []
    records = companion_values(
        data, name=file, limit=options.size_limit(), max_values=options.value_limit()
    )
    for i, record in enumerate(records):
        if not _is_request_record(record):
            raise InputError(f"line {i + 1}: not a request record", file=file)
        if record.get("error") or record["metadata"].get("benchmark_phase", "profiling") not in (
            "profiling",
            None,
        ):
            continue
        metrics = record["metrics"]
        values = {
            name: _record_value(metrics, name, file, i)
            for name in (
                "time_to_first_token",
                "ttft",
                "request_latency",
                "output_sequence_length",
                "inter_chunk_latency",
            )
        }
        first = values["time_to_first_token"] or values["ttft"]
        if values["request_latency"] is None or values["output_sequence_length"] is None:
            raise InputError(
                f"line {i + 1}: no request_latency or output_sequence_length", file=file
            )
        ttft.append(first[0] / 1000 if first else np.nan)
        e2el.append(values["request_latency"][0] / 1000)
        out_tokens.append(values["output_sequence_length"][0])
        chunk = values["inter_chunk_latency"]
        gaps += [g / 1000 for g in chunk] if chunk else []
    if len(e2el) != completed:
        raise InputError(
            f"{len(e2el)} successful requests in the per-request file, {completed} in the "
            "summary: not the same run",
            file=file,
        )
    timings = RequestTimings(
        ttft_s=np.array(ttft),
        e2el_s=np.array(e2el),
        output_tokens=np.array(out_tokens, dtype=float),
        itl_s=np.array(gaps),
    )
    stats = {
        k: (None if v is not None and math.isnan(v) else v)
        for k, v in timings.latency_stats().items()
    }
    return stats, [f"latency statistics recomputed from {len(e2el)} requests in {REQUESTS_FILE}"]


def _record_value(metrics: dict, name: str, file: str, line: int) -> list[float] | None:
    """A per-request metric in ms (times) or tokens, as a list (one value, or chunk gaps)."""
    entry = metrics.get(name)
    if entry is None:
        return None
    if not isinstance(entry, dict) or "value" not in entry:
        raise InputError(f"line {line + 1}: expected {{value, unit}}", file=file, field=name)
    value, unit = entry["value"], str(entry.get("unit", "")).lower()
    values = value if isinstance(value, list) else [value]
    if not all(finite(v) is not None and v >= 0 for v in values):
        raise InputError(f"line {line + 1}: expected non-negative numbers", file=file, field=name)
    factor = _TO_MS.get(unit, 1.0) if unit in _TO_MS else 1.0
    return [float(v) * factor for v in values]
