"""Importers: turn a result file into runs of the data contract. The format is detected from the
content, never from the file name."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from fleetplan.warehouse.importers import fleetplan_json, vllm_json
from fleetplan.warehouse.importers.document import megabytes, read_document, unpack

from fleetplan.core.contract import Run
from fleetplan.core.errors import FileTooLargeError, InputError, NotResultsError, UnknownFormatError

DEFAULT_MAX_FILE_MB = 32.0
MAX_FILE_ENV = "FLEETPLAN_MAX_FILE_MB"
DEFAULT_MAX_VALUES = 5_000_000
MAX_VALUES_ENV = "FLEETPLAN_MAX_VALUES"


@dataclass(frozen=True, slots=True)
class ImportOptions:
    """What the user tells us that a file may lack. Fills gaps; never overrides the file."""

    model: str | None = None
    gpu: str | None = None
    gpu_count: int | None = None
    max_file_bytes: int | None = None
    max_values: int | None = None
    # Other files given together (same folder or upload), by base name: LLMPerf writes a run as
    # a summary file and a per-request file.
    companions: dict[str, bytes] = field(default_factory=dict)

    def value_limit(self) -> int:
        if self.max_values is not None:
            return self.max_values
        return int(os.environ.get(MAX_VALUES_ENV, DEFAULT_MAX_VALUES))

    def size_limit(self) -> int:
        if self.max_file_bytes is not None:
            return self.max_file_bytes
        return int(float(os.environ.get(MAX_FILE_ENV, DEFAULT_MAX_FILE_MB)) * 1024 * 1024)


@dataclass(frozen=True, slots=True)
class FileInput:
    name: str
    data: bytes
    sha256: str

    @classmethod
    def from_bytes(cls, name: str, data: bytes) -> FileInput:
        return cls(name=name, data=data, sha256=hashlib.sha256(data).hexdigest())


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """What a file holds, before anything is stored."""

    file: FileInput
    importer: str
    importer_version: str
    runs: tuple[Run, ...]
    warnings: tuple[str, ...] = field(default=())

    @property
    def points(self) -> int:
        return sum(len(run.points) for run in self.runs)


def read_file(path: Path, options: ImportOptions) -> FileInput:
    """Read a file whole, refusing it before reading when it is over the size limit."""
    limit = options.size_limit()
    try:
        size = path.stat().st_size
        if size > limit:
            raise FileTooLargeError(
                f"the file is {megabytes(size)}, over the {megabytes(limit)} limit "
                f"(raise it with --max-file-mb or ${MAX_FILE_ENV})",
                file=str(path),
            )
        data = path.read_bytes()
    except OSError as error:
        raise InputError(
            f"cannot read the file: {error.strerror or error}", file=str(path)
        ) from None
    return FileInput.from_bytes(str(path), data)


# Every format fleetplan reads, tried in this order on the file's content.
def _importers() -> list:
    from fleetplan.warehouse.importers import csv_table, genai_perf, guidellm, llmperf

    return [fleetplan_json, vllm_json, guidellm, llmperf, genai_perf, csv_table]


def parse(file: FileInput, options: ImportOptions | None = None) -> ParsedFile:
    """Detect the file's format from its content and read its runs; raises InputError."""
    options = options or ImportOptions()
    limit = options.size_limit()
    if len(file.data) > limit:
        raise FileTooLargeError(
            f"the file is {megabytes(len(file.data))}, over the {megabytes(limit)} limit",
            file=file.name,
        )
    data = unpack(file.data, name=file.name, limit=limit)
    document = read_document(data, name=file.name, max_values=options.value_limit())
    for importer in _importers():
        if importer.detect(document):
            runs, warnings = importer.parse(document, file, options)
            return ParsedFile(file, importer.IMPORTER, importer.VERSION, tuple(runs),
                              tuple(warnings))  # fmt: skip
    first = document.values[0] if document.values else None
    if (companion := _not_results(first)) is not None:
        raise NotResultsError(companion, file=file.name)
    raise UnknownFormatError(
        f"not a format fleetplan can import ({_describe(first)}); it reads vLLM `bench serve` "
        "results, GuideLLM reports, LLMPerf results, GenAI-Perf/AIPerf exports, fleetplan run "
        "files and the CSV table of `fleetplan benchmarks`",
        file=file.name,
    )


def _not_results(value: object) -> str | None:
    """What a file that tools write beside their results is, and which file to import instead."""
    if not isinstance(value, dict):
        return None
    keys = value.keys()
    data = value.get("data")
    if (
        keys == {"data"}
        and isinstance(data, list)
        and data
        and isinstance(data[0], dict)
        and {"payload", "payloads", "session_id"} & data[0].keys()
    ):
        return (
            "the prompts a GenAI-Perf/AIPerf run sent (inputs.json), not results: import "
            "profile_export_aiperf.json or profile_export_genai_perf.json from the same run"
        )
    if {"experiments", "service_kind"} <= keys:
        return (
            "perf_analyzer's raw profile (GenAI-Perf's profile_export.json): import "
            "profile_export_genai_perf.json from the same run"
        )
    if {"metrics_phase", "aiperf_version"} <= keys or (
        "aiperf_version" in keys and "request_throughput" not in keys and "metrics" in keys
    ):
        return (
            "AIPerf's server metrics (server_metrics_export.json), not client results: "
            "import profile_export_aiperf.json from the same run"
        )
    return None


def _describe(value: object) -> str:
    if isinstance(value, dict):
        keys = ", ".join(sorted(map(str, value))[:8])
        return f"a JSON object with keys {keys}" if keys else "an empty JSON object"
    return f"a JSON {type(value).__name__}"
