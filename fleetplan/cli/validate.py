"""`fleetplan validate`: run one real server of a planned pool at its planned rate and at 1.2x
it, and say for each target whether it holds (`services.validate`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fleetplan.cli.common import positive_float, positive_int, wait_arg, warehouse_arg
from fleetplan.core.exits import EXIT_INFEASIBLE, EXIT_OK, EXIT_PROBLEMS

NAME = "validate"


def add_parser(sub: argparse._SubParsersAction) -> None:
    validate = sub.add_parser(
        NAME,
        help="run one server of a planned pool at its planned rate and 1.2x it: do its targets "
        "hold?",
    )
    validate.add_argument("--plan", required=True, metavar="FILE", help="a plan JSON (plan --json)")
    validate.add_argument(
        "--pool",
        required=True,
        metavar="POOL",
        help="the pool, as CLASS/Nx-GPU (chat/1x-h100-pcie)",
    )
    validate.add_argument(
        "--base-url", required=True, help="one server of the pool (OpenAI-compatible)"
    )
    validate.add_argument(
        "--model", help="the model name the server serves (default: the class's model)"
    )
    validate.add_argument("--tokenizer", help="tokenizer path for exact prompt lengths")
    validate.add_argument("--api-key", help="the server's API key, where it asks for one")
    validate.add_argument(
        "--input-len", type=positive_int, help="prompt tokens (default: the class's)"
    )
    validate.add_argument(
        "--output-len", type=positive_int, help="output tokens (default: the class's)"
    )
    validate.add_argument(
        "--num-requests",
        type=positive_int,
        default=400,
        help="requests per level (at least 400: what a P99 needs)",
    )
    validate.add_argument("--request-timeout", type=positive_float, default=600.0, metavar="S")
    validate.add_argument("--seed", type=int, default=0)
    validate.add_argument("--out", default="runs", metavar="DIR", help="folder for the run file")
    validate.add_argument("--ingest", action="store_true", help="load the run file when done")
    validate.add_argument("--format", choices=("text", "json"), default="text")
    warehouse_arg(validate)
    wait_arg(validate)


def run(args: argparse.Namespace) -> int:
    from fleetplan.collectors.options import CollectOptions
    from fleetplan.collectors.run import execute
    from fleetplan.core.errors import InputError
    from fleetplan.core.files import read_at_most
    from fleetplan.core.strict import load_json
    from fleetplan.services import validate as v

    if args.num_requests < v.MIN_REQUESTS:
        print(
            f"fleetplan {NAME}: --num-requests: at least {v.MIN_REQUESTS} (a P99 needs them)",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    try:
        raw = load_json(read_at_most(args.plan, limit=64 << 20), file=args.plan)
        pool = v.pool_of(raw, args.pool)
        low, high = v.rates(pool)
        input_len = args.input_len or pool.input_len
        output_len = args.output_len or pool.output_len
        if not (input_len and output_len):
            raise InputError(
                f"class {pool.traffic_class} has no input_len/output_len: give --input-len and "
                "--output-len (the shape its capacity was measured at)",
                field="input_len",
            )
        options = CollectOptions.from_mapping(
            {
                "backend": "openai",
                "model": args.model or pool.model,
                "input_len": int(input_len),
                "output_len": int(output_len),
                "rates": (low, high),
                "num_requests": args.num_requests,
                "seed": args.seed,
                "base_url": args.base_url,
                "tokenizer": args.tokenizer,
                "api_key": args.api_key,
                "request_timeout": args.request_timeout,
                "gpu": pool.gpu_model,
                "gpu_count": pool.gpus_per_server,
                "telemetry": "off",  # the server is elsewhere: this host's GPUs are not its
            }
        )
    except OSError as error:
        print(f"fleetplan {NAME}: cannot read {args.plan}: {error.strerror}", file=sys.stderr)
        return EXIT_PROBLEMS
    except (InputError, ValueError, KeyError, TypeError) as error:
        print(f"fleetplan {NAME}: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    print(
        f"validating {pool.pool}: {options.measure.num_requests} requests at {low:.3g} req/s "
        f"(its planned rate per server) and {high:.3g} req/s (1.2x), "
        f"{input_len}/{output_len} tokens, against {args.base_url}",
        file=sys.stderr,
    )
    result = execute(options, Path(args.out))
    path = v.mark(result.path, pool, Path(args.plan).name)
    levels = v.judge(result.run_file, pool)
    report = {
        "pool": pool.pool,
        "planned_server": pool.server,
        "measured_server": _server(result.run_file),
        "run_file": str(path),
        "levels": levels,
        "problems": list(result.problems),
    }
    code = _ingest(args, path, report)
    if args.format == "json":
        sys.stdout.write(json.dumps(report, indent=1) + "\n")
    else:
        sys.stdout.write(text(report))
    if code != EXIT_OK:
        return code
    planned = levels[0] if levels else None
    if planned is None:
        return EXIT_PROBLEMS
    if any(planned[m]["verdict"] == "misses" for m in ("ttft", "tpot")):
        return EXIT_INFEASIBLE  # even where the server stopped answering: that is a miss
    return EXIT_PROBLEMS if result.interrupted or len(levels) < 2 else EXIT_OK


def _server(run_file) -> str:
    from fleetplan.planner.capacity.configuration import server_label

    run = run_file.runs[0]
    return server_label(
        run.engine, run.engine_version, run.dtype, run.tensor_parallel_size, run.variant
    )


def _ingest(args: argparse.Namespace, path: Path, report: dict) -> int:
    if not args.ingest:
        return EXIT_OK
    from fleetplan.warehouse.db import Warehouse
    from fleetplan.warehouse.ingest import ingest_paths
    from fleetplan.warehouse.preview import FileStatus

    with Warehouse.open(args.warehouse, wait_s=args.wait) as warehouse:
        outcomes = list(ingest_paths(warehouse, [path]))
    report["ingested"] = [f"{o.status.value}: {o.message}" for o in outcomes]
    rejected = any(o.status is FileStatus.REJECTED for o in outcomes)
    return EXIT_PROBLEMS if rejected else EXIT_OK


def _ms(value: float | None) -> str:
    return "unbounded" if value is None else f"{value:,.1f}"


def text(report: dict) -> str:
    lines = [f"Pool {report['pool']}: planned on '{report['planned_server']}'."]
    if report["measured_server"] != report["planned_server"]:
        lines.append(
            f"The server answered as '{report['measured_server']}': not the server the pool "
            "was planned on, so its levels are another configuration's and do not narrow this "
            "pool's interval."
        )
    lines.append("")
    for i, level in enumerate(report["levels"]):
        which = "planned rate" if i == 0 else "1.2x"
        lines.append(
            f"  {level['rate_rps']:.3g} req/s ({which}): {level['requests']} requests, "
            f"{level['failed']} failed"
        )
        for metric in ("ttft", "tpot"):
            m = level[metric]
            lo, hi = m["interval_ms"]
            target = "no target" if m["target_ms"] is None else f"target {m['target_ms']:g} ms"
            lines.append(
                f"    P99 {metric.upper()} {_ms(m['p99_ms'])} ms (95 % interval {_ms(lo)}-"
                f"{_ms(hi)} ms), {target}: {m['verdict'].upper()}"
            )
        load = level.get("load") or {}
        if load.get("kept_up") is False:
            lines.append(
                f"    load: {load['reason']}; the queue grew, so the next plan does not count "
                "this level as a rate the server sustains"
            )
        elif load:
            lines.append(f"    load: {load['reason']}")
    lines += ["", f"run file: {report['run_file']}"]
    lines += [f"ingest: {line}" for line in report.get("ingested", [])]
    lines += [f"problem: {p}" for p in report["problems"]]
    return "\n".join(lines) + "\n"
