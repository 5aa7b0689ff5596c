"""`fleetplan collect`: from command-line arguments to a run file (and, on request, an ingest)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fleetplan.collectors.collect import (
    CollectError,
    CollectResult,
    Hardware,
    check_server,
    collect,
    server_version,
    summary_table,
)
from fleetplan.collectors.openai_client import Endpoint
from fleetplan.collectors.prompts import LocalTokenizer, PromptError, ServerTokenizer
from fleetplan.collectors.suite import Suite, TokenShape, parse_rates, standard_suite
from fleetplan.collectors.telemetry import Telemetry, open_telemetry

from fleetplan.core.exits import EXIT_CANNOT_START, EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS


def suite_from_args(args: argparse.Namespace) -> Suite:
    custom = args.input_len is not None or args.output_len is not None
    if custom and args.suite:
        raise CollectError("give --suite standard or --input-len/--output-len, not both")
    if custom and (args.input_len is None or args.output_len is None):
        raise CollectError("a custom shape needs both --input-len and --output-len")
    extra: dict[str, object] = {"seed": args.seed, "warmup_requests": max(args.warmup, 0)}
    if args.rates:
        try:
            extra["rates"] = parse_rates(args.rates)
        except ValueError as error:
            raise CollectError(f"--rates: {error}") from None
    if args.num_requests:
        extra["num_requests"] = args.num_requests
    if custom:
        shape = TokenShape(
            name=f"random-{args.input_len}-{args.output_len}",
            input_len=args.input_len,
            output_len=args.output_len,
        )
        return Suite(shapes=(shape,), **extra)
    return standard_suite(**extra)


def execute(args: argparse.Namespace) -> CollectResult:
    """One collection as the arguments say: the one path every host runs, alone or on Ray."""
    suite = suite_from_args(args)
    if args.backend == "torch":
        from fleetplan.collectors.torch_backend import collect_torch

        return collect_torch(args, suite)
    if args.backend == "vllm":
        from fleetplan.collectors.vllm_server import collect_vllm

        return collect_vllm(args, suite)
    return collect_openai(args, suite)


def exit_code(result: CollectResult) -> int:
    if result.interrupted and any("interrupted" in p for p in result.problems):
        return EXIT_INTERRUPTED
    incomplete = any(not p.complete or p.failed for r in result.run_file.runs for p in r.points)
    return EXIT_PROBLEMS if incomplete or result.interrupted else EXIT_OK


def run_collect(args: argparse.Namespace) -> int:
    if getattr(args, "ray", None) is not None or getattr(args, "campaign", None):
        from fleetplan.collectors.fleet import run_campaign_command

        return run_campaign_command(args)
    if args.backend is None:
        print("fleetplan collect: --backend is required (or --campaign)", file=sys.stderr)
        return EXIT_CANNOT_START
    try:
        result = execute(args)
    except (CollectError, PromptError) as error:
        print(f"fleetplan collect: {error}", file=sys.stderr)
        return EXIT_CANNOT_START
    print(summary_table(result.run_file))
    print(f"run file: {result.path}")
    for problem in result.problems:
        print(f"problem: {problem}", file=sys.stderr)
    if args.ingest:
        from fleetplan.warehouse.db import Warehouse
        from fleetplan.warehouse.ingest import ingest_paths

        with Warehouse.open(args.warehouse, wait_s=args.wait) as warehouse:
            for outcome in ingest_paths(warehouse, [result.path]):
                print(f"{outcome.status.value}: {outcome.message}")
    return exit_code(result)


def telemetry_from_args(args: argparse.Namespace) -> Telemetry:
    return (
        Telemetry("not measured: --telemetry off") if args.telemetry == "off" else open_telemetry()
    )


def collect_openai(
    args: argparse.Namespace,
    suite: Suite,
    *,
    engine: str | None = None,
    engine_version: str | None = None,
    extra_meta: dict | None = None,
):
    if not args.base_url or not args.model:
        raise CollectError("--backend openai needs --base-url and --model")
    endpoint = Endpoint(
        args.base_url,
        args.model,
        api_key=args.api_key,
        ignore_eos=not args.no_ignore_eos,
        request_timeout_s=args.request_timeout,
    )
    check_server(endpoint)
    tokenizer = (
        LocalTokenizer(args.tokenizer)
        if args.tokenizer
        else ServerTokenizer(args.base_url, args.model)
    )
    telemetry = telemetry_from_args(args)
    try:
        hardware = Hardware.resolve(args.gpu, args.gpu_count, telemetry)
        version = engine_version or server_version(endpoint)
        return collect(
            endpoint,
            suite,
            tokenizer,
            telemetry,
            hardware,
            Path(args.out),
            engine=engine or ("vllm" if version else None),
            engine_version=version,
            tensor_parallel_size=getattr(args, "tensor_parallel_size", None)
            if args.backend == "vllm"
            else None,
            dtype=args.dtype,
            metadata=extra_meta,
            max_concurrency=args.max_concurrency,
        )
    finally:
        telemetry.close()
