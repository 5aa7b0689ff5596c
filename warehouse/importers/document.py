"""Reading a file's bytes into a document, with the limits every import path shares.

gzip is unpacked (never past the size limit: a zip bomb stops there); a zip archive is refused
(unpack it first). JSON (one document, several appended, or JSON lines), YAML (no anchors or
aliases: a billion laughs stops there) and CSV (the canonical table) are recognised from the
content.
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from fleetplan.core.errors import FileTooLargeError, InputError, NotResultsError, UnknownFormatError
from fleetplan.core.files import megabytes
from fleetplan.core.strict import load_yaml
from fleetplan.warehouse.importers.jsonstream import decode_json_stream, refuse_repeated_keys

_CSV_HEADER = re.compile(r"^(?:\ufeff)?[^\n]*\bmodel\b[^\n]*\bgpu_model\b", re.MULTILINE)
_YAML_START = re.compile(r"^(---\s*\n)?[A-Za-z_][\w-]*:(\s|$)", re.MULTILINE)


# Reports printed in banner sections (`=====` lines around a title), found in the logs their users
# keep: trtllm-bench's text report (`trtllm_bench.py` reads it) and MLPerf LoadGen's summary
# (`mlperf.py`).
BANNER = re.compile(r"^={20,}\s*\n= ?PERFORMANCE OVERVIEW\s*\n={20,}", re.MULTILINE)
MLPERF = re.compile(r"^={20,}\s*\nMLPerf Results Summary\s*\n={20,}", re.MULTILINE)
# The result banner of vLLM's and SGLang's serving benchmarks, in a console log (`serving_text`):
# read where the log is named alone or no JSON result is beside it (`preview.passed_over`).
SERVING = re.compile(r"^=+ Serving Benchmark Result =+[ \t]*\r?$", re.MULTILINE)


_KEY_VALUE = re.compile(r"^\s*(?P<key>[^:\n]*?[^:\s])\s*:\s*(?P<value>\S.*?)\s*$")


def key_value(line: str) -> tuple[str, str] | None:
    """A banner report's `Key : value` line as (key, value), stripped; None for another line."""
    match = _KEY_VALUE.match(line)
    return (match["key"].strip(), match["value"]) if match else None


def banner_report(data: bytes) -> bool:
    """Whether text (a log a folder would pass over) holds a banner report to read."""
    text = data.decode("utf-8", errors="replace")
    return BANNER.search(text) is not None or MLPERF.search(text) is not None


def serving_banner(data: bytes) -> bool:
    """Whether text holds the result banner of vLLM's or SGLang's serving benchmark (`SERVING`),
    read in a folder only where no JSON result is beside it."""
    return SERVING.search(data.decode("utf-8", errors="replace")) is not None


@dataclass(frozen=True, slots=True)
class Document:
    kind: str  # json | yaml | csv | text (a banner report: `BANNER`, `MLPERF`, `SERVING`)
    values: list[Any]  # the JSON/YAML values one after another; for CSV, empty
    text: str  # the text, for CSV
    data: bytes  # the bytes after unpacking


# Zip archives that are documents, not a tool's folder: an Excel workbook (genai-bench writes its
# experiment's summary as one, beside the level files it is made from).
SPREADSHEETS = (".xlsx", ".xlsm")


def unpack(data: bytes, *, name: str, limit: int) -> bytes:
    if data[:4] == b"PK\x03\x04" and name.lower().endswith(SPREADSHEETS):
        raise InputError(
            "a spreadsheet (an Excel workbook): fleetplan reads the tools' JSON, YAML and CSV "
            "result files (genai-bench: the level files beside its summary)",
            file=name,
        )
    if data[:4] == b"PK\x03\x04":
        raise InputError("a zip archive: unpack it and import the result files inside", file=name)
    if data[:2] != b"\x1f\x8b":
        return data
    out = io.BytesIO()
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
            while chunk := stream.read(1 << 20):
                out.write(chunk)
                if out.tell() > limit:
                    message = f"the gzip file expands past the {megabytes(limit)} limit (a bomb?)"
                    raise FileTooLargeError(message, file=name)
    except (OSError, EOFError, zlib.error) as error:
        raise InputError(f"a broken gzip file: {error}", file=name) from None
    return out.getvalue()


# A quoted string (JSON's escapes); what is left once strings are blanked is structure and bare
# scalars (numbers, literals, YAML's and CSV's unquoted text).
_QUOTED = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
# Each byte's part in a value: 0 separates (space, `,` `:` `]` `}`), 1 opens a container (`{`
# `[`: each one is a value), 2 is inside a bare scalar, 3 a sign (`1-1-1` is three numbers).
_ROLE = np.full(256, 2, dtype=np.uint8)
_ROLE[list(b" \t\r\n,:]}")] = 0
_ROLE[list(b"{[")] = 1
_ROLE[list(b"-+")] = 3


def count_values(data: bytes) -> int:
    """An upper bound of the values a JSON/YAML/CSV text parses into, counted on the bytes before
    any is parsed: strings, containers (`{}{}{}` is three values with no separator) and bare
    scalars, or the separators plus one (a CSV's empty fields), whichever is more."""
    separators = data.count(b",") + data.count(b"\n") + 1
    blanked, strings = _QUOTED.subn(b" ", data)
    roles = _ROLE[np.frombuffer(blanked, dtype=np.uint8)]
    containers = int(np.count_nonzero(roles == 1))
    signs = int(np.count_nonzero(roles == 3))
    inside = roles == 2
    scalars = int(np.count_nonzero(inside[1:] & ~inside[:-1])) + int(inside[:1].sum())
    return max(separators, strings + containers + signs + scalars)


def read_document(data: bytes, *, name: str, max_values: int) -> Document:
    values = count_values(data)
    if values > max_values:
        raise FileTooLargeError(
            f"about {values:,} values, over the limit of {max_values:,} (raise it with "
            "--max-values or $FLEETPLAN_MAX_VALUES)",
            file=name,
        )
    try:
        parsed = decode_json_stream(data, file=name)
    except InputError as json_error:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise json_error from None
        head = "\n".join(
            line
            for line in text[:4096].splitlines()
            if line.strip() and not line.startswith("#")  # comments, blank lines (manifests)
        )
        if BANNER.search(text) or MLPERF.search(text) or SERVING.search(text):
            return Document("text", [], text, data)
        if _CSV_HEADER.search(head.split("\n", 1)[0] if head else ""):
            return Document("csv", [], text, data)
        if _YAML_START.match(head):
            # every document of the file (`---`): a Kubernetes manifest or a tool's config beside
            # the results is several; a format's detect decides what they are
            try:
                return Document("yaml", _load_yaml(text, name, every=True), text, data)
            except InputError:
                if not name.lower().endswith((".txt", ".log", ".out")):
                    raise
                # a console log that opens with "Key: value" lines, named as a log is
                raise UnknownFormatError(
                    "not a result file: text (a log or notes) that is not JSON, YAML or CSV",
                    file=name,
                ) from None
        _refuse_other_csv(text, name)
        start = text.lstrip("\ufeff \t\r\n")[:1]
        if start and start not in '{["-0123456789tfn':
            # (its bytes are not quoted: a file may hold what its reader must not see echoed)
            raise UnknownFormatError(
                "not a result file: text that is not JSON, YAML or CSV", file=name
            ) from None
        raise json_error from None
    refuse_repeated_keys(parsed, data, file=name)  # the last would win
    return Document("json", parsed, "", data)


# The CSV views other tools write of results they also write as JSON (which holds the settings,
# such as the load, that the CSV leaves out).
_AIPERF_JSON = "profile_export_aiperf.json"
_TOOL_CSVS = (
    (re.compile(r"^# AIPerf Server Metrics"), "AIPerf's server metrics", _AIPERF_JSON),
    (
        re.compile(r"^metric,mean,std,min,max,cv,"),
        "the CSV view of AIPerf's aggregate over a level's runs (aggregate/)",
        f"each run's {_AIPERF_JSON}",
    ),
    (
        re.compile(r"^[\w.]+,active_decode_throughput_mean,"),
        "the CSV view of AIPerf's sweep summary (sweep_aggregate/), the levels read already",
        f"each level's {_AIPERF_JSON}",
    ),
    (
        re.compile(r"^Metric,avg,"),
        "the CSV view of a GenAI-Perf/AIPerf export",
        f"{_AIPERF_JSON} or profile_export_genai_perf.json",
    ),
    (
        re.compile(r"^(Run Info|Benchmark|Metadata),"),
        "GuideLLM's CSV view of a report",
        "benchmarks.json (or .yaml)",
    ),
)


# A request trace (when each request came, its prompt and output lengths): the traffic a
# benchmark replays or a plan is sized for, kept beside results, not results. In CSV, Azure's LLM
# inference trace and fleetplan's own log (the columns `planner.scenario.workload` reads, which
# this floor may not import); in JSON lines, Mooncake's and GuideLLM's replay traces
# (`trace_line`).
TRACE_CSV_COLUMNS = (
    {"TIMESTAMP", "ContextTokens", "GeneratedTokens"},
    {"timestamp", "input_tokens", "output_tokens"},
)
TRACE_NOTE = "not benchmark results (a trace is what a benchmark replays or a plan is sized for)"
_TRACE_TIMES = {"timestamp", "arrival_time", "TIMESTAMP"}
_TRACE_INPUTS = {"input_length", "input_tokens", "prompt_tokens", "ContextTokens"}
_TRACE_OUTPUTS = {"output_length", "output_tokens", "GeneratedTokens"}


def trace_line(value: object) -> bool:
    """A request of a trace in JSON: an arrival time and token lengths, and nothing a result
    has (a result's keys are many more)."""
    if not isinstance(value, dict):
        return False
    keys = value.keys()
    return (
        len(keys) <= 8
        and bool(_TRACE_TIMES & keys)
        and bool(_TRACE_INPUTS & keys)
        and bool(_TRACE_OUTPUTS & keys)
    )


def _refuse_other_csv(text: str, name: str) -> None:
    first = text.lstrip("\ufeff").split("\n", 1)[0]
    for pattern, what, instead in _TOOL_CSVS:
        if pattern.match(first):
            raise NotResultsError(f"{what}: import {instead} from the same run", file=name)
    columns = {c.strip().strip('"') for c in first.split(",")}
    if any(trace <= columns for trace in TRACE_CSV_COLUMNS):
        raise NotResultsError(
            f"a request trace (arrival times and token counts), {TRACE_NOTE}: "
            "`fleetplan workload` turns it into traffic classes",
            file=name,
        )
    if first.count(",") >= 2 and not first.lstrip().startswith(("{", "[")):
        raise UnknownFormatError(
            "a CSV table without fleetplan's columns: `fleetplan template` writes the layout "
            "it reads (or export one with `fleetplan benchmarks --format csv`)",
            file=name,
        )


def companion_values(data: bytes, *, name: str, limit: int, max_values: int) -> list[Any]:
    """The JSON values of a file read together with another, under the same limits."""
    document = read_document(unpack(data, name=name, limit=limit), name=name, max_values=max_values)
    if document.kind != "json":
        raise InputError("expected JSON", file=name)
    return document.values


def companion_yaml(data: bytes, *, name: str, limit: int, max_values: int) -> list[Any]:
    """The documents of a YAML (or JSON) file read beside another (a tool's config), under the
    same limits; several documents (`---`, as Kubernetes manifests are) each one value."""
    data = unpack(data, name=name, limit=limit)
    values = count_values(data)
    if values > max_values:
        raise FileTooLargeError(f"about {values:,} values, over the limit", file=name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", file=name) from None
    return _load_yaml(text, name, every=True)


def _load_yaml(text: str, name: str, *, every: bool = False) -> list[Any]:
    # no anchors, aliases or a key twice (core.strict)
    if every:
        return load_yaml(text, file=name, every=True)
    return [load_yaml(text, file=name)]
