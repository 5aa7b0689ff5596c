"""Reading a file the user names, bounded, and the limits as the user sets them.

Only a regular file is read: `/dev/zero` would be read until memory runs out and a FIFO would
block forever, whatever size they claim. The file is opened without blocking (a FIFO's open
would wait for a writer), checked with fstat on the open descriptor (no race with a rename),
and read up to the limit plus one byte: a file that grows while it is read stops there too.

The limits come from an option or an environment variable; a value that is not a finite number
in range is refused naming the option, never taken as "no limit" and never a traceback.
"""

from __future__ import annotations

import math
import os
import stat

from fleetplan.core.errors import FileTooLargeError, InputError

# The largest limits a user may set: fleetplan holds a file and what it parses in memory at once,
# several times its size; past these a limit is a typo, not a choice.
MAX_FILE_MB_CEILING = 1024.0
MAX_VALUES_CEILING = 100_000_000


def megabytes(size: float) -> str:
    """A size as the limits are set (--max-file-mb counts MiB): 32 MB, 0.5 MB, 15.2 MB."""
    return f"{size / 2**20:.3g} MB"


def file_kind(mode: int) -> str | None:
    """What a file that is not a regular file is, for a message (None: a regular file): the
    words every refusal of a path uses, read or written."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_at_most(path: str | os.PathLike[str], *, limit: int, advice: str = "") -> bytes:
    """The bytes of the regular file at `path`, refused when over `limit` bytes (InputError,
    FileTooLargeError), before reading when its size says so and while reading otherwise."""
    name = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise InputError(f"cannot read the file: {error.strerror or error}", file=name) from None
    try:
        mode, size = (info := os.fstat(fd)).st_mode, info.st_size
        if not stat.S_ISREG(mode):
            raise InputError(
                f"{file_kind(mode)}, not a file: only regular files are read", file=name
            )
        if size > limit:
            raise FileTooLargeError(
                f"the file is {megabytes(size)}, over the {megabytes(limit)} limit{advice}",
                file=name,
            )
        chunks, total = [], 0
        while total <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - total))):
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            message = f"the file grew past the {megabytes(limit)} limit while it was read{advice}"
            raise FileTooLargeError(message, file=name)
        return b"".join(chunks)
    except OSError as error:
        raise InputError(f"cannot read the file: {error.strerror or error}", file=name) from None
    finally:
        os.close(fd)


def parse_limit(text: str, *, option: str, whole: bool, ceiling: float) -> float:
    """A limit the user set (`option` names where: "--max-file-mb", "$FLEETPLAN_MAX_VALUES"):
    a finite number > 0 and at most `ceiling`, a whole number where `whole`; else InputError."""
    kind = "a whole number" if whole else "a number"
    try:
        value = int(text.strip()) if whole else float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value) and value <= ceiling):
        raise InputError(f"{option} must be {kind} above 0 and at most {ceiling:,g}, not {text!r}")
    return value


def limit_from_env(name: str, default: float, *, whole: bool, ceiling: float) -> float:
    """The limit `$name` sets, else `default`; a bad value is refused naming the variable."""
    text = os.environ.get(name)
    if text is None or not text.strip():
        return default
    return parse_limit(text, option=f"${name}", whole=whole, ceiling=ceiling)
