"""`fleetplan paper-check`: the io.net AIBC 2025 paper's headline claims, recomputed from its own
published runs in the warehouse, as text or JSON (the same claims the Paper check page shows).

Exit code 0 whenever the check ran, whatever the verdicts: they describe the paper, not the run.
"""

from __future__ import annotations

import argparse

from fleetplan.cli.common import warehouse_arg
from fleetplan.core.exits import EXIT_OK

NAME = "paper-check"


def add_parser(sub: argparse._SubParsersAction) -> None:
    check = sub.add_parser(
        NAME,
        help="the io.net paper's claims recomputed from its published runs",
        description="Each headline claim of the io.net AIBC 2025 paper: its id, the paper's words "
        "and value, the recomputed value, the verdict and the rows behind it. Only the paper's "
        "own runs (the bundled sample data) count: your uploads do not change the verdicts.",
    )
    warehouse_arg(check)
    check.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    from fleetplan.services.paper_check import claims_from_warehouse, claims_json, claims_text
    from fleetplan.warehouse.db import Warehouse

    with Warehouse.open(args.warehouse, read_only=True) as warehouse:
        claims = claims_from_warehouse(warehouse)
    print(claims_json(claims) if args.format == "json" else claims_text(claims))
    return EXIT_OK
