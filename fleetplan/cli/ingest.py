"""`fleetplan ingest`: import benchmark result files into the warehouse."""

from __future__ import annotations

import argparse
import sys

from fleetplan.cli.common import (
    limit_arg,
    positive_int,
    print_outcomes,
    wait_arg,
    warehouse_arg,
)
from fleetplan.core.exits import EXIT_OK, EXIT_PROBLEMS
from fleetplan.core.files import MAX_FILE_MB_CEILING, MAX_VALUES_CEILING

NAME = "ingest"


def add_parser(sub: argparse._SubParsersAction) -> None:
    ingest = sub.add_parser(NAME, help="import benchmark result files into the warehouse")
    warehouse_arg(ingest)
    ingest.add_argument("paths", nargs="+", metavar="PATH", help="files or folders")
    ingest.add_argument("--model", help="model name, for files that do not say")
    ingest.add_argument(
        "--gpu", help="GPU model (e.g. rtx-4090, h100-pcie), for files that do not say"
    )
    ingest.add_argument(
        "--gpu-count", type=positive_int, help="GPUs per server, for files that do not say"
    )
    ingest.add_argument(
        "--dataset",
        help="the traffic the runs were measured with, for files that do not say: a benchmark "
        "dataset's name (e.g. sharegpt), or 'synthetic' with --input-len and --output-len",
    )
    ingest.add_argument("--input-len", type=positive_int, help="input tokens per request")
    ingest.add_argument("--output-len", type=positive_int, help="output tokens per request")
    ingest.add_argument(
        "--variant",
        help="a free label of how the server was set up (e.g. prefix-caching, 'max-num-seqs "
        "64'), for runs whose file gives none: runs of another variant are another server",
    )
    ingest.add_argument(
        "--max-file-mb",
        type=limit_arg(option="--max-file-mb", whole=False, ceiling=MAX_FILE_MB_CEILING),
        help="refuse larger files (default 32, at most 1024; or $FLEETPLAN_MAX_FILE_MB)",
    )
    ingest.add_argument(
        "--max-values",
        type=limit_arg(option="--max-values", whole=True, ceiling=MAX_VALUES_CEILING),
        help="refuse files with more values than this (default 5,000,000)",
    )
    wait_arg(ingest)


def run(args: argparse.Namespace) -> int:
    from fleetplan.warehouse.db import Warehouse
    from fleetplan.warehouse.importers.base import ImportOptions
    from fleetplan.warehouse.ingest import ingest_paths

    options = ImportOptions(
        model=args.model,
        gpu=args.gpu,
        gpu_count=args.gpu_count,
        dataset=args.dataset,
        input_len=args.input_len,
        output_len=args.output_len,
        variant=args.variant,
        max_file_bytes=int(args.max_file_mb * 1024 * 1024) if args.max_file_mb else None,
        max_values=int(args.max_values) if args.max_values else None,
    )
    # $FLEETPLAN_MAX_FILE_MB / $FLEETPLAN_MAX_VALUES checked once, before any file is read.
    options.size_limit()
    options.value_limit()

    def waiting(busy: Exception) -> None:
        print(f"{busy}\nwaiting up to {args.wait:g} s (--wait) ...", file=sys.stderr, flush=True)

    from fleetplan.warehouse.db import resolve_path

    created = not resolve_path(args.warehouse).exists()
    with Warehouse.open(args.warehouse, wait_s=args.wait, on_wait=waiting) as warehouse:
        counts = print_outcomes(ingest_paths(warehouse, args.paths, options))
        extra = "".join(
            f", {counts[kind]} {label}"
            for kind, label in (("included", "read with another file"), ("skipped", "skipped"))
            if counts[kind]
        )
        print(
            f"{counts['imported']} imported, {counts['duplicate']} already present, "
            f"{counts['rejected']} rejected{extra} -> {warehouse.path}"
        )
    if created and not counts["imported"]:  # nothing came in: no empty warehouse left behind
        _remove(resolve_path(args.warehouse))
    if not counts:
        print("no files found in the given paths", file=sys.stderr)
        return EXIT_PROBLEMS
    return EXIT_PROBLEMS if counts["rejected"] else EXIT_OK


def _remove(path) -> None:
    """The warehouse file this command created (and DuckDB's write-ahead log beside it)."""
    for stale in (path, path.with_name(path.name + ".wal")):
        stale.unlink(missing_ok=True)
