"""Arguments and output that several subcommands share."""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from pathlib import Path

from fleetplan.core.errors import InputError
from fleetplan.core.files import parse_limit
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


def output_file(text: str) -> Path:
    """An argparse `type` for a file to write: refused at once when it is a folder or its folder
    is missing (not after the work, with a traceback)."""
    path = Path(text).expanduser()
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder: give a file path to write")
    parent = path.parent
    if not parent.is_dir():
        what = "is a file, not a folder" if parent.exists() else "does not exist"
        raise argparse.ArgumentTypeError(f"cannot write {text}: {parent} {what}")
    return path


def write_output(path: Path, text: str | bytes, *, option: str) -> None:
    """Write a file the user asked for (text as UTF-8, bytes as they are); a failure names the
    option (InputError)."""
    try:
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise InputError(f"{option} {path}: cannot write it: {error.strerror or error}") from None


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
