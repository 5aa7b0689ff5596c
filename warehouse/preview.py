"""What files would bring into the warehouse, before anything is stored: one `Preview` per file,
in the order given. `fleetplan ingest` (warehouse.ingest) and the app's upload page both sort
files this way, so the two cannot drift:

- a per-request file given with its summary (`companion_pairs`) is `included` in the summary;
- a file that a format reads with another, named in its content (GenAI-Perf 2024's summary and
  perf_analyzer's raw export, `CompanionMissingError`), is read again with that file, found
  beside it (`_beside`): among the files given, else (`fleetplan ingest`) on disk;
- a file over the size limit, or unreadable, is `rejected`; so is one no format can read, or
  one whose content is refused (the message names the field);
- a file tools write beside their results (prompts, server metrics, CSV views) is `skipped`,
  with the file to import instead;
- a file whose bytes were imported before is a `duplicate` (it is not parsed again); so is one
  whose every run the warehouse holds already (the same origin file and position: the raw file
  behind a sample-data file, or a copy of a file with other bytes), with its `ParsedFile` to show;
- anything else is `ready`, with its `ParsedFile` to store (runs already present, by `present`,
  are skipped when it is stored).

The user's traffic label (warehouse.labels) is applied to the parsed runs here, so the CLI and the
page store the same runs.
"""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import PurePath

from fleetplan.core.errors import (
    CompanionMissingError,
    InputError,
    NotResultsError,
    WarehouseError,
)
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.identity import run_keys
from fleetplan.warehouse.importers.base import FileInput, ImportOptions, ParsedFile
from fleetplan.warehouse.importers.document import SPREADSHEETS, banner_report, serving_banner
from fleetplan.warehouse.importers.genai_bench import LEVEL_NAME as GENAI_BENCH_LEVEL
from fleetplan.warehouse.importers.genai_bench import METADATA as GENAI_BENCH_METADATA
from fleetplan.warehouse.importers.inference_perf import STAGE_NAME
from fleetplan.warehouse.importers.llmd_report import PARTIAL_NAME
from fleetplan.warehouse.importers.registry import parse, refuse_large
from fleetplan.warehouse.labels import label_traffic
from fleetplan.warehouse.store import find_source, runs_present

log = logging.getLogger(__name__)

# How a file's bytes are got, under the options' limits (InputError when it cannot be read or is
# too large): a path is read only when its turn comes, so a large folder is never held whole.
Loader = Callable[[ImportOptions], FileInput]


# Inside a folder, notes, logs, plots and scripts beside the results are listed as skipped, and
# not read (a file named explicitly is always read).
_SKIPPED_SUFFIXES = {
    ".txt": "notes or a log",
    ".md": "notes",
    ".log": "a log",
    ".out": "a log",
    ".err": "a log",
    ".png": "a plot",
    ".jpg": "a picture",
    ".svg": "a plot",
    ".html": "a web page",
    ".pdf": "a document",
    ".py": "a script",
    ".sh": "a script",
    ".ipynb": "a notebook",
    ".parquet": "a data table (fleetplan reads its JSON, YAML and CSV files)",
    ".xlsx": "a spreadsheet (a tool's summary of the result files beside it)",
    ".xlsm": "a spreadsheet (a tool's summary of the result files beside it)",
    ".db": "a database file",
    ".duckdb": "a warehouse file",
}


# Logs that may end in a report fleetplan reads (trtllm-bench prints its report to the log): read,
# and passed over unless they hold one (`document.banner_report`).
LOGS = frozenset({".txt", ".log", ".out"})


# Files a tool writes beside its results, by name: MLPerf LoadGen's run folder holds its summary
# (read), its detail log (a .txt, passed over), its accuracy log and its trace (often empty).
_SKIPPED_NAMES = {
    "mlperf_log_accuracy.json": "MLPerf LoadGen's accuracy log (the outputs, not timings)",
    "mlperf_log_trace.json": "MLPerf LoadGen's trace",
}


def passed_over(name: str, data: bytes | None = None, *, json_beside: bool = True) -> str | None:
    """What a file inside a folder is when it is not read (notes, logs, plots), or None; a log
    whose bytes (`data`, where read) hold a report is read, and one that holds the result banner
    of vLLM's or SGLang's serving benchmark where no JSON file is beside it (`json_beside`: the
    run's own result, which says more, would be read twice)."""
    if (known := _SKIPPED_NAMES.get(PurePath(name).name)) is not None:
        return f"{known}, not results: not read"
    suffix = PurePath(name).suffix.lower()
    if data is not None and suffix in LOGS and banner_report(data):
        return None
    if data is not None and suffix in LOGS and not json_beside and serving_banner(data):
        return None
    what = _SKIPPED_SUFFIXES.get(suffix)
    return f"{what} ({suffix}), not results: not read" if what else None


JSON_SUFFIXES = (".json", ".jsonl", ".json.gz", ".jsonl.gz")


def log_to_read(name: str, size: int, options: ImportOptions) -> bool:
    """Whether a file `passed_over` by its name is read all the same, to see whether it holds a
    report: a log (`LOGS`) within the size limit."""
    return PurePath(name).suffix.lower() in LOGS and size <= options.size_limit()


class FileStatus(StrEnum):
    READY = "ready"  # would be imported (a preview's answer; an import says imported)
    IMPORTED = "imported"
    DUPLICATE = "duplicate"
    REJECTED = "rejected"
    INCLUDED = "included"  # read as part of another file (a per-request file with its summary)
    SKIPPED = "skipped"  # a file tools write beside results (prompts, server metrics, CSV views)


@dataclass(frozen=True, slots=True)
class Preview:
    """What one file would bring, and why not when it would bring nothing."""

    file: str
    status: FileStatus
    message: str
    parsed: ParsedFile | None = None  # to store, when ready (to show, when its runs are present)
    duplicate_of: str | None = None  # the file(s) that brought the same bytes or runs before
    # Runs the warehouse holds already, by position in `parsed.runs`: the file that brought each.
    present: dict[int, str] = field(default_factory=dict)
    # Each run's identity (`identity.run_key`), by position: computed once, for the lookup of
    # what is present and for the store (a large file's keys take seconds).
    keys: tuple[str, ...] = ()

    @property
    def format(self) -> str:
        return self.parsed.importer if self.parsed else ""

    @property
    def runs(self) -> int:
        return len(self.parsed.runs) if self.parsed else 0

    @property
    def points(self) -> int:
        return self.parsed.points if self.parsed else 0

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.parsed.warnings if self.parsed else ()


def companion_pairs(names: Iterable[str]) -> dict[str, str]:
    """Files that belong together, by name within one folder (summary -> per-request file):
    LLMPerf's `X_summary.json` and `X_individual_responses.json`, or the LLMPerf leaderboard's
    `summary/X.json` and `individual/X.json` (ray-project/llmperf-leaderboard's raw_data);
    AIPerf's `profile_export_aiperf.json` and `profile_export.jsonl`."""
    present = set(names)
    pairs = {}
    for name in present:
        path = PurePath(name)
        leaderboard = path.parent.parent / "individual" / path.name
        if path.parent.name == "summary" and str(leaderboard) in present:
            pairs[name] = str(leaderboard)
            continue
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


def context_names(name: str) -> dict[str, list[str]]:
    """Files a results file is read with, by the base name the format knows them by, each with
    where to look (first found wins), without being part of it (each is listed on its own, as
    skipped): inference-perf's stage reports are read with the tool's config.yaml beside them
    or up to two folders up (an experiment's folder of its own, the config above, as the
    KubeCon NA 2025 demos lay it out: config.yaml, EXPERIMENT/manifests.yaml,
    EXPERIMENT/results/stage_N_lifecycle_metrics.json), and the experiment's exp-config.yaml or
    manifests.yaml beside them or one folder up."""
    path = PurePath(name)
    if GENAI_BENCH_LEVEL.search(path.name):  # genai-bench: the experiment's metadata beside it
        return {GENAI_BENCH_METADATA: [str(path.with_name(GENAI_BENCH_METADATA))]}
    if (partial := PARTIAL_NAME.match(path.name)) is not None:
        # llm-d's report of an inference-perf stage: the same level as the stage's own report
        lifecycle = f"stage_{partial[1]}_lifecycle_metrics.json"
        return {lifecycle: [str(path.with_name(lifecycle))]}
    if not STAGE_NAME.match(path.name):
        return {}
    above = (path.parent, path.parent.parent, path.parent.parent.parent)
    places = {"config.yaml": list(dict.fromkeys(str(folder / "config.yaml") for folder in above))}
    for base in ("exp-config.yaml", "manifests.yaml"):
        places[base] = [str(folder / base) for folder in (path.parent, path.parent.parent)]
    return places


# Reads a file read beside another (`context_names`) that is not among those given (the CLI
# reads it from disk); None when there is none.
ContextLoader = Callable[[str, ImportOptions], bytes | None]


def _context(
    name: str,
    loaders: dict[str, Loader],
    options: ImportOptions,
    extra: ContextLoader | None,
) -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for base, places in context_names(name).items():
        for place in places:
            try:
                if place in loaders:
                    data = loaders[place](options).data
                elif extra is not None:
                    data = extra(place, options)
                else:
                    data = None
            except InputError:  # unreadable or too large: read as absent
                data = None
            if data is not None:
                found[base] = data
                break
    return found


def preview_files(
    warehouse: Warehouse,
    files: Sequence[tuple[str, Loader]],
    options: ImportOptions,
    *,
    read_duplicates: bool = False,
    context: ContextLoader | None = None,
) -> Iterator[Preview]:
    """A preview of each (name, loader), lazily: a caller that stores each ready file before
    asking for the next sees a later copy of it as a duplicate (`preview_file`). Files a format
    reads beside another (`context_names`) are found among those given, else by `context`."""
    loaders = dict(files)
    pairs = companion_pairs(loaders)
    summaries = {companion: summary for summary, companion in pairs.items()}
    for name, load in files:
        if name in summaries:
            yield Preview(name, FileStatus.INCLUDED, f"read together with {summaries[name]}")
            continue
        file_options = options
        if name in pairs:
            try:
                data = loaders[pairs[name]](options).data
            except InputError as error:
                yield Preview(name, FileStatus.REJECTED, f"its per-request file: {error.detail}")
                continue
            partner = PurePath(pairs[name])
            key = (
                f"individual/{partner.name}"
                if partner.parent.name == "individual"
                else partner.name
            )
            file_options = replace(options, companions={key: data})
        if beside := _context(name, loaders, options, context):
            file_options = replace(file_options, companions=file_options.companions | beside)
        try:
            file = load(file_options)
        except NotResultsError as error:  # a log or notes beside the results: not read
            yield Preview(name, FileStatus.SKIPPED, error.detail)
            continue
        except InputError as error:
            yield Preview(name, FileStatus.REJECTED, error.detail)
            continue
        beside = _beside(name, loaders, context)
        yield preview_file(
            warehouse, file, file_options, read_duplicates=read_duplicates, beside=beside
        )


# The files beside one, that a format asked for (`CompanionMissingError`): by base name.
Beside = Callable[[CompanionMissingError, ImportOptions], dict[str, bytes]]


def _beside(name: str, loaders: dict[str, Loader], extra: ContextLoader | None) -> Beside:
    """Finds what a format asks for beside `name`: the first of the names it gives, among the
    files given, else by `extra` (from disk); else every file given in the same folder whose
    bytes the format accepts (a companion saved under another name)."""
    folder = PurePath(name).parent

    def read(place: str, options: ImportOptions) -> bytes | None:
        try:
            if place in loaders:
                return loaders[place](options).data
            return extra(place, options) if extra is not None else None
        except InputError:  # unreadable, too large or not results: read as absent
            return None

    def find(missing: CompanionMissingError, options: ImportOptions) -> dict[str, bytes]:
        for base in missing.names:
            if (data := read(str(folder / base), options)) is not None:
                return {base: data}
        if missing.accepts is None:
            return {}
        found = {}
        for place in loaders:
            path = PurePath(place)
            if place != name and path.parent == folder and path.suffix.lower() == ".json":
                data = read(place, options)
                if data is not None and missing.accepts(data):
                    found[path.name] = data
        return found

    return find


def preview_uploads(
    warehouse: Warehouse, uploads: Sequence[tuple[str, bytes]], options: ImportOptions
) -> list[Preview]:
    """`preview_files` for files given as bytes (an upload): (name, bytes), in order; files
    imported before are read too, to show what they hold."""

    def loader(name: str, data: bytes) -> Loader:
        def load(options: ImportOptions) -> FileInput:
            # as in a folder given to `fleetplan ingest`: a log is read for a report in it
            what = passed_over(name)
            beside = PurePath(name).parent in json_folders
            if what and (
                not log_to_read(name, len(data), options)
                or passed_over(name, data, json_beside=beside)
            ):
                raise NotResultsError(what, file=name)
            refuse_large(name, len(data), options)  # clients may not enforce the limit
            return FileInput.from_bytes(name, data)

        return load

    files = unzip_uploads(uploads, options)
    json_folders = {PurePath(n).parent for n, _ in files if n.lower().endswith(JSON_SUFFIXES)}
    named = [(n, loader(n, d)) for n, d in files]
    return list(preview_files(warehouse, named, options, read_duplicates=True))


_ZIP_MEMBERS = 10_000


def unzip_uploads(
    uploads: Sequence[tuple[str, bytes]], options: ImportOptions
) -> list[tuple[str, bytes]]:
    """The uploads, each zip archive (a tool's whole output folder) as its files, named
    `archive.zip/folder/file` so that files read together are found as in a folder: hidden
    files and macOS's __MACOSX are left out, as `fleetplan ingest DIR` leaves them. A member
    over the size limit is kept as its first bytes past it, so the limit refuses it by name
    (never unpacked whole: a zip bomb stops there); a broken archive is one rejected file."""
    import io
    import zipfile

    out: list[tuple[str, bytes]] = []
    limit = options.size_limit()
    for name, data in uploads:
        if data[:4] != b"PK\x03\x04" or name.lower().endswith(SPREADSHEETS):
            out.append((name, data))
            continue
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                members = [m for m in archive.infolist() if not m.is_dir()][:_ZIP_MEMBERS]
                for member in sorted(members, key=lambda m: m.filename):
                    parts = PurePath(member.filename).parts
                    if any(p.startswith(".") or p == "__MACOSX" for p in parts) or ".." in parts:
                        continue
                    with archive.open(member) as stream:
                        out.append((f"{name}/{'/'.join(parts)}", stream.read(limit + 1)))
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, EOFError):
            out.append((name, data))  # refused as a zip archive fleetplan could not open
    return out


def preview_file(
    warehouse: Warehouse,
    file: FileInput,
    options: ImportOptions,
    *,
    read_duplicates: bool = False,
    beside: Beside | None = None,
) -> Preview:
    """One file read and checked against the warehouse; never raises for the file's content. A
    file imported before is not parsed again, unless `read_duplicates` (the upload page shows
    what such a file holds). A file a format reads with another is read again with what
    `beside` finds."""
    try:
        if earlier := find_source(warehouse, file.sha256):
            message = f"already imported as {earlier[0]} on {earlier[1]}: nothing added"
            shown = (
                _parsed_if_readable(warehouse, file, options, beside) if read_duplicates else None
            )
            parsed, present = shown or (None, {})
            return Preview(file.name, FileStatus.DUPLICATE, message, parsed, earlier[0], present)
        parsed = label_traffic(_parse(file, options, beside), options)
        keys = run_keys(parsed.runs)
        present = runs_present(warehouse, file.sha256, parsed.runs, keys)
    except NotResultsError as error:
        return Preview(file.name, FileStatus.SKIPPED, error.detail)
    except InputError as error:
        return Preview(file.name, FileStatus.REJECTED, _naming_another(error, file.name))
    except WarehouseError:
        raise
    except Exception as error:  # a bug: the file is refused (nothing stored), not a traceback
        log.exception("unexpected error importing %s", file.name)
        return Preview(file.name, FileStatus.REJECTED, unexpected_error(error))
    if present and len(present) == len(parsed.runs):
        holders = ", ".join(sorted(set(present.values())))
        message = f"its {len(present)} run(s) are already in the warehouse (from {holders})"
        return Preview(file.name, FileStatus.DUPLICATE, message, parsed, holders, present, keys)
    message = f"{parsed.points} point(s) in {len(parsed.runs)} run(s) via {parsed.importer}"
    if present:
        holders = ", ".join(sorted(set(present.values())))
        message += f"; {len(present)} run(s) already present (from {holders}) will be skipped"
    return Preview(file.name, FileStatus.READY, message, parsed, present=present, keys=keys)


def _parse(file: FileInput, options: ImportOptions, beside: Beside | None) -> ParsedFile:
    """`registry.parse`, again with the files a format asked for where `beside` finds them."""
    try:
        return parse(file, options)
    except CompanionMissingError as missing:
        found = beside(missing, options) if beside is not None else {}
        if not found:
            raise
        return parse(file, replace(options, companions=options.companions | found))


def _parsed_if_readable(
    warehouse: Warehouse, file: FileInput, options: ImportOptions, beside: Beside | None = None
) -> tuple[ParsedFile, dict[int, str]] | None:
    """What an imported file holds, to show; None when today's options cannot read it (the
    file is a duplicate either way)."""
    try:
        parsed = label_traffic(_parse(file, options, beside), options)
    except InputError:
        return None
    return parsed, runs_present(warehouse, file.sha256, parsed.runs)


def unexpected_error(error: Exception) -> str:
    if "No space left on device" in str(error) or getattr(error, "errno", None) == errno.ENOSPC:
        return "the disk is full: nothing stored; free some space and import it again"
    return f"unexpected error ({type(error).__name__}): nothing stored; please report it"


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
                    "configured_rate_rps": point.configured_rate_rps,
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


def _naming_another(error: InputError, name: str) -> str:
    """What a refusal says, naming the file read with this one when that file is the one refused
    (a per-request file beside its summary, a tool's config)."""
    if not error.file or error.file == name:
        return error.detail
    other = error.file.removeprefix(name).strip(" ()") or error.file
    return f"{other}: {error.detail}"
