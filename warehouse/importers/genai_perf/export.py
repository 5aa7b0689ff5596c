"""GenAI-Perf (`profile_export_genai_perf.json`) and AIPerf (`profile_export_aiperf.json`, flat or
under `"records"`, with its per-request `profile_export.jsonl` when given together).

By definition, not by name: their "inter_token_latency" is (latency - TTFT) / (output tokens - 1)
per request, which is our TPOT; their "inter_chunk_latency" (gaps between streamed chunks) is
closest to our ITL. Each metric carries its unit (ns, us, ms, s); every time is converted to ms.
Throughputs are the tools' own; the total-token throughput, where not given, is the output
throughput plus requests/s x mean input tokens. With the per-request file alongside, latency
statistics are recomputed from the requests (and any disagreement with the summary is reported);
the per-request file alone does not say the load, so it is refused. A GenAI-Perf 2024 summary
states no request count or duration: they are read from perf_analyzer's raw export beside it
(`genai_perf_raw`), and without it the summary is refused, naming the file to give with it. GPU
energy, where telemetry was on, is the energy counter's rise over the profiling window (DCGM's
energy, reported in MJ).

Here: detection, the summary's figures and the run's settings (`input_config`). The metric
layout is in `genai_perf_metrics`, the per-request file in `genai_perf_records`, GPU telemetry
in `genai_perf_telemetry`, the raw export in `genai_perf_raw`.
"""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import PurePath
from typing import Any

from fleetplan.core.contract import EnergyMethod, Point, RequestLog, Run, StatsSource
from fleetplan.core.errors import CompanionMissingError, InputError
from fleetplan.core.stats import disagreements
from fleetplan.warehouse.importers.base import (
    FileInput,
    ImportOptions,
    Parsed,
    build,
    finite,
    hardware,
    model_name,
)
from fleetplan.warehouse.importers.document import Document
from fleetplan.warehouse.importers.genai_perf.metrics import (
    TO_MS,
    TO_S,
    Metric,
    is_request_record,
    summary_metrics,
)
from fleetplan.warehouse.importers.genai_perf.raw import (
    RawFigures,
    find_raw,
    looks_raw,
    raw_figures,
    raw_names,
)
from fleetplan.warehouse.importers.genai_perf.records import REQUESTS_FILE, from_records
from fleetplan.warehouse.importers.genai_perf.telemetry import Telemetry, telemetry
from fleetplan.warehouse.importers.offered import send_rate

IMPORTER = "genai-perf-aiperf"
VERSION = "1"
ALIASES = {  # our field: their metric names, newest first
    "ttft": ("time_to_first_token", "ttft"),
    "tpot": ("inter_token_latency",),
    "itl": ("inter_chunk_latency",),
    "e2el": ("request_latency",),
}
_DISPLAY = {"aiperf": "AIPerf", "genai-perf": "GenAI-Perf"}


def detect(document: Document) -> bool:
    first = document.values[0] if document.values else None
    return document.kind == "json" and (
        summary_metrics(first) is not None or is_request_record(first)
    )


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    first = document.values[0]
    if is_request_record(first):
        raise InputError(
            "an AIPerf per-request file (profile_export.jsonl): it does not say the load, so "
            "import it together with the profile_export_aiperf.json beside it (same folder or "
            "same upload), or that file alone",
            file=source.name,
        )
    metrics = summary_metrics(first)
    assert metrics is not None
    file = source.name
    summary = _Summary(metrics, file)
    warnings: list[str] = []
    if summary.get("inter_chunk_latency").present():
        warnings.append("ITL is the tool's inter-chunk latency (gaps between streamed chunks)")
    stats = summary.latencies()
    stats_source = StatsSource.REPORTED
    log = None
    completed = summary.get("request_count").stat("avg")
    companion = options.companions.get(REQUESTS_FILE)
    if companion is not None and completed is not None:
        recomputed, more, log = from_records(companion, file, int(completed), options)
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
    config = first.get("input_config") if isinstance(first.get("input_config"), dict) else {}
    genai_perf_2024 = summary.lacks_counts() and _tool(first, config) == "genai-perf"
    raw = _raw(summary, config, file, options) if genai_perf_2024 else None
    if raw is not None:
        warnings += raw.notes
        warnings += [
            f"statistic differs from the raw export: {field} is {a:.6g} in the summary but "
            f"{b:.6g} from its requests"
            for field, a, b in disagreements(stats, raw.means_ms, rel_tol=1e-3, abs_tol_ms=1e-3)
        ]
    measured = telemetry(first, file)
    warnings += [note for note in (measured.note(),) if note]
    if options.gpu_count and measured.gpu_count and options.gpu_count != measured.gpu_count:
        warnings.append(
            f"GPU telemetry saw {measured.gpu_count} GPU(s) serving, but the server is taken as "
            f"the {options.gpu_count} you gave (telemetry sees the host, not the server)"
        )
    point = _point(summary, config, measured, stats, stats_source, log, raw)
    derived = {
        name
        for name, metric in (
            ("duration_s", "benchmark_duration"),
            ("total_throughput_tps", "total_token_throughput"),
        )
        if summary.get(metric).stat("avg") is None and not (raw and name == "duration_s")
    }
    run = _run(first, config, measured, point, source, options)
    return Parsed([run], warnings, frozenset(derived))


class _Summary:
    """The summary's metrics by name (an absent one reads as all None)."""

    def __init__(self, metrics: dict[str, Any], file: str):
        self.metrics, self.file = metrics, file

    def get(self, name: str) -> Metric:
        return Metric(self.metrics, name, self.file)

    def lacks_counts(self) -> bool:
        """No request count, or neither a duration nor a request throughput to derive one."""
        count, rps = self.get("request_count").stat("avg"), self.get("request_throughput")
        duration = self.get("benchmark_duration").stat("avg")
        return count is None or (duration is None and not rps.stat("avg"))

    def latencies(self) -> dict[str, float | None]:
        """TTFT, TPOT, ITL and E2EL statistics in ms, under our names."""
        stats: dict[str, float | None] = {}
        for ours, names in ALIASES.items():
            found = [self.get(n) for n in names if self.get(n).present()]
            metric = found[0] if found else self.get(names[0])
            stats[f"{ours}_mean_ms"] = metric.stat("avg", to=TO_MS)
            for p in ("p50", "p90", "p95", "p99"):
                stats[f"{ours}_{p}_ms"] = metric.stat(p, to=TO_MS)
        return stats


def _raw(summary: _Summary, config: dict, file: str, options: ImportOptions) -> RawFigures:
    """The count and duration from perf_analyzer's raw export given with the summary, or a
    refusal naming the file that would give them."""
    names = raw_names(config, file)
    found = find_raw(options.companions, names)
    if found is None:
        said = "its input_config.profile_export_file" if _named(config) else "GenAI-Perf's name"
        raise CompanionMissingError(
            "no request count or duration: GenAI-Perf 2024 states them in neither its summary "
            f"nor its CSV, but in perf_analyzer's raw export beside them, {names[0]} ({said}), "
            "not found beside it: import the folder that holds both, or both files together",
            names=names,
            accepts=looks_raw,
            file=file,
            field="request_count",
        )
    concurrency, rate, _ = settings_load(config)
    load = (
        ("concurrency", float(concurrency))
        if concurrency
        else ("request_rate", rate)
        if rate
        else None
    )
    rps = summary.get("request_throughput").stat("avg")
    return raw_figures(*found, file, load, rps, options)


def _named(config: dict) -> bool:
    output = config.get("output") if isinstance(config.get("output"), dict) else {}
    return bool(config.get("profile_export_file") or output.get("profile_export_file"))


def _point(
    summary: _Summary,
    config: dict,
    measured: Telemetry,
    stats: dict[str, float | None],
    stats_source: StatsSource,
    log: RequestLog | None = None,
    raw: RawFigures | None = None,
) -> Point:
    get = summary.get
    rps = get("request_throughput").stat("avg")
    completed = get("request_count").stat("avg")
    failed = get("error_request_count").stat("avg")
    duration = get("benchmark_duration").stat("avg", to=TO_S)
    if raw is not None:  # GenAI-Perf 2024: from perf_analyzer's raw export
        completed, duration = raw.completed, raw.duration_s
    if duration is None and rps and completed:
        duration = completed / rps
    out_tps = get("output_token_throughput").stat("avg")
    in_mean = get("input_sequence_length").stat("avg")
    total_tps = get("total_token_throughput").stat("avg")
    if total_tps is None and out_tps is not None and rps is not None and in_mean is not None:
        total_tps = out_tps + rps * in_mean
    if completed is None or not duration:
        raise InputError(
            "no request count or duration: nothing to store",
            file=summary.file,
            field="request_count",
        )
    concurrency, rate, burstiness = settings_load(config)
    if raw is not None and concurrency is None and rate is None:  # the raw export's load
        mode, value = raw.load
        concurrency = int(value) if mode == "concurrency" and value == int(value) else None
        rate = value if mode == "request_rate" else None
    energy = measured.energy_j
    starts = log.start_s if log is not None else raw.start_s if raw is not None else None
    values = dict(
        **_sent(rate, log, starts),
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
        output_tokens_mean=get("output_sequence_length").stat("avg"),
        gpu_energy_j=energy,
        avg_power_w=measured.power_w,
        energy_method=EnergyMethod.NVML_COUNTER if energy is not None else EnergyMethod.NONE,
        **stats,
    )
    try:
        return build(Point, summary.file, **values)
    except InputError as error:
        if (
            error.field in {"offered_rate_rps", "max_concurrency"}
            and "offered load" in error.reason
        ):
            raise InputError(
                "the export does not say the load (concurrency or request rate)",
                file=summary.file,
                field="input_config.loadgen",
            ) from None
        raise


def _run(
    export: dict,
    config: dict,
    measured: Telemetry,
    point: Point,
    source: FileInput,
    options: ImportOptions,
) -> Run:
    file = source.name
    tool = _tool(export, config)
    shape = _shape(config)
    # Telemetry counts the host's GPUs that served: the user's count, where given, is the server's
    count = options.gpu_count or measured.gpu_count
    gpu_model, label, count = hardware(
        options, file, label=measured.gpu_label, count=count, tool=_DISPLAY[tool]
    )
    return build(
        Run,
        file,
        tool=tool,
        tool_version=_text(export.get("aiperf_version") or export.get("genai_perf_version")),
        model=model_name(options, file, _model(config), key="input_config.model"),
        gpu_model=gpu_model,
        gpu_label=label,
        gpu_count=count,
        dataset="synthetic" if shape else None,
        input_len=shape[0] if shape else None,
        output_len=shape[1] if shape else None,
        created_at=_when(export),
        source_file=PurePath(file).name,
        source_sha256=source.sha256,
        source_index=0,
        metadata={k: str(v)[:2000] for k, v in (("cli_command", _cli(config)),) if v},
        points=(point,),
    )


# -- the run's settings (input_config) -----------------------------------------------------------


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


def _sent(
    rate: float | None, log: RequestLog | None, starts: tuple[float, ...] | None
) -> dict[str, Any]:
    """The rate requests were really sent at (AIPerf's request_start_ns, perf_analyzer's
    timestamps), the configured one beside it, and the request log for the send-time
    judgement."""
    sent = send_rate(starts) if starts is not None and rate is not None else None
    offered = sent if sent is not None else rate
    return {"offered_rate_rps": offered, "configured_rate_rps": rate, "requests": log}


def settings_load(config: dict) -> tuple[int | None, float | None, float | None]:
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
