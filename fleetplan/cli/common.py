"""Arguments and output that several subcommands share."""

from __future__ import annotations

import argparse
import contextlib
import errno
import math
import os
import re
import secrets
import stat
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from fleetplan.core.errors import InputError
from fleetplan.core.files import file_kind, parse_limit
from fleetplan.core.text import printable

# The longest --wait: a day. A longer wait (or nan, inf) is a typo that would hang a script.
MAX_WAIT_S = 86_400.0


def warehouse_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--warehouse",
        metavar="PATH",
        help="DuckDB warehouse file (default: $FLEETPLAN_WAREHOUSE, else var/fleetplan.duckdb)",
    )


def wait_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait",
        type=seconds,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for a warehouse another process holds (default 30)",
    )


def capacity_at_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--capacity-at",
        choices=("low", "mid", "high"),
        help="which end of each capacity's interval to plan on: low (the default: what the data "
        "proves), mid (the curve's estimate) or high (the most it allows); overrides a "
        "scenario's capacity_at",
    )


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return value


def seconds(text: str) -> float:
    """A wait in seconds: finite, 0 to a day (nan would compare false and wait forever)."""
    value = float(text)
    if not (0 <= value <= MAX_WAIT_S):
        raise argparse.ArgumentTypeError(f"expected seconds from 0 to {MAX_WAIT_S:g}, got {text}")
    return value


def limit_arg(*, option: str, whole: bool, ceiling: float):
    """An argparse `type` for a limit option (`fleetplan.core.files.parse_limit`'s rule), so a
    bad value is a usage error naming the option."""

    def convert(text: str) -> float:
        try:
            return parse_limit(text, option=option, whole=whole, ceiling=ceiling)
        except InputError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return convert


# Paths that are the process's own streams (`--json /dev/stdout`, bash's `>(...)`): written
# straight through, as a terminal or a pipe cannot be replaced. Every other output is a file.
_STREAM = re.compile(r"/dev/(stdout|stderr|fd/[0-9]+)|/proc/self/fd/[0-9]+")
# A temp file's name keeps the output's (`.plan.json.<random>.tmp`) below the system's limit.
_TEMP_NAME_BYTES = 200


def is_stream(path: Path) -> bool:
    """Whether `path` names standard output or error or an open descriptor (/dev/fd/N)."""
    return _STREAM.fullmatch(os.path.normpath(os.path.abspath(path))) is not None


def _refusal(path: Path) -> str | None:
    """What is at `path` when it cannot be written as an output file, for a message ("a pipe
    (FIFO)", "a link to a device": `core.files.file_kind`'s words); None when it can: nothing,
    a regular file, a link to one or a link to nothing (the link is replaced, see
    `write_outputs`). A FIFO would hang the write; a device or a socket is not a file. OSError
    where the path cannot be looked at (a name over the system's limit, a loop of links)."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        try:
            kind = file_kind(path.stat().st_mode)
        except FileNotFoundError:
            return None  # a link to nothing: replaced by the file
        return None if kind is None else f"a link to {kind}"
    return file_kind(info.st_mode)


def output_file(text: str) -> Path:
    """An argparse `type` for a file to write: refused at once when it is a folder, a FIFO, a
    socket or a device (or a link to one), or its folder is missing (not after the work, with
    a traceback, nor hanging on a FIFO). /dev/stdout, /dev/stderr and /dev/fd/N are let through
    (`is_stream`)."""
    path = Path(text).expanduser()
    if is_stream(path):
        return path
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder: give a file path to write")
    parent = path.parent
    if not parent.is_dir():
        what = "is a file, not a folder" if parent.exists() else "does not exist"
        raise argparse.ArgumentTypeError(f"cannot write {text}: {parent} {what}")
    try:
        kind = _refusal(path)
    except OSError as error:
        reason = error.strerror or error
        raise argparse.ArgumentTypeError(f"cannot write {text}: {reason}") from None
    if kind is not None:
        raise argparse.ArgumentTypeError(f"{text} is {kind}: give a file path to write")
    return path


def write_output(path: Path, text: str | bytes, *, option: str) -> None:
    """Write a file the user asked for (text as UTF-8, bytes as they are), whole or not at all
    (`write_outputs`); a failure names the option (InputError)."""
    write_outputs([(path, text)], option=option)


def write_outputs(files: Sequence[tuple[Path, str | bytes]], *, option: str) -> None:
    """Write files the user asked for, all or none: each to a temp file in its folder
    (`.<name>.<random>.tmp`), flushed to disk, then renamed onto its path (`os.replace`), so
    that a failure (a full disk, a size limit) leaves the old content whole and no temp file
    behind. The rename replaces what is at the path: a link there is replaced by the file, not
    written through (its target is left as it was). A stream (`is_stream`) is written straight
    through. A failure names the option (InputError)."""
    staged: list[tuple[str, Path]] = []
    try:
        for path, text in files:
            data = text if isinstance(text, bytes) else text.encode("utf-8")
            if is_stream(path):
                _write_stream(path, data)
                continue
            kind = _refusal(path)  # it may have changed since the arguments were read
            if kind is not None:
                raise InputError(f"{option} {path} is {kind}: give a file path to write")
            staged.append((_stage(path, data), path))
        while staged:
            temp, path = staged[0]
            os.replace(temp, path)
            staged.pop(0)
            _sync_folder(path.parent)
    except OSError as error:
        raise InputError(f"{option} {path}: cannot write it: {error.strerror or error}") from None
    finally:
        for temp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(temp)


def _stage(path: Path, data: bytes) -> str:
    """`data` in a new temp file beside `path`, on disk; its name. The file gets the mode a new
    file gets (0666 less the umask), or the mode of the regular file it will replace."""
    name = path.name if len(os.fsencode(path.name)) <= _TEMP_NAME_BYTES else "fleetplan-output"
    for _ in range(100):
        temp = str(path.parent / f".{name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, "no free temp file name", str(path.parent))
    try:
        with contextlib.suppress(OSError):
            info = path.lstat()
            if stat.S_ISREG(info.st_mode):
                os.fchmod(fd, stat.S_IMODE(info.st_mode))
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return temp


def _sync_folder(folder: Path) -> None:
    """The rename on disk too (where the system lets a folder be synced)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_stream(path: Path, data: bytes) -> None:
    """`data` to a stream path as `open(path, "wb")` would, except that a FIFO with no reader
    is an error (ENXIO), not a wait forever."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
    try:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb", closefd=False) as handle:
            handle.write(data)
    finally:
        os.close(fd)


def print_outcomes(outcomes, *, stream=None) -> Counter:
    """One line per file (status, file, message, up to five warnings); returns counts by status."""
    from tqdm import tqdm

    stream = stream or sys.stdout
    counts: Counter = Counter()
    progress = tqdm(outcomes, unit="file", disable=None, file=sys.stderr, leave=False)
    for outcome in progress:
        counts[outcome.status.value] += 1
        # A file name (or anything from a file) with a newline or ESC must not forge a line or
        # recolour the terminal: shown escaped.
        line = f"{outcome.status.value:<9} {printable(outcome.file)}: {printable(outcome.message)}"
        progress.write(line, file=stream)
        for warning in outcome.warnings[:5]:
            progress.write(f"{'':<9} warning: {printable(warning)}", file=stream)
        if len(outcome.warnings) > 5:
            progress.write(f"{'':<9} ... {len(outcome.warnings) - 5} more warnings", file=stream)
    return counts


class Progress:
    """Progress of a long step on stderr: a tqdm bar on a terminal; off one (a log file, systemd,
    docker, a pipe), a plain line when a phase starts (`phase`) and at most every `every_s`
    seconds while it advances (`update`), so that a long run never looks hung. `command`
    prefixes the lines ("fleetplan simulate")."""

    def __init__(self, command: str, unit: str, *, stream=None, every_s: float = 10.0) -> None:
        self._clock = time.monotonic
        self.command = command
        self.unit = unit
        self.stream = stream or sys.stderr
        self.every_s = every_s
        self.tty = _isatty(self.stream)
        self.bar = None
        self.started = self._clock()
        self.said_at = -math.inf
        self.what = ""

    def phase(self, what: str) -> None:
        """A new step: a line off a terminal, the bar's label on one."""
        self.what = what
        self.said_at = -math.inf
        if self.tty:
            self.stream.write(f"{self.command}: {what}\n")
        else:
            self._line(what)

    def update(self, done: int, total: int) -> None:
        if self.tty:
            if self.bar is None:
                from tqdm import tqdm

                self.bar = tqdm(total=total, unit=self.unit, file=self.stream, leave=False)
            self.bar.total = total
            self.bar.n = done
            self.bar.refresh()
            return
        now = self._clock()
        if done >= total or now - self.said_at >= self.every_s:
            share = f" ({100 * done / total:.0f} %)" if total else ""
            self._line(f"{self.what}: {done:,} of {total:,} {self.unit}s{share}", now)

    def _line(self, text: str, now: float | None = None) -> None:
        now = self._clock() if now is None else now
        self.said_at = now
        self.stream.write(f"{self.command}: {text} [{now - self.started:.0f} s]\n")
        self.stream.flush()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or odd stream: no terminal
        return False
