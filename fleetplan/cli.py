"""The `fleetplan` command line."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from fleetplan import __version__
from fleetplan.errors import FleetplanError

log = logging.getLogger("fleetplan")

EXIT_REJECTED = 1  # a file or scenario was rejected
EXIT_USAGE = 2  # bad arguments; for `plan`: no feasible fleet
EXIT_ERROR = 3  # the warehouse or another resource is unusable


def _warehouse_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--warehouse",
        metavar="PATH",
        help="DuckDB warehouse file (default: $FLEETPLAN_WAREHOUSE, else var/fleetplan.duckdb)",
    )


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fleetplan",
        description="Plan LLM inference fleets of RTX 4090 and H100 GPUs from measured benchmarks.",
    )
    parser.add_argument("--version", action="version", version=f"fleetplan {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ingest = sub.add_parser("ingest", help="import benchmark result files into the warehouse")
    _warehouse_arg(ingest)
    ingest.add_argument("paths", nargs="+", metavar="PATH", help="files or folders")
    ingest.add_argument("--model", help="model name, for files that do not say")
    ingest.add_argument(
        "--gpu", help="GPU model (e.g. rtx-4090, h100-pcie), for files that do not say"
    )
    ingest.add_argument(
        "--gpu-count", type=_positive_int, help="GPUs per server, for files that do not say"
    )
    ingest.add_argument(
        "--max-file-mb", type=_positive_float, help="refuse larger files (default 32)"
    )
    ingest.add_argument(
        "--max-values",
        type=_positive_int,
        help="refuse files with more values than this (default 5,000,000)",
    )
    _wait_arg(ingest)

    bench = sub.add_parser("benchmarks", help="print the benchmark points table")
    _warehouse_arg(bench)
    bench.add_argument("--format", choices=("csv", "json"), default="csv")
    bench.add_argument("--model", help="model id, or its name after the '/'")
    bench.add_argument("--gpu", help="GPU model, any common label (e.g. 4090, h100-pcie)")
    bench.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")

    template = sub.add_parser("template", help="write an empty benchmark table (CSV) to fill in")
    template.add_argument("--output", "-o", metavar="FILE", help="write to FILE, not stdout")

    build = sub.add_parser("build", help="create the warehouse from the bundled sample data")
    _warehouse_arg(build)
    build.add_argument(
        "--sample-data", metavar="DIR", help="sample data folder (default: sample_data/)"
    )

    sample = sub.add_parser("sample-data", help="rebuild sample_data/ from the raw public results")
    sample.add_argument(
        "--source",
        required=True,
        metavar="DIR",
        help="the io.net results folder (shared/data/ionet-aibc2025/results)",
    )
    sample.add_argument(
        "--out", metavar="FILE", help="default: sample_data/benchmarks/ionet-aibc2025.json"
    )

    plan = sub.add_parser("plan", help="recommend a fleet for a scenario (JSON)")
    _warehouse_arg(plan)
    plan.add_argument("--scenario", required=True, metavar="FILE", help="scenario JSON")
    plan.add_argument("--csv", metavar="OUT", help="write one row per pool as CSV")
    plan.add_argument("--json", metavar="OUT", help="write the whole plan as JSON")

    _collect_parser(sub)

    app = sub.add_parser("app", help="start the dashboard")
    _warehouse_arg(app)
    app.add_argument("--port", type=_positive_int, default=8501)
    app.add_argument("--headless", action="store_true", help="do not open a browser")
    return parser


class _ArgumentsError(Exception):
    pass


class _RaisingParser(argparse.ArgumentParser):
    """A parser that raises instead of exiting: for campaign files, checked before any host runs."""

    def error(self, message: str):  # type: ignore[override]
        raise _ArgumentsError(message)


def _collect_only_parser() -> argparse.ArgumentParser:
    parser = _RaisingParser(prog="fleetplan collect", add_help=False)
    _collect_arguments(parser)
    return parser


def collect_arguments(argv: Sequence[str]) -> argparse.Namespace:
    """`fleetplan collect` options, parsed exactly as the command line parses them. Raises
    InputError with argparse's message."""
    from fleetplan.errors import InputError

    try:
        return _collect_only_parser().parse_args(list(argv))
    except _ArgumentsError as error:
        raise InputError(str(error)) from None


def collect_option_argv(args: argparse.Namespace, *, leave_out: set[str]) -> list[str]:
    """The `fleetplan collect` options in `args` that differ from their defaults, as arguments
    again (for handing one host's collection to another process)."""
    argv: list[str] = []
    for action in _collect_only_parser()._actions:
        if not action.option_strings or action.dest in leave_out:
            continue
        value = getattr(args, action.dest, action.default)
        if value == action.default:
            continue
        flag = next(o for o in action.option_strings if o.startswith("--"))
        if isinstance(action, argparse._StoreTrueAction):
            argv.append(flag)
        elif isinstance(action, argparse._AppendAction):
            argv += [f"{flag}={item}" for item in value]
        else:
            argv += [flag, str(value)]
    return argv


def _wait_arg(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--wait",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long to wait for a warehouse another process holds (default 30)",
    )


def _collect_parser(sub: argparse._SubParsersAction) -> None:
    collect = sub.add_parser(
        "collect",
        help="run the standard probe suite against an inference engine",
        description="Measure a model on this host's GPUs (or a server's) and write a run file; "
        "with --ray, on every GPU type of a Ray cluster.",
    )
    _collect_arguments(collect)


def _collect_arguments(collect: argparse.ArgumentParser) -> None:
    collect.add_argument("--backend", choices=("openai", "vllm", "torch"))
    collect.add_argument("--out", required=True, metavar="DIR", help="folder for the run file")
    collect.add_argument("--ingest", action="store_true", help="load the run file when done")
    _warehouse_arg(collect)
    _wait_arg(collect)
    fleet = collect.add_argument_group("a fleet on Ray (pip install 'fleetplan[cluster]')")
    fleet.add_argument(
        "--ray",
        nargs="?",
        const="auto",
        metavar="ADDRESS",
        help="run on every selected host of a Ray cluster (auto: the one this host joined)",
    )
    fleet.add_argument(
        "--campaign", metavar="FILE", help="YAML/JSON: models, backends, suites per GPU type"
    )
    fleet.add_argument(
        "--gpu-types", metavar="LIST", help="only these GPU types, e.g. rtx-4090,h100-pcie"
    )
    fleet.add_argument(
        "--per-type", type=_positive_int, metavar="N", help="N hosts of each type (default: all)"
    )
    fleet.add_argument(
        "--restart", action="store_true", help="run everything again, ignoring earlier progress"
    )
    what = collect.add_argument_group("what to measure (default: the standard suite)")
    what.add_argument(
        "--suite",
        choices=("standard",),
        help="chat 256/256, RAG 2048/256, generation 256/1024 at 1..32 req/s and saturation",
    )
    what.add_argument("--input-len", type=_positive_int, help="prompt tokens (a custom shape)")
    what.add_argument("--output-len", type=_positive_int, help="output tokens (a custom shape)")
    what.add_argument("--rates", help="request rates, e.g. 1,2,4,inf (default 1,2,4,8,16,32,inf)")
    what.add_argument("--num-requests", type=_positive_int, help="requests per level (200)")
    what.add_argument("--warmup", type=int, default=4, help="warm-up requests, not counted (4)")
    what.add_argument("--seed", type=int, default=0)
    what.add_argument("--max-concurrency", type=_positive_int, help="cap on requests in flight")
    server = collect.add_argument_group("the server (openai, vllm)")
    server.add_argument("--model", help="model name served (openai) or path/name (vllm, torch)")
    server.add_argument("--base-url", help="the OpenAI-compatible server (openai)")
    server.add_argument(
        "--tokenizer",
        help="tokenizer path for exact prompt lengths (default: the server's /tokenize)",
    )
    server.add_argument("--api-key", help="bearer token for the server")
    server.add_argument(
        "--no-ignore-eos",
        action="store_true",
        help="for servers that reject ignore_eos (outputs may end early)",
    )
    server.add_argument(
        "--request-timeout",
        type=_positive_float,
        default=600.0,
        metavar="S",
        help="a request fails when the server sends nothing for S seconds",
    )
    engine = collect.add_argument_group("the managed vLLM server (vllm)")
    engine.add_argument("--tensor-parallel-size", type=_positive_int, default=1)
    engine.add_argument("--load-format", help="e.g. dummy: measure speed without the weights")
    engine.add_argument("--dtype", help="model dtype (vllm, torch)")
    engine.add_argument("--port", type=_positive_int, help="port for the managed server")
    engine.add_argument("--startup-timeout", type=_positive_float, default=900.0, metavar="S")
    engine.add_argument(
        "--engine-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="passed to the vLLM server as is (repeat)",
    )
    hardware = collect.add_argument_group("hardware")
    hardware.add_argument("--gpu", help="the GPU model the server runs on (default: from NVML)")
    hardware.add_argument("--gpu-count", type=_positive_int, help="GPUs per server")
    hardware.add_argument(
        "--telemetry",
        choices=("auto", "off"),
        default="auto",
        help="NVML energy measurement (auto: when NVML works here)",
    )
    torch_group = collect.add_argument_group("transformers on torch (torch)")
    torch_group.add_argument("--config", help="a model config JSON: random weights of that shape")
    torch_group.add_argument("--device", help="cuda or cpu (default: cuda when available)")
    torch_group.add_argument(
        "--max-batch",
        type=_positive_int,
        default=256,
        help="largest batch of the sweep (1, 2, 4, ...)",
    )


def _print_outcomes(outcomes, *, stream=sys.stdout) -> Counter:
    from tqdm import tqdm

    counts: Counter = Counter()
    progress = tqdm(outcomes, unit="file", disable=None, file=sys.stderr, leave=False)
    for outcome in progress:
        counts[outcome.status.value] += 1
        progress.write(f"{outcome.status.value:<9} {outcome.file}: {outcome.message}", file=stream)
        for warning in outcome.warnings[:5]:
            progress.write(f"{'':<9} warning: {warning}", file=stream)
        if len(outcome.warnings) > 5:
            progress.write(f"{'':<9} ... {len(outcome.warnings) - 5} more warnings", file=stream)
    return counts


def _cmd_ingest(args: argparse.Namespace) -> int:
    from warehouse.db import Warehouse
    from warehouse.importers import ImportOptions
    from warehouse.ingest import ingest_paths

    options = ImportOptions(
        model=args.model,
        gpu=args.gpu,
        gpu_count=args.gpu_count,
        max_file_bytes=int(args.max_file_mb * 1024 * 1024) if args.max_file_mb else None,
        max_values=args.max_values,
    )

    def waiting(busy: Exception) -> None:
        print(f"{busy}\nwaiting up to {args.wait:g} s (--wait) ...", file=sys.stderr, flush=True)

    with Warehouse.open(args.warehouse, wait_s=args.wait, on_wait=waiting) as warehouse:
        counts = _print_outcomes(ingest_paths(warehouse, args.paths, options))
        extra = "".join(
            f", {counts[kind]} {label}"
            for kind, label in (("included", "read with another file"), ("skipped", "skipped"))
            if counts[kind]
        )
        print(
            f"{counts['imported']} imported, {counts['duplicate']} already present, "
            f"{counts['rejected']} rejected{extra} -> {warehouse.path}"
        )
    if not counts:
        print("no files found in the given paths", file=sys.stderr)
        return EXIT_REJECTED
    return EXIT_REJECTED if counts["rejected"] else 0


def _cmd_benchmarks(args: argparse.Namespace) -> int:
    from fleetplan.tabular import to_csv, to_json_records
    from warehouse.db import Warehouse
    from warehouse.queries import benchmark_points

    with Warehouse.open(args.warehouse, read_only=True) as warehouse:
        frame = benchmark_points(warehouse, model=args.model, gpu=args.gpu)
    text = to_csv(frame) if args.format == "csv" else to_json_records(frame)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"{len(frame)} rows -> {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    if frame.empty:
        print("no benchmark points match", file=sys.stderr)
    return 0


def _cmd_template(args: argparse.Namespace) -> int:
    from warehouse.template import template_text

    text = template_text()
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"template -> {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from warehouse.db import Warehouse
    from warehouse.sample_data import build

    folder = Path(args.sample_data) if args.sample_data else None
    with Warehouse.open(args.warehouse, wait_s=30) as warehouse:
        steps = build(warehouse, folder)
        reference = next(steps)
        print(
            f"reference data: {reference['gpus']} GPUs, {reference['prices']} prices, "
            f"{reference['regions']} regions"
        )
        counts = _print_outcomes(steps)
        print(f"warehouse ready: {warehouse.path}")
    return EXIT_REJECTED if counts["rejected"] else 0


def _cmd_sample_data(args: argparse.Namespace) -> int:
    from warehouse.sample_data import IONET_FILE, rebuild_ionet, sample_dir

    out = Path(args.out) if args.out else sample_dir() / "benchmarks" / IONET_FILE
    count = rebuild_ionet(Path(args.source), out)
    print(f"{count} runs -> {out}")
    return 0


def _cmd_plan(args: argparse.Namespace) -> int:
    from fleetplan.errors import InputError
    from fleetplan.planning import load_scenario, plan_from_warehouse
    from fleetplan.tabular import to_csv
    from planner.report import pool_table, summary
    from warehouse.db import Warehouse

    try:
        scenario = load_scenario(Path(args.scenario))
        with Warehouse.open(args.warehouse, read_only=True) as warehouse:
            result = plan_from_warehouse(warehouse, scenario)
    except InputError as error:
        print(f"fleetplan plan: {error}", file=sys.stderr)
        return EXIT_REJECTED
    except OSError as error:
        print(f"fleetplan plan: cannot read {args.scenario}: {error.strerror}", file=sys.stderr)
        return EXIT_REJECTED
    sys.stdout.write(summary(result))
    if args.csv:
        Path(args.csv).write_text(to_csv(pool_table(result)), encoding="utf-8")
        print(f"pools -> {args.csv}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(result.model_dump_json(indent=1), encoding="utf-8")
        print(f"plan -> {args.json}", file=sys.stderr)
    if result.recommended.totals is None:
        print(f"fleetplan plan: no plan: {result.message}", file=sys.stderr)
        return EXIT_USAGE  # 2: infeasible
    return 0


def _cmd_collect(args: argparse.Namespace) -> int:
    from collectors.cli import run_collect

    return run_collect(args)


def _cmd_app(args: argparse.Namespace) -> int:
    from warehouse.db import ENV_VAR, resolve_path

    script = Path(__file__).resolve().parents[1] / "app" / "main.py"
    env = dict(os.environ)
    env[ENV_VAR] = str(resolve_path(args.warehouse).resolve())
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(script),
        "--server.port",
        str(args.port),
        "--server.headless",
        "true" if args.headless else "false",
    ]
    print(f"dashboard on http://localhost:{args.port} (warehouse {env[ENV_VAR]})", flush=True)
    # Streamlit takes this process's place, so a stop signal (Ctrl-C, docker stop, systemd)
    # reaches the server itself; a child would outlive a SIGTERM and keep the warehouse.
    os.chdir(script.parents[1])
    os.execve(sys.executable, command, env)


_COMMANDS = {
    "ingest": _cmd_ingest,
    "benchmarks": _cmd_benchmarks,
    "build": _cmd_build,
    "template": _cmd_template,
    "sample-data": _cmd_sample_data,
    "plan": _cmd_plan,
    "collect": _cmd_collect,
    "app": _cmd_app,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return _COMMANDS[args.command](args)
    except FleetplanError as error:
        print(f"fleetplan {args.command}: {error}", file=sys.stderr)
        return EXIT_ERROR
    except FileNotFoundError as error:
        print(f"fleetplan {args.command}: {error}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # e.g. `fleetplan benchmarks | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
