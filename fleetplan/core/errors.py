"""Project error types: every failure a user can meet is one of these, with a message to act on."""

from __future__ import annotations

from collections.abc import Callable


class FleetplanError(Exception):
    """Base of every error fleetplan raises on purpose; its message is meant for users."""


class InputError(FleetplanError):
    """A file or value was rejected. Names the file, the field and what was expected."""

    def __init__(self, message: str, *, file: str | None = None, field: str | None = None):
        self.file = file
        self.field = field
        self.reason = message
        self.detail = f"field {field!r}: {message}" if field else message
        super().__init__(f"{file}: {self.detail}" if file else self.detail)


class UnknownFormatError(InputError):
    """The content matches none of the formats fleetplan can import."""


class NotResultsError(InputError):
    """A file a benchmark tool writes beside its results (prompts, server metrics, a CSV view of
    a report): recognised, and left out with a pointer to the file to import."""


class CompanionMissingError(InputError):
    """A results file read with another file beside it that was not given: refused as any
    InputError, with `names` (base names, in the order to look for them) and `accepts` (whether
    another file's bytes are such a companion, for one saved under another name) for a caller
    that can look beside the file and read it again (warehouse.preview)."""

    def __init__(
        self,
        message: str,
        *,
        names: tuple[str, ...],
        accepts: Callable[[bytes], bool] | None = None,
        file: str | None = None,
        field: str | None = None,
    ):
        super().__init__(message, file=file, field=field)
        self.names = names
        self.accepts = accepts


class FileTooLargeError(InputError):
    """The file is over the configured size limit."""


class WarehouseError(FleetplanError):
    """The warehouse file cannot be used (newer schema, not a DuckDB file, ...)."""


class WarehouseBusyError(WarehouseError):
    """Another process holds the warehouse (DuckDB allows one writing process per file)."""


class WarehouseDamagedError(WarehouseError):
    """The warehouse file is corrupt: rebuild or restore it (waiting would not help)."""
