"""`fleetplan workload`: traffic classes from a request log (hourly rates, token lengths,
burstiness), to put in a scenario."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fleetplan.cli.common import output_file, write_output
from fleetplan.core.exits import EXIT_OK, EXIT_PROBLEMS

NAME = "workload"
MAX_TRACE_BYTES = 2_000_000_000  # a log of tens of millions of requests


def add_parser(sub: argparse._SubParsersAction) -> None:
    workload = sub.add_parser(
        NAME, help="traffic classes from a request log (Azure LLM inference trace or generic CSV)"
    )
    workload.add_argument(
        "trace",
        metavar="TRACE.csv",
        help="an Azure LLM inference trace (TIMESTAMP, ContextTokens, GeneratedTokens) or a CSV "
        "of timestamp, input_tokens, output_tokens [, class]",
    )
    workload.add_argument(
        "--class-by",
        choices=("all", "input", "output", "column"),
        default="all",
        help="one class (all, the default); a short and a long class split at the median input "
        "or output length; or the log's 'class' column",
    )
    workload.add_argument(
        "-o",
        "--output",
        type=output_file,
        metavar="FILE",
        help="write the classes (and their figures, in 'workload') as JSON to FILE, not stdout",
    )


def run(args: argparse.Namespace) -> int:
    from fleetplan.core.errors import InputError
    from fleetplan.core.files import read_at_most
    from fleetplan.planner.scenario.workload import read_trace, workload

    try:
        raw = read_at_most(Path(args.trace), limit=MAX_TRACE_BYTES)
        frame = read_trace(raw.decode("utf-8", errors="replace"), name=args.trace)
        result = workload(frame, args.class_by, source=Path(args.trace).name)
    except InputError as error:
        print(f"fleetplan workload: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    text = json.dumps(result, indent=1) + "\n"
    if args.output:
        write_output(args.output, text, option="--output")
        print(f"classes -> {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    for entry in result["workload"]["classes"]:
        print(
            f"{entry['name']}: {entry['requests']} requests, hours {entry['hours_covered']}, "
            f"burstiness {entry['burstiness']}",
            file=sys.stderr,
        )
    return EXIT_OK
