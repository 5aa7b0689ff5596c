"""perf_analyzer's raw profile export, which GenAI-Perf writes beside its summary: named by the
summary's `input_config.profile_export_file` (`profile_export.json` by default, `200_50.json` in
a 2024 NVIDIA course's runs), `{"experiments": [{"experiment": {"mode", "value"}, "requests":
[{"timestamp", "request_inputs", "response_timestamps", "response_outputs"}],
"window_boundaries"}], "version", "service_kind", "endpoint"}`, every time in ns since the epoch.

GenAI-Perf 2024's summaries (0.0.x, with perf_analyzer 2.4x) state neither a request count nor a
duration: they are read from here as GenAI-Perf computed its figures from this file
(genai_perf's LLMProfileDataParser): a response without text (an OpenAI stream's role-only first
chunk, its `[DONE]`) is left out; the count is the requests that answered with text; the
duration runs from the first request sent to the last response with text, GenAI-Perf's
benchmark duration, over which it states its throughputs. perf_analyzer's measurement windows
(`window_boundaries`) are not the duration: they run on past the last response kept (6.0 s of
windows around 4.8 s of requests in a level of 20, 36.0 s around 35.5 s in one of 53).

The experiment must be the summary's load (its concurrency or request rate), and its requests
over that duration the summary's request throughput (within `SAME_RUN`): else the file is
another run's, and is refused. Alone, the file is not imported: it holds no token counts (GenAI-
Perf counts them with a tokenizer) and names no GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import PurePath, PurePosixPath
from typing import Any

import numpy as np
import orjson

from fleetplan.core.errors import InputError
from fleetplan.core.stats import summarise_ms
from fleetplan.warehouse.importers.base import ImportOptions
from fleetplan.warehouse.importers.document import companion_values

DEFAULT_NAME = "profile_export.json"
SUMMARY_SUFFIX = "_genai_perf.json"
SAME_RUN = 0.01  # requests / duration within 1 % of the summary's request throughput


@dataclass(frozen=True, slots=True)
class RawFigures:
    """What the raw export gives a summary without a count or duration."""

    completed: int
    duration_s: float
    start_s: tuple[float, ...]  # each request's send time, from the first (the send rate)
    load: tuple[str, float]  # the experiment's mode ("concurrency", "request_rate") and value
    means_ms: dict[str, float | None]  # mean TTFT and E2EL, to compare with the summary's
    notes: list[str]


def is_raw_export(value: Any) -> bool:
    """perf_analyzer's raw profile export (GenAI-Perf's profile_export.json)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("experiments"), list)
        and "service_kind" in value
    )


def looks_raw(data: bytes) -> bool:
    """Whether a file's first bytes are a raw export's (for one saved under another name)."""
    head = data[:256].lstrip()
    return head.startswith(b"{") and b'"experiments"' in head


def raw_names(config: dict, summary_name: str) -> tuple[str, ...]:
    """The raw export's possible base names, first to look for first: as `profile_export_file`
    says (GenAI-Perf 2024's flat input_config, or its `output` section), as the summary's name
    says (GenAI-Perf names it `<raw export's stem>_genai_perf.json`), and the default."""
    output = config.get("output") if isinstance(config.get("output"), dict) else {}
    named = config.get("profile_export_file") or output.get("profile_export_file")
    names = []
    if isinstance(named, str) and named.strip():
        names.append(PurePosixPath(named.strip().replace("\\", "/")).name)
    base = PurePath(summary_name).name
    if base.endswith(SUMMARY_SUFFIX) and base != SUMMARY_SUFFIX:
        names.append(base.removesuffix(SUMMARY_SUFFIX) + ".json")
    names.append(DEFAULT_NAME)
    return tuple(dict.fromkeys(n for n in names if n))


def find_raw(companions: dict[str, bytes], names: tuple[str, ...]) -> tuple[str, bytes] | None:
    """The raw export among the files given with the summary: the first of `names`, else the one
    file with a raw export's first bytes (two or more: none, as no name says which)."""
    for name in names:
        if name in companions and looks_raw(companions[name]):
            return name, companions[name]
    others = [(n, d) for n, d in companions.items() if looks_raw(d)]
    return others[0] if len(others) == 1 else None


def raw_figures(
    name: str,
    data: bytes,
    summary_file: str,
    load: tuple[str, float] | None,
    request_throughput: float | None,
    options: ImportOptions,
) -> RawFigures:
    """The count, duration and send times of the experiment at the summary's `load` (mode,
    value; any single experiment where the summary says none), as GenAI-Perf counted them."""
    file = f"{summary_file} (its {name})"
    values = companion_values(
        data, name=file, limit=options.size_limit(), max_values=options.value_limit()
    )
    export = values[0] if len(values) == 1 else None
    if not is_raw_export(export):
        raise InputError("not perf_analyzer's raw profile export", file=file, field="experiments")
    assert isinstance(export, dict)
    experiment, found = _experiment(export["experiments"], load, file)
    requests = experiment.get("requests")
    if not isinstance(requests, list) or not requests:
        raise InputError("no requests", file=file, field="experiments.requests")
    openai = str(export.get("service_kind", "")).lower() == "openai"
    starts, firsts, lasts = [], [], []
    silent = 0
    for i, request in enumerate(requests):
        start, times = _request(request, openai, file, i)
        if not times:
            silent += 1
            continue
        starts.append(start)
        firsts.append(times[0])
        lasts.append(times[-1])
    if not starts:
        raise InputError("no request answered with text", file=file, field="response_outputs")
    first = min(starts)  # whole ns: past a float's exact integers
    duration = (max(lasts) - first) / 1e9
    if duration <= 0:
        raise InputError("its requests span no time", file=file, field="timestamp")
    _same_run(len(requests) / duration, request_throughput, file)
    notes = [_said(name, len(starts), duration, experiment.get("window_boundaries"))]
    if silent:
        notes.append(
            f"{silent} request(s) in {name} answered no text: not counted as completed "
            "(GenAI-Perf counted them in its request throughput)"
        )
    ttft = np.array([(a - s) / 1e9 for a, s in zip(firsts, starts, strict=True)])
    e2el = np.array([(b - s) / 1e9 for b, s in zip(lasts, starts, strict=True)])
    means = {
        "ttft_mean_ms": summarise_ms(ttft, "ttft")["ttft_mean_ms"],
        "e2el_mean_ms": summarise_ms(e2el, "e2el")["e2el_mean_ms"],
    }
    return RawFigures(
        completed=len(starts),
        duration_s=duration,
        start_s=tuple((s - first) / 1e9 for s in sorted(starts)),
        load=found,
        means_ms=means,
        notes=notes,
    )


def _experiment(
    experiments: list, load: tuple[str, float] | None, file: str
) -> tuple[dict, tuple[str, float]]:
    """The experiment at the summary's load, with its (mode, value); another run's is refused."""
    seen = []
    for experiment in experiments:
        header = experiment.get("experiment") if isinstance(experiment, dict) else None
        mode = header.get("mode") if isinstance(header, dict) else None
        value = header.get("value") if isinstance(header, dict) else None
        if not isinstance(mode, str) or isinstance(value, bool):
            raise InputError("expected {mode, value}", file=file, field="experiments.experiment")
        if not isinstance(value, int | float) or not math.isfinite(value):
            raise InputError(f"{mode} {value!r}: not a number", file=file, field="experiment")
        seen.append((mode, float(value)))
        if load is None and len(experiments) == 1:
            return experiment, seen[0]
        if load is not None and mode == load[0] and math.isclose(value, load[1], rel_tol=1e-9):
            return experiment, seen[0]
    said = ", ".join(f"{m} {v:g}" for m, v in seen) or "none"
    if load is None:
        raise InputError(
            f"its summary does not say the load, and the raw export holds {len(seen)} "
            f"experiments ({said}): which one is the summary's is not known",
            file=file,
            field="experiments",
        )
    raise InputError(
        f"its experiments are {said}, but the summary's input_config says {load[0]} "
        f"{load[1]:g}: not the same run",
        file=file,
        field="experiments.experiment",
    )


def _request(request: Any, openai: bool, file: str, i: int) -> tuple[int, list[int]]:
    """A request's send time and the times of its responses with text (ns)."""
    where = f"request {i + 1}"
    if not isinstance(request, dict):
        raise InputError(f"{where}: expected an object", file=file, field="requests")
    start = request.get("timestamp")
    times = request.get("response_timestamps")
    outputs = request.get("response_outputs")
    if not _whole_ns(start):
        raise InputError(f"{where}: expected a time in ns", file=file, field="timestamp")
    if not isinstance(times, list) or not all(_whole_ns(t) for t in times):
        raise InputError(f"{where}: expected times in ns", file=file, field="response_timestamps")
    if not isinstance(outputs, list) or len(outputs) != len(times):
        raise InputError(
            f"{where}: expected one output per response time",
            file=file,
            field="response_outputs",
        )
    kept = [t for t, out in zip(times, outputs, strict=True) if not openai or _has_text(out)]
    if kept and min(kept) < start:
        raise InputError(f"{where}: a response before the request", file=file, field="timestamp")
    return start, sorted(kept)


def _whole_ns(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def _has_text(output: Any) -> bool:
    """Whether an OpenAI response (one or more server-sent events) carries text; one that cannot
    be read is taken to (GenAI-Perf would have stopped on it)."""
    response = output.get("response") if isinstance(output, dict) else None
    if not isinstance(response, str):
        return True
    for event in response.strip().split("\n\n"):
        body = event.strip().removeprefix("data:").strip()
        if not body or body == "[DONE]":
            continue
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError:
            return True
        choices = data.get("choices") if isinstance(data, dict) else None
        choice = choices[0] if isinstance(choices, list) and choices else None
        if not isinstance(choice, dict):
            continue
        delta = choice.get("delta") if isinstance(choice.get("delta"), dict) else {}
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        if any(
            isinstance(text, str) and text
            for text in (delta.get("content"), choice.get("text"), message.get("content"))
        ):
            return True
    return False


def _same_run(rate: float, stated: float | None, file: str) -> None:
    if stated is not None and stated > 0 and abs(rate - stated) > SAME_RUN * stated:
        raise InputError(
            f"its requests over their span give {rate:.6g} req/s, but the summary states "
            f"{stated:.6g}: not the same run",
            file=file,
            field="request_throughput",
        )


def _said(name: str, count: int, duration: float, windows: Any) -> str:
    """Where the count and duration came from, in words."""
    note = (
        f"request count and duration from perf_analyzer's raw export {name} (the summary states "
        f"neither): {count} requests answered, over {duration:.6g} s from the first request "
        "sent to the last response (GenAI-Perf's benchmark duration)"
    )
    if isinstance(windows, list) and len(windows) >= 2 and all(_whole_ns(w) for w in windows):
        span = (max(windows) - min(windows)) / 1e9
        note += f"; its {len(windows) - 1} measurement window(s) span {span:.6g} s"
    return note
