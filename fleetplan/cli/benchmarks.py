"""`fleetplan benchmarks`: print the benchmark points table (CSV or JSON): the measured figures
of each load level and, beside the achieved `request_throughput_rps`, the rate the server
sustained with the drain left out, whether it kept up, and on what and why that is judged."""

from __future__ import annotations

import argparse
import sys

from fleetplan.cli.common import output_file, warehouse_arg, write_output
from fleetplan.core.exits import EXIT_OK

NAME = "benchmarks"


def add_parser(sub: argparse._SubParsersAction) -> None:
    bench = sub.add_parser(
        NAME,
        help="print the benchmark points table",
        description="One row per run and load level: the measured figures, and per level the "
        "rate the server sustained (sustained_rps, the drain left out), whether it kept up "
        "(stable: true, false, or empty where a burst or a closed-loop level cannot tell), "
        "what that rests on (load_basis: send times, estimated, or concurrency for a closed-loop "
        "level) and why (load_reason); each run's metadata (a campaign's stamp) is a JSON "
        "object in run_metadata.",
    )
    warehouse_arg(bench)
    bench.add_argument("--format", choices=("csv", "json"), default="csv")
    bench.add_argument("--model", help="model id, or its name after the '/'")
    bench.add_argument("--gpu", help="GPU model, any common label (e.g. 4090, h100-pcie)")
    bench.add_argument(
        "--output", "-o", type=output_file, metavar="FILE", help="write to FILE instead of stdout"
    )


def run(args: argparse.Namespace) -> int:
    from fleetplan.core.tabular import to_csv, to_json_records
    from fleetplan.warehouse.db import Warehouse
    from fleetplan.warehouse.queries import benchmark_points

    with Warehouse.open(args.warehouse, read_only=True) as warehouse:
        frame = benchmark_points(warehouse, model=args.model, gpu=args.gpu)
    text = to_csv(frame) if args.format == "csv" else to_json_records(frame)
    if args.output:
        write_output(args.output, text, option="--output")
        print(f"{len(frame)} rows -> {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    if frame.empty:
        print("no benchmark points match", file=sys.stderr)
    return EXIT_OK
