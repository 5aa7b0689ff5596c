"""The `fleetplan` command line: the top floor. It imports every other part; nothing imports it.

One module per subcommand, each with `NAME`, `add_parser(subparsers)` and `run(args) -> int`
(an exit code from `fleetplan.core.exits`). To add a subcommand, write such a module (arguments
parsed here, the work done by a function in warehouse/, planner/, collectors/ or services/) and
list it in `SUBCOMMANDS`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from fleetplan import __version__
from fleetplan.cli import (
    app,
    benchmarks,
    build,
    capacity,
    collect,
    ingest,
    paper_check,
    plan,
    sample_data,
    simulate,
    template,
    validate,
    workload,
)
from fleetplan.core.errors import FleetplanError
from fleetplan.core.exits import EXIT_CANNOT_START
from fleetplan.core.text import printable_lines

SUBCOMMANDS = (
    ingest,
    benchmarks,
    template,
    build,
    sample_data,
    plan,
    capacity,
    collect,
    paper_check,
    simulate,
    validate,
    workload,
    app,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fleetplan",
        description="Plan LLM inference fleets of RTX 4090 and H100 GPUs from measured benchmarks.",
    )
    parser.add_argument("--version", action="version", version=f"fleetplan {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in SUBCOMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    command = next(c for c in SUBCOMMANDS if args.command == c.NAME)
    try:
        return command.run(args)
    except FleetplanError as error:
        print(f"fleetplan {args.command}: {printable_lines(str(error))}", file=sys.stderr)
        return EXIT_CANNOT_START
    except FileNotFoundError as error:
        print(f"fleetplan {args.command}: {printable_lines(str(error))}", file=sys.stderr)
        return EXIT_CANNOT_START
    except BrokenPipeError:  # e.g. `fleetplan benchmarks | head`
        sys.stderr.close()
        return 0
