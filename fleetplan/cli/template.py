"""`fleetplan template`: an empty benchmark table (CSV) with a commented example row."""

from __future__ import annotations

import argparse
import sys

from fleetplan.cli.common import output_file, write_output
from fleetplan.core.exits import EXIT_OK

NAME = "template"


def add_parser(sub: argparse._SubParsersAction) -> None:
    template = sub.add_parser(NAME, help="write an empty benchmark table (CSV) to fill in")
    template.add_argument(
        "--output", "-o", type=output_file, metavar="FILE", help="write to FILE, not stdout"
    )


def run(args: argparse.Namespace) -> int:
    from fleetplan.warehouse.template import template_text

    text = template_text()
    if args.output:
        write_output(args.output, text, option="--output")
        print(f"template -> {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return EXIT_OK
