"""Arguments and output that several subcommands share."""

from __future__ import annotations

import argparse
import sys
from collections import Counter


def warehouse_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--warehouse",
        metavar="PATH",
        help="DuckDB warehouse file (default: $FLEETPLAN_WAREHOUSE, else var/fleetplan.duckdb)",
    )


def wait_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for a warehouse another process holds (default 30)",
    )


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return value


def print_outcomes(outcomes, *, stream=sys.stdout) -> Counter:
    """One line per file (status, file, message, up to five warnings); returns counts by status."""
    from tqdm import tqdm

    counts: Counter = Counter()
    progress = tqdm(outcomes, unit="file", disable=None, file=sys.stderr, leave=False)
    for outcome in progress:
        counts[outcome.status.value] += 1
        progress.write(f"{outcome.status.value:<9} {outcome.file}: {outcome.message}", file=stream)
        for warning in outcome.warnings[:5]:
            progress.write(f"{'':<9} warning: {warning}", file=stream)
        if len(outcome.warnings) > 5:
            progress.write(f"{'':<9} ... {len(outcome.warnings) - 5} more warnings", file=stream)
    return counts
