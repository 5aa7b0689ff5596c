"""LLMPerf (ray-project/llmperf) results: `{model}_{in}_{out}_summary.json` and its
`..._individual_responses.json`.

By definition, not by name: LLMPerf's "inter_token_latency" is end-to-end latency over output
tokens (it includes the TTFT), so it is neither our ITL nor our TPOT and is not stored. The
summary gives TTFT and end-to-end latency in seconds, completed requests per minute and the
output throughput; with the per-request file alongside, TTFT, E2EL and TPOT (per request:
(E2EL - TTFT) / (output tokens - 1)) are recomputed from the requests. LLMPerf is a closed loop
at a fixed concurrency; it records no hardware: the GPU is asked for. Its output token counts
come from a Llama-2 tokenizer whatever the model (kept as reported, and said so).
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

import numpy as np

from fleetplan.core.contract import Point, Run, StatsSource
from fleetplan.core.errors import InputError
from fleetplan.core.stats import RequestTimings, disagreements
from fleetplan.warehouse.importers.base import (
    FileInput,
    ImportOptions,
    Parsed,
    Reader,
    build,
    hardware,
    model_name,
    timestamp,
)
from fleetplan.warehouse.importers.document import Document, companion_values

IMPORTER = "llmperf"
VERSION = "1"


def _is_summary(value: Any) -> bool:
    return isinstance(value, dict) and "results_ttft_s_mean" in value


def _is_individual(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and isinstance(value[0], dict)
        and {"ttft_s", "end_to_end_latency_s", "number_output_tokens"} <= value[0].keys()
    )


def _is_sweep(value: Any) -> bool:
    """Summaries keyed by their concurrency ({"1": summary, "2": ..., "128": ...}: a sweep kept
    in one file, as philschmid/llmperf-bench's `..._results.json`)."""
    return (
        isinstance(value, dict)
        and bool(value)
        and all(str(k).isdigit() and _is_summary(v) for k, v in value.items())
    )


def detect(document: Document) -> bool:
    first = document.values[0] if document.values else None
    return document.kind == "json" and (
        _is_summary(first) or _is_individual(first) or _is_sweep(first)
    )


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    first = document.values[0]
    if _is_sweep(first):
        return _sweep(first, source, options)
    if _is_individual(first):
        raise InputError(
            "an LLMPerf per-request file: import it together with its ..._summary.json (which "
            "holds the run's throughput and concurrency), in one folder or one upload",
            file=source.name,
        )
    summary = Reader(first, source.name, "summary")
    warnings = ["output token counts are LLMPerf's (a Llama-2 tokenizer whatever the model)"]
    stats = _reported_stats(summary)
    stats_source = StatsSource.REPORTED
    completed = summary.number("results_num_completed_requests", required=True, integer=True)
    prefix = str(first.get("name", "")).removesuffix("_summary")
    companion = options.companions.get(f"{prefix}_individual_responses.json")
    if companion is None:  # the leaderboard's summary/X.json beside individual/X.json
        companion = options.companions.get(f"individual/{PurePath(source.name).name}")
    if companion is not None:
        recomputed, more = _from_requests(companion, source.name, completed, options)
        warnings += [
            f"statistic differs from the per-request file: {field} is {a:.6g} in the "
            f"summary but {b:.6g} from the requests"
            for field, a, b in disagreements(
                {k: v for k, v in stats.items() if k in recomputed}, recomputed, rel_tol=1e-3
            )
        ]
        stats |= recomputed
        stats_source = StatsSource.RECOMPUTED
        warnings += more
    else:
        warnings.append(
            "no per-request file alongside: TPOT unknown (LLMPerf's inter-token "
            "latency includes the TTFT, so it is not used)"
        )
    point = _point(summary, stats, stats_source)
    # the duration is completed / the stated rate, the total throughput output + rate x input
    derived = frozenset({"duration_s", "total_throughput_tps"})
    return Parsed([_run(summary, point, source, options)], warnings, derived)


def _sweep(summaries: dict, source: FileInput, options: ImportOptions) -> Parsed:
    """Each summary a level of one run, where they share the run's setup (the model, the
    traffic); else a run each."""
    runs: list[Run] = []
    warnings: list[str] = []
    derived: set[str] = set()
    for key in sorted(summaries, key=int):
        one = parse(Document("json", [summaries[key]], "", b""), source, options)
        (run,) = one.runs
        derived |= one.derived
        warnings += one.warnings  # said once each where the levels say the same
        setup = {"points": (), "created_at": None, "source_index": 0}
        if runs and runs[-1].model_copy(update=setup) == run.model_copy(update=setup):
            runs[-1] = runs[-1].model_copy(update={"points": (*runs[-1].points, *run.points)})
        else:
            runs.append(run.model_copy(update={"source_index": len(runs)}))
    return Parsed(runs, list(dict.fromkeys(warnings)), frozenset(derived))


def _reported_stats(summary: Reader) -> dict[str, float | None]:
    """TTFT and end-to-end latency as the summary reports them (seconds), in ms."""
    stats: dict[str, float | None] = {}
    for ours, theirs in (("ttft", "ttft_s"), ("e2el", "end_to_end_latency_s")):
        mean = summary.number(f"results_{theirs}_mean")
        stats[f"{ours}_mean_ms"] = mean * 1000 if mean is not None else None
        for p in ("p50", "p90", "p95", "p99"):
            value = summary.number(f"results_{theirs}_quantiles_{p}")
            stats[f"{ours}_{p}_ms"] = value * 1000 if value is not None else None
    return stats


def _point(summary: Reader, stats: dict[str, float | None], stats_source: StatsSource) -> Point:
    """The run's one load level: a closed loop at the summary's concurrency."""
    completed = summary.number("results_num_completed_requests", required=True, integer=True)
    errors = summary.number("results_number_errors", integer=True) or 0
    started = summary.number("results_num_requests_started", integer=True)
    per_minute = summary.number("results_num_completed_requests_per_min", required=True)
    if completed and not per_minute:
        raise summary.error("results_num_completed_requests_per_min", "is 0 with requests done")
    rps = per_minute / 60
    duration = completed / rps if rps else None
    if not duration:
        raise summary.error("results_num_completed_requests", "no request completed: no level")
    out_tps = summary.number("results_mean_output_throughput_token_per_s")
    in_mean = summary.number("results_number_input_tokens_mean")
    total_tps = out_tps + rps * in_mean if out_tps is not None and in_mean is not None else None
    return build(
        Point,
        summary.file,
        offered_rate_rps=None,
        max_concurrency=summary.number("num_concurrent_requests", integer=True) or None,
        requests_sent=started if started is not None else completed + errors,
        completed=completed,
        failed=errors,
        duration_s=duration,
        request_throughput_rps=rps,
        output_throughput_tps=out_tps,
        total_throughput_tps=total_tps,
        input_tokens_mean=in_mean,
        output_tokens_mean=summary.number("results_number_output_tokens_mean"),
        stats_source=stats_source,
        **stats,
    )


def _run(summary: Reader, point: Point, source: FileInput, options: ImportOptions) -> Run:
    first, file = summary.obj, source.name
    gpu_model, label, count = hardware(options, file, tool="LLMPerf")
    return build(
        Run,
        file,
        tool="llmperf",
        tool_version=str(first.get("version") or "") or None,
        model=model_name(options, file, first.get("model")),
        gpu_model=gpu_model,
        gpu_label=label,
        gpu_count=count,
        input_len=_fixed(first, "mean_input_tokens", "stddev_input_tokens"),
        output_len=_fixed(first, "mean_output_tokens", "stddev_output_tokens"),
        created_at=timestamp(summary.number("timestamp")),
        source_file=PurePath(file).name,
        source_sha256=source.sha256,
        source_index=0,
        metadata={"name": str(first.get("name", ""))[:200]},
        points=(point,),
    )


def _fixed(summary: dict, mean: str, stddev: str) -> int | None:
    """A token length when every request had it (stddev 0)."""
    value, spread = summary.get(mean), summary.get(stddev)
    if (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and spread == 0
        and 1 <= value < 2**31
        and value == int(value)
    ):
        return int(value)
    return None


def _from_requests(
    data: bytes, file: str, completed: int, options: ImportOptions
) -> tuple[dict[str, float | None], list[str]]:
    values = companion_values(
        data,
        name=f"{file} (per-request file)",
        limit=options.size_limit(),
        max_values=options.value_limit(),
    )
    requests = values[0] if values else None
    if not _is_individual(requests):
        raise InputError("the per-request file alongside is not LLMPerf's", file=file)
    ok, warnings = [], []
    for i, request in enumerate(requests):
        if not isinstance(request, dict):
            raise InputError(
                f"request {i + 1}: expected an object", file=f"{file} (per-request file)"
            )
        reader = Reader(request, f"{file} (per-request file)", f"request {i + 1}")
        if request.get("error_code") not in (None, "", 0) or request.get("error_msg"):
            continue
        ok.append(
            (
                reader.number("ttft_s", required=True),
                reader.number("end_to_end_latency_s", required=True),
                reader.number("number_output_tokens", required=True, integer=True),
            )
        )
    if len(ok) != completed:
        warnings.append(
            f"the per-request file has {len(ok)} successful requests, the summary {completed}"
        )
    if not ok:
        return {}, warnings
    ttft, e2el, tokens = (np.array(column, dtype=float) for column in zip(*ok, strict=True))
    timings = RequestTimings(ttft_s=ttft, e2el_s=e2el, output_tokens=tokens, itl_s=np.zeros(0))
    stats = timings.latency_stats()
    return {k: v for k, v in stats.items() if not k.startswith("itl_")}, warnings
