"""`fleetplan ingest`: files and folders into the warehouse, one file per transaction."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path, PurePath

from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.importers import FileInput, ImportOptions, ParsedFile, parse, read_file
from fleetplan.warehouse.store import SourceFile, find_source, store_runs

from fleetplan.core.errors import InputError, NotResultsError, WarehouseError

log = logging.getLogger(__name__)

_SKIPPED_NAMES = {".DS_Store", "Thumbs.db"}
# Inside a folder, notes and logs beside the results are passed over (a file named explicitly is
# always read).
_SKIPPED_SUFFIXES = {".txt", ".md", ".log", ".png", ".jpg", ".svg", ".html", ".pdf", ".py", ".sh"}


class Status(StrEnum):
    IMPORTED = "imported"
    DUPLICATE = "duplicate"
    REJECTED = "rejected"
    INCLUDED = "included"  # read as part of another file (a per-request file with its summary)
    SKIPPED = "skipped"  # a file tools write beside results (prompts, server metrics, CSV views)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one file."""

    file: str
    status: Status
    message: str
    runs: int = 0
    points: int = 0
    warnings: tuple[str, ...] = field(default=())


def expand(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Files as given, and every file under given folders (sorted, hidden files skipped)."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                hidden = any(part.startswith(".") for part in child.relative_to(path).parts)
                if (
                    child.is_file()
                    and not hidden
                    and child.name not in _SKIPPED_NAMES
                    and child.suffix.lower() not in _SKIPPED_SUFFIXES
                ):
                    yield child
        else:
            yield path


def _already_imported(warehouse: Warehouse, file: FileInput) -> Outcome | None:
    earlier = find_source(warehouse, file.sha256)
    if earlier is None:
        return None
    message = f"already imported as {earlier[0]} on {earlier[1]}: nothing added"
    return Outcome(file.name, Status.DUPLICATE, message)


def ingest_parsed(warehouse: Warehouse, parsed: ParsedFile, *, origin: str = "cli") -> Outcome:
    """Store an already parsed file (the app previews before it commits)."""
    if earlier := _already_imported(warehouse, parsed.file):
        return earlier
    return _store(warehouse, parsed, origin)


def _store(warehouse: Warehouse, parsed: ParsedFile, origin: str) -> Outcome:
    file = parsed.file
    source = SourceFile(
        name=Path(file.name).name,
        sha256=file.sha256,
        size_bytes=len(file.data),
        importer=parsed.importer,
        importer_version=parsed.importer_version,
        origin=origin,
        warnings=parsed.warnings,
    )
    result = store_runs(warehouse, source, parsed.runs)
    if result.runs_added == 0:
        return Outcome(
            file.name,
            Status.DUPLICATE,
            f"its {result.runs_already_present} run(s) are already in the warehouse "
            f"(from {', '.join(result.present_in)}): nothing added",
        )
    message = f"{result.runs_added} run(s), {result.points_added} point(s) via {parsed.importer}"
    if result.runs_already_present:
        message += f"; {result.runs_already_present} run(s) already present were skipped"
    return Outcome(
        file.name, Status.IMPORTED, message, result.runs_added, result.points_added, parsed.warnings
    )


def ingest_file(
    warehouse: Warehouse,
    file: FileInput,
    options: ImportOptions | None = None,
    *,
    origin: str = "cli",
) -> Outcome:
    try:
        if earlier := _already_imported(warehouse, file):
            return earlier
        return _store(warehouse, parse(file, options), origin)
    except NotResultsError as error:
        return Outcome(file.name, Status.SKIPPED, error.detail)
    except InputError as error:
        return Outcome(file.name, Status.REJECTED, error.detail)
    except WarehouseError:
        raise
    except Exception as error:  # a bug: the file is refused (nothing stored), not a traceback
        log.exception("unexpected error importing %s", file.name)
        message = f"unexpected error ({type(error).__name__}): nothing stored; please report it"
        return Outcome(file.name, Status.REJECTED, message)


def ingest_paths(
    warehouse: Warehouse,
    paths: Iterable[str | Path],
    options: ImportOptions | None = None,
    *,
    origin: str = "cli",
) -> Iterator[Outcome]:
    """Ingest each file; a rejected file changes nothing and does not stop the others."""
    options = options or ImportOptions()
    files = list(expand(paths))
    pairs = companion_pairs(str(p) for p in files)
    by_path = {str(p): p for p in files}
    for path in files:
        if str(path) in pairs.values():
            summary = next(s for s, c in pairs.items() if c == str(path))
            yield Outcome(str(path), Status.INCLUDED, f"read together with {summary}")
            continue
        file_options = options
        if str(path) in pairs:
            companion = by_path[pairs[str(path)]]
            try:
                data = read_file(companion, options).data
            except InputError as error:
                yield Outcome(str(path), Status.REJECTED, f"its per-request file: {error.detail}")
                continue
            file_options = replace(options, companions={companion.name: data})
        log.info("reading %s", path)
        try:
            file = read_file(path, file_options)
        except InputError as error:
            yield Outcome(str(path), Status.REJECTED, error.detail)
            continue
        yield ingest_file(warehouse, file, file_options, origin=origin)


def companion_pairs(names: Iterable[str]) -> dict[str, str]:
    """Files that belong together, by name within one folder (summary -> per-request file):
    LLMPerf's `X_summary.json` and `X_individual_responses.json`; AIPerf's
    `profile_export_aiperf.json` and `profile_export.jsonl`."""
    present = set(names)
    pairs = {}
    for name in present:
        path = PurePath(name)
        if path.name.endswith("_summary.json"):
            partner = path.name.removesuffix("_summary.json") + "_individual_responses.json"
        elif path.name == "profile_export_aiperf.json":
            partner = "profile_export.jsonl"
        else:
            continue
        partner_path = str(path.with_name(partner))
        if partner_path in present:
            pairs[name] = partner_path
    return pairs


def preview_rows(parsed: ParsedFile) -> list[dict[str, object]]:
    """What would be stored from a parsed file: one row per point, for a person to check."""
    rows = []
    for run in parsed.runs:
        for point in run.points:
            rows.append(
                {
                    "model": run.model,
                    "gpu_model": run.gpu_model,
                    "gpu_known": run.gpu_known,
                    "gpu_count": run.gpu_count,
                    "offered_rate_rps": point.offered_rate_rps,
                    "max_concurrency": point.max_concurrency,
                    "completed": point.completed,
                    "failed": point.failed,
                    "request_throughput_rps": point.request_throughput_rps,
                    "total_throughput_tps": point.total_throughput_tps,
                    "ttft_p99_ms": point.ttft_p99_ms,
                    "tpot_p99_ms": point.tpot_p99_ms,
                    "stats_source": point.stats_source.value,
                    "energy_method": point.energy_method.value,
                }
            )
    return rows
