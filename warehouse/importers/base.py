"""The importer contract: what a format is, what it is given, what it returns, and the glue every
format shares. A new format is one module that follows `Format`, built from this module alone.

- `Format`: a module with `IMPORTER` (the name stored with each imported file), `VERSION` (raise it
  when the same file would import differently), `detect(document)` (is this file mine? decided
  from the content, never the name) and `parse(document, source, options)` -> `Parsed` (the runs
  of the data contract, and warnings a person should read).
- `FileInput` (the bytes and their sha256), `ImportOptions` (what the user says that a file may
  lack, and the limits), `ParsedFile` (what the registry returns: a format's `Parsed` with the
  file and the format's name).
- The glue: `number` / `optional_number` / `finite` (the one reading of a JSON number),
  `Reader` (typed access to one object of a file), `validation` and `build` (pydantic's errors
  as an `InputError` naming the file and the field), `model_name` and `hardware` (what the file
  says, else what the user gave; a contradiction is refused), `timestamp`.

Every error a format raises is an `InputError` (or a subclass) naming the file, where in it, and
the field, with a message a user can act on.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple, Protocol, TypeVar, runtime_checkable

import numpy as np
from pydantic import ValidationError

from fleetplan.core.contract import Run, validation_message
from fleetplan.core.errors import InputError
from fleetplan.core.files import MAX_FILE_MB_CEILING, MAX_VALUES_CEILING, limit_from_env
from fleetplan.core.gpus import canonical_gpu, family_of, gpu_count_in_label
from fleetplan.warehouse.importers.document import Document

DEFAULT_MAX_FILE_MB = 32.0
MAX_FILE_ENV = "FLEETPLAN_MAX_FILE_MB"
DEFAULT_MAX_VALUES = 5_000_000
MAX_VALUES_ENV = "FLEETPLAN_MAX_VALUES"
# Larger integers lose precision as floats: no benchmark figure is that large.
_LARGEST_INTEGER = 2**53


# How a message asks for what a file lacks: by the command line's flags, or (`on_page`) by the
# upload page's fields, named as the page labels them.
_FLAGS = {
    "model": "--model",
    "gpu": "--gpu",
    "gpu_count": "--gpu-count",
    "dataset": "--dataset",
    "input_len": "--input-len",
    "output_len": "--output-len",
    "variant": "--variant",
}
_FIELDS = {
    "model": "Model",
    "gpu": "GPU",
    "gpu_count": "GPUs per server",
    "dataset": "Dataset",
    "input_len": "Input tokens",
    "output_len": "Output tokens",
    "variant": "Variant",
}


@dataclass(frozen=True, slots=True)
class ImportOptions:
    """What the user tells us that a file may lack. Fills gaps; never overrides the file."""

    model: str | None = None
    gpu: str | None = None
    gpu_count: int | None = None
    # The traffic the runs were measured with, for files that do not say (warehouse.labels).
    dataset: str | None = None
    input_len: int | None = None
    output_len: int | None = None
    # A free label of the server's set-up (`Run.variant`), for runs whose file gives none.
    variant: str | None = None
    on_page: bool = False  # given on the upload page: messages name its fields, not flags
    max_file_bytes: int | None = None
    max_values: int | None = None
    # Other files given together (same folder or upload), by base name: LLMPerf writes a run as
    # a summary file and a per-request file.
    companions: dict[str, bytes] = field(default_factory=dict)

    def value_limit(self) -> int:
        if self.max_values is not None:
            return self.max_values
        ceiling = MAX_VALUES_CEILING
        return int(limit_from_env(MAX_VALUES_ENV, DEFAULT_MAX_VALUES, whole=True, ceiling=ceiling))

    def size_limit(self) -> int:
        if self.max_file_bytes is not None:
            return self.max_file_bytes
        ceiling = MAX_FILE_MB_CEILING
        megabytes = limit_from_env(MAX_FILE_ENV, DEFAULT_MAX_FILE_MB, whole=False, ceiling=ceiling)
        return int(megabytes * 1024 * 1024)

    def name_of(self, key: str) -> str:
        """What the user calls the option `key` ("gpu"): "--gpu", or "the GPU given above"."""
        return f"the {_FIELDS[key]} given above" if self.on_page else _FLAGS[key]

    def ask_for(self, *keys: str) -> str:
        """A request for options the file lacks: "give --gpu and --gpu-count", or "choose the
        GPU and GPUs per server above the upload"."""
        if self.on_page:
            return f"choose the {' and '.join(_FIELDS[k] for k in keys)} above the upload"
        return f"give {' and '.join(_FLAGS[k] for k in keys)}"


@dataclass(frozen=True, slots=True)
class FileInput:
    """A file's name (as given: a path or an upload's name), its bytes and their sha256."""

    name: str
    data: bytes
    sha256: str

    @classmethod
    def from_bytes(cls, name: str, data: bytes) -> FileInput:
        return cls(name=name, data=data, sha256=hashlib.sha256(data).hexdigest())


class Parsed(NamedTuple):
    """What a format reads from one file: runs of the data contract, warnings for a person, and
    the point figures the format derived rather than read (never checked against the figures
    they were derived from: warehouse.consistency)."""

    runs: list[Run]
    warnings: list[str]
    derived: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class ParsedFile:
    """What a file holds, before anything is stored: a format's `Parsed`, with the file and the
    format's name and version (stored with the file)."""

    file: FileInput
    importer: str
    importer_version: str
    runs: tuple[Run, ...]
    warnings: tuple[str, ...] = field(default=())

    @property
    def points(self) -> int:
        return sum(len(run.points) for run in self.runs)


@runtime_checkable
class Format(Protocol):
    """One format fleetplan imports: a module with these names (the registry lists it)."""

    IMPORTER: str
    VERSION: str

    def detect(self, document: Document) -> bool:
        """Whether the document is this format's, from its content. Cheap: every file is asked."""
        ...

    def parse(self, document: Document, source: FileInput, options: ImportOptions) -> Parsed:
        """The file's runs, or an InputError naming the file and the field."""
        ...


# -- numbers --------------------------------------------------------------------------------------


def _not_a_number(value: Any) -> str | None:
    """Why a JSON value is not a usable number, or None when it is one."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"expected a number, got {type(value).__name__} {value!r:.40}"
    if isinstance(value, int) and abs(value) > _LARGEST_INTEGER:
        return f"the number {str(value)[:20]}... is implausibly large"
    if not math.isfinite(value):
        return f"expected a finite number, got {value}"
    return None


def number(value: Any, *, file: str, field: str, where: str = "", integer: bool = False) -> float:
    """A finite, non-negative, plausible number (a whole one if `integer`: then an int), or an
    InputError naming the field."""
    prefix = f"{where}: " if where else ""
    problem = _not_a_number(value)
    if problem is None and value < 0:
        problem = f"expected a number >= 0, got {value}"
    if problem is None and integer and value != int(value):
        problem = f"expected a whole number, got {value}"
    if problem is not None:
        raise InputError(prefix + problem, file=file, field=field)
    return int(value) if integer else float(value)


def optional_number(
    value: Any, *, file: str, field: str, where: str = "", integer: bool = False
) -> Any:
    """`number`, where an absent value (None) stays None."""
    if value is None:
        return None
    return number(value, file=file, field=field, where=where, integer=integer)


def finite(value: Any) -> float | None:
    """A JSON number as a finite float, or None (not a number, NaN, inf, or an integer too big
    for a float): for settings a format reads when they are there and ignores when not."""
    return float(value) if _not_a_number(value) is None else None


def timestamp(value: Any) -> datetime | None:
    """A Unix time in seconds as a naive UTC datetime; None when absent or implausible."""
    if finite(value) is None:
        return None
    try:
        return datetime.fromtimestamp(value, UTC).replace(tzinfo=None)
    except (OverflowError, OSError, ValueError):
        return None


class Reader:
    """Typed access to one object of a result file, with errors that name the file, the object
    (`where`, such as "result 2 of 5") and the key."""

    def __init__(self, obj: dict[str, Any], file: str, where: str):
        self.obj, self.file, self.where = obj, file, where

    def error(self, key: str, message: str) -> InputError:
        return InputError(f"{self.where}: {message}", file=self.file, field=key)

    def number(self, key: str, *, required: bool = False, integer: bool = False) -> Any:
        """The number under `key` (see `number`); None when absent, unless `required`."""
        if self.obj.get(key) is None and required:
            raise self.error(key, "missing")
        return self.check(self.obj.get(key), key, integer=integer)

    def check(self, value: Any, field: str, *, integer: bool = False) -> Any:
        """A value found deeper in the object, at `field`, read as `number` (None stays None)."""
        return optional_number(
            value, file=self.file, field=field, where=self.where, integer=integer
        )

    def text(self, key: str) -> str | None:
        value = self.obj.get(key)
        if value is None:
            return None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            raise self.error(key, f"expected text, got {type(value).__name__}")
        return value.strip() or None

    def positive_int_text(self, key: str) -> int | None:
        value = self.obj.get(key)
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return value
        digits = value.strip() if isinstance(value, str) else ""
        if digits.isdecimal() and len(digits) <= 9 and int(digits) >= 1:
            return int(digits)
        raise self.error(key, f"expected a whole number >= 1, got {value!r:.40}")

    def array(self, key: str, length: int | None) -> np.ndarray | None:
        if key not in self.obj or self.obj[key] is None:
            return None
        value = self.obj[key]
        if not isinstance(value, list):
            raise self.error(key, f"expected a list, got {type(value).__name__}")
        try:
            values = np.asarray(value) if value else np.zeros(0)
        except (TypeError, ValueError, OverflowError):  # ragged, nested, or huge
            raise self.error(key, "expected a flat list of numbers") from None
        if values.ndim != 1 or values.dtype.kind not in "if":
            raise self.error(key, "expected a list of numbers")
        values = values.astype(float)
        if values.size and not np.isfinite(values).all():
            raise self.error(key, "contains NaN or infinity")
        if values.size and (values < 0).any():
            raise self.error(key, f"contains a negative value ({values.min()})")
        if length is not None and values.size != length:
            raise self.error(key, f"has {values.size} entries but ttfts has {length}")
        return values


# -- the data contract ----------------------------------------------------------------------------

_Built = TypeVar("_Built")


@contextmanager
def validation(file: str, where: str = "") -> Iterator[None]:
    """Inside: pydantic's ValidationError becomes an InputError naming the file, where in it and
    the field (never pydantic's raw error)."""
    try:
        yield
    except ValidationError as error:
        problem = validation_message(error)
        reason = f"{where}: {problem.reason}" if where else problem.reason
        raise InputError(reason, file=file, field=problem.field) from None


def build(contract: Callable[..., _Built], file: str, where: str = "", /, **values: Any) -> _Built:
    """A contract object (`Run`, `Point`, ...) from keyword values, validated as `validation`."""
    with validation(file, where):
        return contract(**values)


# -- what the file says, else what the user gave ---------------------------------------------------


def resolve(
    found: Any,
    given: Any,
    *,
    flag: str,
    file: str,
    field: str,
    where: str = "",
    same: Callable[[Any, Any], bool] = lambda a, b: str(a) == str(b),
) -> Any:
    """The file's value, else the user's (`flag`: what the user calls it, such as --model or
    "the GPU chosen above"); both and not the same: an InputError, since the user's value
    fills gaps and never overrides the file."""
    if found is not None and given is not None and not same(found, given):
        prefix = f"{where}: " if where else ""
        message = f"{prefix}the file says {found!r} but {flag} says {given!r}"
        raise InputError(message, file=file, field=field)
    return found if found is not None else given


def model_name(
    options: ImportOptions, file: str, found: Any, *, key: str = "model", where: str = ""
) -> str:
    """The model the file names (under `key`), else the one the user gave (`--model`). A file
    that names no model but where it was loaded from (a local path: `/workspace/llama-3.1-70b`,
    a Hugging Face cache's `.../models--meta-llama--Llama-3.1-8B/snapshots/...`) or a router's
    alias (`auto`, `default`) is named by the user's `--model`, else by the path's model
    (`meta-llama/Llama-3.1-8B`, `llama-3.1-70b`): such a label contradicts no name."""
    prefix = f"{where}: " if where else ""
    found = None if found == "" else found
    if isinstance(found, str) and (label := _not_a_name(found)) is not None:
        found = options.model or label
    chosen = resolve(
        found, options.model, flag=options.name_of("model"), file=file, field=key, where=where
    )
    if found is not None and not isinstance(found, str):
        raise InputError(
            f"{prefix}expected the model's name, got {found!r:.40}", file=file, field=key
        )
    if not chosen:
        message = f"{prefix}the file does not name the model: {options.ask_for('model')}"
        raise InputError(message, file=file, field=key)
    return chosen


_ALIASES = frozenset({"auto", "default", "model", "none", "null"})


def _not_a_name(found: str) -> str | None:
    """A model label that is a path or an alias, not a model's name: the path's model (or None
    for an alias, which names nothing); None where `found` is a name."""
    text = found.strip()
    if text.lower() in _ALIASES:
        return ""
    if not re.match(r"^(/|\./|\.\./|~|[A-Za-z]:[\\/])", text):
        return None
    parts = [part for part in re.split(r"[\\/]+", text) if part not in ("", ".", "..", "~")]
    cached = next((part for part in parts if part.startswith("models--")), None)
    if cached is not None and cached.count("--") >= 2:
        return "/".join(cached.removeprefix("models--").split("--", 1))
    return parts[-1] if parts else ""


def gpu_named(
    label: str | None, given: str | None, *, flag: str, file: str, field: str, where: str = ""
) -> str | None:
    """The canonical GPU of a file's label (`label`) and the user's (`given`, what `flag` is):
    the file's where it resolves to one catalog GPU (the user's must be that GPU, spelt any
    way); the user's where it does not (unknown, a family such as "H100", a cloud name fleetplan
    has not learnt), so that any label can be named. Refused only where the label resolves to
    another GPU, or names a family the user's GPU is not of."""
    if label is None or given is None:
        chosen = label if label is not None else given
        return None if chosen is None else canonical_gpu(chosen).gpu_id
    found, named = canonical_gpu(label), canonical_gpu(given)
    family = family_of(label)
    if found.known:
        refused = named.gpu_id != found.gpu_id
    else:
        refused = family is not None and named.known and not named.gpu_id.startswith(f"{family}-")
    if refused:
        prefix = f"{where}: " if where else ""
        what = f" ({found.gpu_id})" if found.known and found.gpu_id != label else ""
        also = f", not a GPU of the {family.upper()} family" if family and not found.known else ""
        raise InputError(
            f"{prefix}the file says {label!r}{what} but {flag} says {given!r}{also}",
            file=file,
            field=field,
        )
    return found.gpu_id if found.known else named.gpu_id


def hardware(
    options: ImportOptions,
    file: str,
    *,
    label: str | None = None,
    count: int | None = None,
    tool: str = "this tool",
    where: str = "",
    field: str = "gpu",
    count_field: str | None = None,
    exact_count: bool = False,
    advice: str = "",
) -> tuple[str, str, int]:
    """(canonical GPU id, label as written, GPUs per server): the file's GPU (`label`) and count
    where it says, else what the user gave (`--gpu`, `--gpu-count`, or the upload page); asked
    for, never guessed. A label fleetplan cannot resolve (unknown, a family, a cloud's name) is
    named by the user's GPU and kept as written; a file's GPU that resolves to another is
    refused (`gpu_named`; the same GPU spelt differently is no contradiction); so is a count
    that is not the user's when the file states the server's count on purpose (`exact_count`;
    a count of GPUs that telemetry happened to see is not). `field`/`count_field` name where the
    file would say them, `advice` how the tool could have recorded them."""
    if label is not None and (counted := gpu_count_in_label(label)) is not None:
        label, count = counted[0], count or counted[1]  # "4xNVIDIA_L40S": 4 L40S
    gpu_name = options.name_of("gpu")
    gpu_id = gpu_named(label, options.gpu, flag=gpu_name, file=file, field=field, where=where)
    label = label if label is not None else options.gpu
    if exact_count:
        count_at = count_field or field
        count_name = options.name_of("gpu_count")
        count = resolve(
            count, options.gpu_count, flag=count_name, file=file, field=count_at, where=where
        )
    count = count or options.gpu_count
    if label is None or count is None:
        missing = [key for key, value in (("gpu", label), ("gpu_count", count)) if value is None]
        prefix = f"{where}: " if where else ""
        raise InputError(
            f"{prefix}{tool} does not record the hardware: {options.ask_for(*missing)}{advice}",
            file=file,
            field=field if label is None else count_field or field,
        )
    return str(gpu_id), label, int(count)
