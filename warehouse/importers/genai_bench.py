"""genai-bench (sgl-project/genai-bench) results: an experiment folder of one JSON file a level
(`D100_100_text-to-text_num_concurrency_4_time_120s.json`: `aggregated_metrics` and
`individual_request_metrics`) beside `experiment_metadata.json` (the model, the server's engine,
version, GPU type and count where the user gave them, the command).

By definition (genai-bench's metrics): `ttft` is our TTFT, `e2e_latency` our E2EL, `tpot` ours
((E2EL - TTFT) / (output tokens - 1) per request); genai-bench keeps no ITL. Statistics are in
the file's `_time_unit` (s, or ms), stored in ms; per-request figures where the file has them
are what is stored (`individual_request_metrics`, errors left out), else its aggregates. A level
is a closed loop at its `num_concurrency` (or its `batch_size`, for embeddings), over
`run_duration`. The traffic: `D(in,out)` is synthetic traffic of fixed lengths; another scenario
(`N(480,240)/(300,150)`, normal lengths) is kept as the dataset's name. The GPU and the engine
are the metadata's where the user gave them (`--server-gpu-type`, `--server-gpu-count`,
`--server-engine`, `--server-version`), else asked for; the model is the one the server was asked
for (`api_model_name`), or the user's `--model` where that is a local folder's path.

Read as genai-bench 0.0.2 and 0.0.5 write them (0.0.5: our own run, tests/fixtures/formats). What
genai-bench leaves out of its statistics is left out of ours where the file says so: with
`--warmup-ratio` and `--cooldown-ratio` (in the metadata's `cmd`) its statistics are over the
requests between the first and last that many (the counts and the duration over them all); a
request whose output tokens came within 1 ms of the first has no `tpot` in 0.0.5 (genai-bench
leaves it out), and is kept in ours (TPOT by its definition), with a warning. The command is
stored with the values of its keys and tokens (`--api-key`, ...) masked.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePath
from typing import Any

import numpy as np

from fleetplan.core.contract import Point, Run, StatsSource
from fleetplan.core.stats import RequestTimings, disagreements
from fleetplan.warehouse.importers.base import (
    FileInput,
    ImportOptions,
    Parsed,
    Reader,
    build,
    finite,
    hardware,
    model_name,
)
from fleetplan.warehouse.importers.document import Document

IMPORTER = "genai-bench"
VERSION = "1"

METADATA = "experiment_metadata.json"
# A level's file: {scenario}_{task}[_{model}]_{iteration}_{value}_time_{seconds}s.json
LEVEL_NAME = re.compile(r"_(num_concurrency|batch_size)_\d+_time_\d+s\.json$")
_UNITS = {"s": 1000.0, "ms": 1.0}
_FIXED = re.compile(r"^D\((\d+),\s*(\d+)\)$")
_STATS = {"mean": "mean", "p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99"}
_METRICS = {"ttft": "ttft", "tpot": "tpot", "e2e_latency": "e2el"}
_FILE_NAMES = {
    f"{ours}_{name}_ms": f"stats.{theirs}.{stat}"
    for theirs, ours in _METRICS.items()
    for stat, name in _STATS.items()
}
# The command as genai-bench rebuilds it (`--name value` for each option given)
_TIMES = ("ttft", "e2e_latency", "num_output_tokens")
_RATIO = re.compile(r"--(warmup|cooldown)-ratio\s+([0-9.]+)")
_OPTION = re.compile(r"(--([A-Za-z0-9-]+))\s+(\S+)")
_SECRET_WORDS = frozenset({"key", "token", "secret", "password", "string"})
_LOCAL = re.compile(r"^(/|\.{1,2}/|~)")


def _level(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("aggregated_metrics"), dict)
        and "individual_request_metrics" in value
    )


def detect(document: Document) -> bool:
    return document.kind == "json" and len(document.values) == 1 and _level(document.values[0])


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    file = source.name
    level = document.values[0]
    top = Reader(level, file, "the level")
    metrics = Reader(level["aggregated_metrics"], file, "aggregated_metrics")
    unit = str(level.get("_time_unit") or "s")
    if unit not in _UNITS:
        raise top.error("_time_unit", f"a time unit fleetplan cannot read ({unit!r:.20}): s or ms")
    meta = _metadata(options)
    warnings: list[str] = []
    point = _point(level, metrics, _UNITS[unit], _window(meta), warnings)
    gpu_model, label, count = hardware(
        options,
        file,
        label=_text(meta, "server_gpu_type"),
        count=_count(meta.get("server_gpu_count")),
        tool="genai-bench",
        field="server_gpu_type",
        count_field="server_gpu_count",
        advice=" (genai-bench records them with --server-gpu-type and --server-gpu-count)",
    )
    scenario = metrics.text("scenario") or ""
    fixed = _FIXED.match(scenario.replace(" ", ""))
    traffic: dict[str, Any] = (
        {"dataset": "synthetic", "input_len": int(fixed[1]), "output_len": int(fixed[2])}
        if fixed
        else {"dataset": scenario or None}
    )
    engine = _text(meta, "server_engine")
    served, named = _text(meta, "api_model_name"), _text(meta, "model")
    found_model = named if served and named and _LOCAL.match(served) else served or named
    run = build(
        Run,
        file,
        tool="genai-bench",
        tool_version=_text(meta, "benchmark_version"),
        engine=engine.lower() if engine else None,
        engine_version=_text(meta, "server_version"),
        model=model_name(options, file, found_model, key=f"{METADATA}: api_model_name"),
        gpu_model=gpu_model,
        gpu_label=label,
        gpu_count=count,
        source_file=PurePath(file).name,
        source_sha256=source.sha256,
        source_index=0,
        metadata={k: _masked(str(v))[:2000] for k in ("cmd", "api_backend") if (v := meta.get(k))},
        points=(point,),
        **traffic,
    )
    if not meta:
        warnings.append(f"no {METADATA} beside it: the model and server from the options")
    return Parsed([run], warnings)


def _metadata(options: ImportOptions) -> dict:
    data = options.companions.get(METADATA)
    if data is None:
        return {}
    try:
        value = json.loads(data)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _text(meta: dict, key: str) -> str | None:
    value = meta.get(key)
    return str(value).strip() or None if isinstance(value, str | int | float) else None


def _window(meta: dict) -> tuple[float, float]:
    """The parts of a level's requests genai-bench leaves out of its statistics as warm-up and
    cool-down (`--warmup-ratio`, `--cooldown-ratio`), as its command says: (0, 0) without."""
    cmd = meta.get("cmd") if isinstance(meta.get("cmd"), str) else ""
    ratios = {name: float(value) for name, value in _RATIO.findall(cmd) if value.count(".") < 2}
    return ratios.get("warmup", 0.0), ratios.get("cooldown", 0.0)


def _masked(cmd: str) -> str:
    """`cmd` with the value of each option that holds a key, a token, a secret or a password
    (`--api-key`, `--aws-secret-access-key`, `--github-token`, ...) shown as ***."""

    def mask(match: re.Match) -> str:
        secret = _SECRET_WORDS.intersection(match[2].lower().split("-"))
        return f"{match[1]} ***" if secret else match[0]

    return _OPTION.sub(mask, cmd)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _point(
    level: dict, metrics: Reader, to_ms: float, window: tuple[float, float], warnings: list[str]
) -> Point:
    completed = metrics.number("num_completed_requests", required=True, integer=True)
    failed = metrics.number("num_error_requests", integer=True)
    duration = metrics.number("run_duration", required=True)
    if not completed or not duration:
        raise metrics.error("num_completed_requests", "no request completed: nothing to store")
    reported = _reported(metrics, to_ms)
    stats, source = _from_requests(level, reported, to_ms, completed, window, warnings)
    if stats is None:
        stats, source = reported, StatsSource.REPORTED
    concurrency = metrics.number("num_concurrency", integer=True) or metrics.number(
        "batch_size", integer=True
    )
    tokens = metrics.obj.get("stats", {}) if isinstance(metrics.obj.get("stats"), dict) else {}
    return build(
        Point,
        metrics.file,
        "",
        max_concurrency=concurrency,
        requests_sent=completed + (failed or 0),
        completed=completed,
        failed=failed,
        duration_s=duration,
        request_throughput_rps=metrics.number("requests_per_second"),
        output_throughput_tps=metrics.number("mean_output_throughput_tokens_per_s"),
        total_throughput_tps=metrics.number("mean_total_tokens_throughput_tokens_per_s"),
        input_tokens_mean=_mean(tokens, "num_input_tokens"),
        output_tokens_mean=_mean(tokens, "num_output_tokens"),
        stats_source=source,
        **stats,
    )


def _mean(stats: dict, key: str) -> float | None:
    part = stats.get(key)
    value = part.get("mean") if isinstance(part, dict) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _reported(metrics: Reader, to_ms: float) -> dict[str, float | None]:
    stats = metrics.obj.get("stats")
    out: dict[str, float | None] = {}
    for theirs, ours in _METRICS.items():
        part = stats.get(theirs) if isinstance(stats, dict) else None
        reader = Reader(part if isinstance(part, dict) else {}, metrics.file, f"stats.{theirs}")
        for stat, name in _STATS.items():
            value = reader.number(stat)
            out[f"{ours}_{name}_ms"] = value * to_ms if value is not None else None
    return out


def _timed(row: Any) -> bool:
    return (
        isinstance(row, dict)
        and row.get("error_code") is None
        and all(finite(row.get(k)) is not None for k in _TIMES)
    )


def _tpot_left_out(rows: list[dict]) -> int:
    """Requests of more than one output token whose `tpot` genai-bench left null (0.0.5: their
    tokens after the first came within 1 ms, too short to time, it says)."""
    return sum(1 for r in rows if r["num_output_tokens"] > 1 and "tpot" in r and r["tpot"] is None)


def _from_requests(
    level: dict,
    reported: dict[str, float | None],
    to_ms: float,
    completed: int,
    window: tuple[float, float],
    warnings: list[str],
) -> tuple[dict[str, float | None] | None, StatsSource]:
    """The statistics of the level's requests (those genai-bench's own are over), where every
    completed one has its times; a statistic of the file's that differs from them is named."""
    rows = level.get("individual_request_metrics")
    if not isinstance(rows, list):
        return None, StatsSource.REPORTED
    timed = sum(1 for r in rows if _timed(r))
    if timed != completed:
        warnings.append(
            f"{timed} requests with their times for {completed} completed: statistics as "
            "the file reports them"
        )
        return None, StatsSource.REPORTED
    # genai-bench's warm-up and cool-down: counted over every request, errors included
    first, cut = int(len(rows) * window[0]), int(len(rows) * window[1])
    good = [r for r in rows[first : len(rows) - cut] if _timed(r)]
    if not good:
        return None, StatsSource.REPORTED
    if first or cut:
        warnings.append(
            f"statistics over {len(good)} of the {completed} completed requests: genai-bench's "
            f"--warmup-ratio {window[0]:g} and --cooldown-ratio {window[1]:g} leave out the first "
            f"{first} and the last {cut} of its {len(rows)} requests (the counts and the duration "
            "are over them all)"
        )
    if left := _tpot_left_out(good):
        warnings.append(
            f"{left} request(s) whose output tokens after the first came within 1 ms have no "
            "tpot in the file: genai-bench leaves them out of its TPOT, fleetplan keeps them "
            "(TPOT over every request of more than one token)"
        )
    seconds = to_ms / 1000.0
    timings = RequestTimings(
        ttft_s=np.array([r["ttft"] for r in good], dtype=float) * seconds,
        e2el_s=np.array([r["e2e_latency"] for r in good], dtype=float) * seconds,
        output_tokens=np.array([r["num_output_tokens"] for r in good], dtype=float),
        itl_s=np.array([], dtype=float),  # genai-bench keeps no ITL: unknown
    )
    stats = timings.latency_stats()
    warnings += [
        f"{_FILE_NAMES[field]} is {value:.6g} ms in the file but {other:.6g} ms from its "
        "requests: the requests' value is stored"
        for field, value, other in disagreements(reported, stats)
        if not (left and field.startswith("tpot"))
    ]
    return stats, StatsSource.RECOMPUTED
