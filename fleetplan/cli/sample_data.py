"""`fleetplan sample-data`: rebuild sample_data/ from the raw public io.net results."""

from __future__ import annotations

import argparse
from pathlib import Path

from fleetplan.core.exits import EXIT_OK

NAME = "sample-data"


def add_parser(sub: argparse._SubParsersAction) -> None:
    sample = sub.add_parser(NAME, help="rebuild sample_data/ from the raw public results")
    sample.add_argument(
        "--source",
        required=True,
        metavar="DIR",
        help="the io.net results folder (shared/data/ionet-aibc2025/results)",
    )
    sample.add_argument(
        "--out", metavar="FILE", help="default: sample_data/benchmarks/ionet-aibc2025.json"
    )


def run(args: argparse.Namespace) -> int:
    from fleetplan.warehouse.sample_data import IONET_FILE, rebuild_ionet, sample_dir

    out = Path(args.out) if args.out else sample_dir() / "benchmarks" / IONET_FILE
    count = rebuild_ionet(Path(args.source), out)
    print(f"{count} runs -> {out}")
    return EXIT_OK
