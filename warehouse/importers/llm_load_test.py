"""llm-load-test (openshift-psap/llm-load-test) output: one JSON object, `{"results": [one a
request], "config": {the run's config.yaml}, "summary": {...}}`, one load level: `concurrency`
users, each sending its next request when its last one ends, for `duration` seconds (its
`load_options`, type "constant"), a closed loop.

By definition, not by name, from each request's own times, which every version writes in
seconds since the epoch (`start_time`/`end_time`, `first_token_time`; 2023's `start`/`end`): our
E2EL is end - start, our TTFT first token - start (2023's `TTFT`, in ms, where it wrote no
first-token time), our TPOT (E2EL - TTFT) / (output tokens - 1) per request. The tool's own
`tpot` is the response time over ALL output tokens and its `itl` the first-to-last time over the
tokens after the first (our TPOT by another name): neither is read; its `response_time` changed
unit between versions (seconds, then ms), so it is not read either. A request with an
`error_code` or `error_text` failed. The duration is the first send to the last end; the model
the config's `plugin_options.model_name` (else `--model`); the GPU is asked for (the tool records
none).
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

import numpy as np

from fleetplan.core.contract import Point, RequestLog, Run, StatsSource
from fleetplan.core.stats import RequestTimings
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

IMPORTER = "llm-load-test"
VERSION = "1"

_MOST_TOKENS = 100_000_000  # a request's tokens past this are no request's


def _output(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("results"), list)
        and isinstance(value.get("config"), dict)
        and isinstance(value["config"].get("load_options"), dict)
    )


def detect(document: Document) -> bool:
    return document.kind == "json" and len(document.values) == 1 and _output(document.values[0])


def _time(row: dict, *names: str) -> float | None:
    for name in names:
        if (value := finite(row.get(name))) is not None:
            return value
    return None


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    file = source.name
    output = document.values[0]
    config = Reader(output["config"], file, "config")
    load = Reader(output["config"]["load_options"], file, "config.load_options")
    kind = load.text("type") or "constant"
    if kind != "constant":
        raise load.error("type", f"a load of type {kind!r:.30} fleetplan does not read (constant)")
    concurrency = load.positive_int_text("concurrency")
    if concurrency is None:
        raise load.error("concurrency", "missing: the level's concurrency is not known")
    rows = [r for r in output["results"] if isinstance(r, dict)]
    starts, ttfts, e2els, ins, outs, errors = [], [], [], [], [], []
    for row in rows:
        start, end = _time(row, "start_time", "start"), _time(row, "end_time", "end")
        first = _time(row, "first_token_time")
        failed = row.get("error_code") is not None or row.get("error_text") not in (None, "")
        tokens = row.get("output_tokens")
        if start is None:
            continue  # never sent
        ttft_s = first - start if first is not None else None
        if ttft_s is None and (old := _time(row, "TTFT")) is not None:
            ttft_s = old / 1000.0  # 2023: ms
        ok = (
            not failed
            and end is not None
            and ttft_s is not None
            and 0 <= ttft_s <= end - start
            and isinstance(tokens, int)
            and 0 <= tokens <= _MOST_TOKENS
        )
        starts.append(start)
        ttfts.append(ttft_s if ok else None)
        e2els.append(end - start if ok else None)
        prompt = row.get("input_tokens")
        ins.append(prompt if isinstance(prompt, int) and 0 <= prompt <= _MOST_TOKENS else 0)
        outs.append(tokens if ok else 0)
        why = str(row.get("error_text") or row.get("error_code") or "failed")[:500]
        errors.append("" if ok else why)
    completed = sum(1 for e in errors if not e)
    ends = [s + e for s, e in zip(starts, e2els, strict=True) if e is not None]
    if not completed or not ends:
        raise Reader(output, file, "the output").error("results", "no request completed")
    first_send = min(starts)
    duration = max(ends) - first_send
    good = [i for i, e in enumerate(errors) if not e]
    timings = RequestTimings(
        ttft_s=np.array([ttfts[i] for i in good], dtype=float),
        e2el_s=np.array([e2els[i] for i in good], dtype=float),
        output_tokens=np.array([outs[i] for i in good], dtype=float),
        itl_s=np.array([], dtype=float),  # no chunk gaps in the file: ITL unknown
    )
    stats = timings.latency_stats()
    log = build(
        RequestLog,
        file,
        "",
        start_s=tuple(s - first_send for s in starts),
        ttft_s=tuple(ttfts),
        e2el_s=tuple(e2els),
        itl_s=tuple(() for _ in starts),
        input_tokens=tuple(ins),
        output_tokens=tuple(outs),
        error=tuple(errors),
    )
    point = build(
        Point,
        file,
        "",
        max_concurrency=concurrency,
        requests_sent=len(starts),
        completed=completed,
        failed=len(starts) - completed,
        duration_s=duration,
        request_throughput_rps=completed / duration,
        output_throughput_tps=sum(outs) / duration,
        input_tokens_mean=float(np.mean([ins[i] for i in good])),
        output_tokens_mean=float(np.mean([outs[i] for i in good])),
        stats_source=StatsSource.RECOMPUTED,
        requests=log,
        **stats,
    )
    plugin = output["config"].get("plugin_options")
    found = plugin.get("model_name") if isinstance(plugin, dict) else None
    gpu_model, label, count = hardware(options, file, tool="llm-load-test", field="gpu")
    dataset = output["config"].get("dataset")
    dataset_file = dataset.get("file") if isinstance(dataset, dict) else None
    run = build(
        Run,
        file,
        tool="llm-load-test",
        model=model_name(options, file, found, key="config.plugin_options.model_name"),
        gpu_model=gpu_model,
        gpu_label=label,
        gpu_count=count,
        dataset=PurePath(dataset_file).stem if isinstance(dataset_file, str) else None,
        source_file=PurePath(file).name,
        source_sha256=source.sha256,
        source_index=0,
        metadata={"plugin": str(config.text("plugin") or "")},
        points=(point,),
    )
    return Parsed([run], [], frozenset({"request_throughput_rps", "output_throughput_tps"}))
