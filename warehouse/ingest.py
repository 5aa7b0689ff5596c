"""`fleetplan ingest`: files and folders into the warehouse, one file per transaction.

Each file is previewed (warehouse.preview: pairing, limits, duplicates, parsing, the same as the
app's upload) and, when ready, stored at once, before the next file is read.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fleetplan.core.errors import NotResultsError, WarehouseError
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.importers.base import FileInput, ImportOptions, ParsedFile
from fleetplan.warehouse.importers.registry import read_file
from fleetplan.warehouse.preview import (
    JSON_SUFFIXES,
    FileStatus,
    Loader,
    Preview,
    log_to_read,
    passed_over,
    preview_file,
    preview_files,
    unexpected_error,
)
from fleetplan.warehouse.reference import ensure_reference
from fleetplan.warehouse.store import SourceFile, find_source, store_runs

log = logging.getLogger(__name__)

_SKIPPED_NAMES = {".DS_Store", "Thumbs.db"}


@dataclass(frozen=True, slots=True)
class Outcome:
    """What happened to one file."""

    file: str
    status: FileStatus
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
                    and _within(child, path)
                    and child.name not in _SKIPPED_NAMES
                ):
                    yield child
        else:
            yield path


def _within(child: Path, folder: Path) -> bool:
    """Whether a file found under `folder` is there, not a link out of it (to /etc/shadow):
    a folder given is read, never what its links point at elsewhere."""
    if child.resolve().is_relative_to(folder.resolve()):
        return True
    log.warning("not following %s: a link out of %s", child, folder)
    return False


def ingest_paths(
    warehouse: Warehouse,
    paths: Iterable[str | Path],
    options: ImportOptions | None = None,
    *,
    origin: str = "cli",
) -> Iterator[Outcome]:
    """Ingest each file; a rejected file changes nothing and does not stop the others."""
    named = {str(Path(raw)) for raw in paths}
    files = [(str(path), _reader(path, str(path) in named)) for path in expand(paths)]
    previews = preview_files(warehouse, files, options or ImportOptions(), context=_beside)
    for preview in previews:
        yield _commit(warehouse, preview, origin)


def _beside(name: str, options: ImportOptions) -> bytes | None:
    """A file read beside a results file (a tool's config), from disk when it is there."""
    path = Path(name)
    return read_file(path, options).data if path.is_file() else None


def _reader(path: Path, named: bool) -> Loader:
    def load(options: ImportOptions) -> FileInput:
        if not named and (what := passed_over(path.name)):
            if not log_to_read(path.name, path.stat().st_size, options):
                raise NotResultsError(what, file=str(path))
            file = read_file(path, options)  # a log, for a report it may end in
            if passed_over(path.name, file.data, json_beside=_json_beside(path)):
                raise NotResultsError(what, file=str(path))
            return file
        log.info("reading %s", path)
        return read_file(path, options)

    return load


def _json_beside(path: Path) -> bool:
    """Whether a JSON file is beside a log in its folder (the run's own result may be it)."""
    try:
        return any(p.name.lower().endswith(JSON_SUFFIXES) for p in path.parent.iterdir())
    except OSError:
        return True


def ingest_file(
    warehouse: Warehouse,
    file: FileInput,
    options: ImportOptions | None = None,
    *,
    origin: str = "cli",
) -> Outcome:
    """Ingest one file already in memory."""
    return _commit(warehouse, preview_file(warehouse, file, options or ImportOptions()), origin)


def ingest_parsed(warehouse: Warehouse, parsed: ParsedFile, *, origin: str = "cli") -> Outcome:
    """Store a file previewed earlier (the app previews before it commits): checked again for
    duplicates, since the warehouse may have changed meanwhile."""
    earlier = find_source(warehouse, parsed.file.sha256)
    if earlier is not None:
        message = f"already imported as {earlier[0]} on {earlier[1]}: nothing added"
        return Outcome(parsed.file.name, FileStatus.DUPLICATE, message)
    return _store(warehouse, parsed, origin)


def _commit(warehouse: Warehouse, preview: Preview, origin: str) -> Outcome:
    """A preview's file stored when it is ready (just checked: no second duplicate lookup)."""
    if preview.parsed is None or preview.status is not FileStatus.READY:
        return Outcome(preview.file, preview.status, preview.message)
    try:
        return _store(warehouse, preview.parsed, origin, preview.keys or None)
    except WarehouseError:
        raise
    except Exception as error:  # a bug: the transaction is rolled back, the file refused
        log.exception("unexpected error storing %s", preview.file)
        return Outcome(preview.file, FileStatus.REJECTED, unexpected_error(error))


def _store(
    warehouse: Warehouse, parsed: ParsedFile, origin: str, keys: Sequence[str] | None = None
) -> Outcome:
    ensure_reference(warehouse)  # a warehouse made by ingest alone knows its GPUs too
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
    result = store_runs(warehouse, source, parsed.runs, keys)
    if result.runs_added == 0:
        return Outcome(
            file.name,
            FileStatus.DUPLICATE,
            f"its {result.runs_already_present} run(s) are already in the warehouse "
            f"(from {', '.join(result.present_in)}): nothing added",
        )
    message = f"{result.runs_added} run(s), {result.points_added} point(s) via {parsed.importer}"
    if result.runs_already_present:
        message += f"; {result.runs_already_present} run(s) already present were skipped"
    return Outcome(
        file.name,
        FileStatus.IMPORTED,
        message,
        result.runs_added,
        result.points_added,
        parsed.warnings,
    )
