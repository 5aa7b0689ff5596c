"""`fleetplan build`: create the warehouse from the bundled sample data and reference tables."""

from __future__ import annotations

import argparse
from pathlib import Path

from fleetplan.cli.common import print_outcomes, warehouse_arg
from fleetplan.core.exits import EXIT_OK, EXIT_PROBLEMS

NAME = "build"


def add_parser(sub: argparse._SubParsersAction) -> None:
    build = sub.add_parser(NAME, help="create the warehouse from the bundled sample data")
    warehouse_arg(build)
    build.add_argument(
        "--sample-data", metavar="DIR", help="sample data folder (default: sample_data/)"
    )


def run(args: argparse.Namespace) -> int:
    from fleetplan.warehouse.db import Warehouse
    from fleetplan.warehouse.sample_data import build

    folder = Path(args.sample_data) if args.sample_data else None
    with Warehouse.open(args.warehouse, wait_s=30) as warehouse:
        steps = build(warehouse, folder)
        reference = next(steps)
        print(
            f"reference data: {reference['gpus']} GPUs, {reference['prices']} prices, "
            f"{reference['regions']} regions"
        )
        counts = print_outcomes(steps)
        print(f"warehouse ready: {warehouse.path}")
    return EXIT_PROBLEMS if counts["rejected"] else EXIT_OK
