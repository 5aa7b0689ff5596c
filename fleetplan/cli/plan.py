"""`fleetplan plan`: recommend a fleet for a scenario (JSON)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from fleetplan.cli.common import (
    capacity_at_arg,
    is_stream,
    output_file,
    warehouse_arg,
    write_output,
    write_outputs,
)
from fleetplan.core.exits import EXIT_INFEASIBLE, EXIT_OK, EXIT_PROBLEMS

NAME = "plan"


def add_parser(sub: argparse._SubParsersAction) -> None:
    plan = sub.add_parser(NAME, help="recommend a fleet for a scenario (JSON)")
    warehouse_arg(plan)
    plan.add_argument("--scenario", required=True, metavar="FILE", help="scenario JSON")
    plan.add_argument(
        "--capacity-rule",
        choices=("model", "measured"),
        help="how a server's capacity is found (overrides the scenario's capacity_rule): 'model',"
        " the latency-against-load curve; 'measured', the best measured level meeting the targets",
    )
    capacity_at_arg(plan)
    plan.add_argument(
        "--estimates",
        choices=("off", "fill"),
        help="'fill': plan every offered GPU the model was not measured on with a capacity "
        "estimated by the serving model (each such pool labelled, with its error band); 'off': "
        "measured configurations only. Overrides the scenario's estimates (default off)",
    )
    plan.add_argument(
        "--model-config",
        metavar="PATH",
        help="the Hugging Face config.json of the scenario's model, where fleetplan has no shape "
        "for it (a model nobody measured): with --estimates fill it is planned on estimates "
        "(the scenario's model_configs, for this model)",
    )
    _export_args(plan)
    plan.add_argument(
        "--router",
        choices=("litellm", "json"),
        help="write the plan's routing: 'litellm', a LiteLLM proxy config (YAML: one weighted "
        "deployment per pool, URL placeholders, fallbacks); 'json', a plain routing table",
    )
    plan.add_argument(
        "-o",
        "--output",
        type=output_file,
        metavar="OUT",
        help="where --router writes (default: standard output)",
    )
    plan.add_argument(
        "--deploy",
        choices=("kubernetes", "skypilot"),
        help="write the recommended fleet as deployments of vLLM: 'kubernetes', a Deployment and "
        "a Service per pool (one YAML for kubectl apply -f); 'skypilot', a service YAML per pool "
        "(sky serve up)",
    )
    plan.add_argument(
        "--deploy-out",
        metavar="PATH",
        help="where --deploy writes: a file (kubernetes) or a folder, created (skypilot: "
        "<pool>.yaml each); default: standard output",
    )
    # The paths to write are checked against --deploy and the inputs before any work, and a
    # fault is a usage error as an option's own check gives (`_check_paths`).
    plan.set_defaults(usage_error=plan.error)


def _export_args(plan: argparse.ArgumentParser) -> None:
    """The files a plan can be written to: CSVs, a workbook, JSON."""
    plan.add_argument(
        "--csv",
        type=output_file,
        metavar="OUT",
        help="write every pool (recommended and baselines) as CSV, one row each, the header first",
    )
    plan.add_argument(
        "--fleet-csv",
        type=output_file,
        metavar="OUT",
        help="write the recommended fleet alone as CSV, with a TOTAL row (GPUs, servers, $/month,"
        " kgCO2e/month)",
    )
    plan.add_argument(
        "--sources-csv",
        type=output_file,
        metavar="OUT",
        help="write every figure the plan rests on (prices, power, embodied, sites) with its "
        "source as CSV",
    )
    plan.add_argument(
        "--xlsx",
        type=output_file,
        metavar="OUT",
        help="write a workbook with sheets fleet, baselines, inputs and sources",
    )
    plan.add_argument(
        "--schedule-csv",
        type=output_file,
        metavar="OUT",
        help="a day scenario (version 2): write its schedule as CSV, one row per hour x offer x "
        "configuration x class (header on the first row)",
    )
    plan.add_argument(
        "--json",
        type=output_file,
        metavar="OUT",
        help="write the whole plan as JSON, with its inputs and their sources in 'inputs'",
    )


def _overridden(scenario, args: argparse.Namespace):
    """The scenario with what the command line overrides (its rule, its end, its estimates,
    its model's config.json)."""
    for field in ("capacity_rule", "capacity_at", "estimates"):
        if getattr(args, field):
            scenario = scenario.model_copy(update={field: getattr(args, field)})
    if args.model_config:
        from fleetplan.services.envelope import config_from_file

        configs = dict(scenario.model_configs or {})
        configs[scenario.model] = config_from_file(args.model_config)
        scenario = scenario.model_copy(update={"model_configs": configs})
    return scenario


def run(args: argparse.Namespace) -> int:
    from fleetplan.core.errors import InputError
    from fleetplan.services import exports
    from fleetplan.services.planning import class_models, load_scenario, plan_from_warehouse
    from fleetplan.warehouse import queries
    from fleetplan.warehouse.db import Warehouse

    problem = _check_paths(args)
    if problem is not None:
        args.usage_error(problem)  # exits 2, as argparse does
    try:
        scenario = _overridden(load_scenario(Path(args.scenario)), args)
        with Warehouse.open(args.warehouse, read_only=True) as warehouse:
            result = plan_from_warehouse(warehouse, scenario)
            inputs = exports.plan_inputs(
                scenario,
                catalog=queries.gpu_catalog(warehouse),
                prices=queries.gpu_prices(warehouse),
                regions=queries.regions(warehouse),
            )
            models = class_models(scenario, queries.models(warehouse))
    except InputError as error:
        print(f"fleetplan plan: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    except OSError as error:
        print(f"fleetplan plan: cannot read {args.scenario}: {error.strerror}", file=sys.stderr)
        return EXIT_PROBLEMS
    # The router's or the deployment's file alone on standard output (> router.yaml, | kubectl)
    if (args.deploy and not args.deploy_out) or (args.router and not args.output):
        with contextlib.redirect_stdout(sys.stderr):
            _print_summary(result)
    else:
        _print_summary(result)
    if args.schedule_csv and result.day is None:
        print("fleetplan plan: --schedule-csv: a version 1 scenario has no day", file=sys.stderr)
        return EXIT_PROBLEMS
    if not _write_exports(args, result, inputs):
        return EXIT_PROBLEMS
    planned = result.day.cost_usd is not None if result.day else result.recommended.totals
    if args.deploy and planned and not _write_deploy(args, result, models):
        return EXIT_PROBLEMS
    if result.day is not None:
        if result.day.cost_usd is None:
            print(f"fleetplan plan: no day plan: {result.day.message}", file=sys.stderr)
            return EXIT_INFEASIBLE
    elif result.recommended.totals is None:
        print(f"fleetplan plan: no plan: {result.message}", file=sys.stderr)
        return EXIT_INFEASIBLE
    if args.router and not _write_router(args, result, models):
        return EXIT_PROBLEMS
    return EXIT_OK


def _real(path: Path) -> Path:
    """A path as the system finds it (links followed, `..` taken): two names of one file meet."""
    return Path(os.path.realpath(path))


def _outputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The files this command will write, with their options (--deploy-out: a kubernetes file;
    a skypilot folder's files are known after the plan)."""
    given = [
        ("--csv", args.csv),
        ("--fleet-csv", args.fleet_csv),
        ("--sources-csv", args.sources_csv),
        ("--xlsx", args.xlsx),
        ("--json", args.json),
        ("--schedule-csv", args.schedule_csv),
        ("--output", args.output if args.router else None),
    ]
    if args.deploy == "kubernetes" and args.deploy_out:
        given.append(("--deploy-out", Path(args.deploy_out).expanduser()))
    return [(option, path) for option, path in given if path and not is_stream(path)]


def _inputs(args: argparse.Namespace) -> dict[Path, str]:
    """The files this command reads, each named for a message: no output may replace one."""
    from fleetplan.warehouse.db import resolve_path

    warehouse = resolve_path(args.warehouse)
    return {
        _real(Path(args.scenario)): "the scenario (--scenario)",
        _real(warehouse): "the warehouse (--warehouse)",
        _real(Path(f"{warehouse}.wal")): "the warehouse's log (--warehouse)",  # DuckDB's, beside
    }


def _deploy_out_problem(deploy: str, text: str) -> str | None:
    """Why --deploy-out cannot be written for --deploy (None: it can): kubernetes writes a file
    (`output_file`'s checks); skypilot a folder of <pool>.yaml files, created with its parents
    where missing, so that what is there must be a folder, or the nearest thing there above it."""
    if deploy == "kubernetes":
        try:
            output_file(text)
        except argparse.ArgumentTypeError as error:
            return str(error)
        return None
    folder = Path(text).expanduser()
    there = folder
    while not os.path.lexists(there) and there.parent != there:
        there = there.parent
    if there.is_dir():
        return None
    if there == folder:
        return f"{text} is not a folder: --deploy skypilot writes a <pool>.yaml per pool into one"
    return f"cannot create the folder {text}: {there} is not a folder"


def _check_paths(args: argparse.Namespace) -> str | None:
    """What is wrong with the paths to write, before any work (None: nothing): --deploy-out for
    its --deploy, an output that is an input (the scenario, the warehouse: it would be replaced)
    or another output's file."""
    if args.deploy and args.deploy_out:
        problem = _deploy_out_problem(args.deploy, args.deploy_out)
        if problem is not None:
            return f"argument --deploy-out: {problem}"
    inputs = _inputs(args)
    written: dict[Path, str] = {}
    if args.deploy == "skypilot" and args.deploy_out:  # its folder: no other output's file
        written[_real(Path(args.deploy_out).expanduser())] = "--deploy-out"
    for option, path in _outputs(args):
        real = _real(path)
        if real in inputs:
            return f"argument {option}: {path} is {inputs[real]}: an output cannot replace an input"
        if real in written:
            return f"argument {option}: {path} is also {written[real]}'s path: give each its own"
        written[real] = option
    return None


def _print_summary(result) -> None:
    """The plan for a terminal: its summary, availability, the day and the trade-off."""
    from fleetplan.planner.availability.summary import availability_lines
    from fleetplan.planner.day.schedule import day_summary
    from fleetplan.planner.report.explain import trade_off
    from fleetplan.planner.report.table import summary_body, summary_head

    sys.stdout.write(summary_head(result))
    if result.day is not None:  # the day first: it is the plan; its peak plan the comparison
        sys.stdout.write(day_summary(result.day))
    sys.stdout.write(summary_body(result))
    for line in availability_lines(result):
        print(line)
    between = trade_off(result)
    if between is not None:
        at = " (at the peak)" if result.day is not None else ""
        print(f"\nTrade-off{at}: {between.sentence()}")


def _write_exports(args: argparse.Namespace, result, inputs) -> bool:
    """Write the files asked for, each named on standard error; False (said why) on an error."""
    from fleetplan.core.errors import InputError
    from fleetplan.planner.day.schedule import schedule_csv
    from fleetplan.services import exports, workbook

    files = (
        ("--csv", args.csv, "pools", lambda: exports.plan_csv(result)),
        ("--fleet-csv", args.fleet_csv, "fleet", lambda: exports.fleet_csv(result)),
        ("--sources-csv", args.sources_csv, "sources", lambda: exports.sources_csv(result, inputs)),
        ("--xlsx", args.xlsx, "workbook", lambda: workbook.plan_xlsx(result, inputs)),
        ("--json", args.json, "plan", lambda: exports.plan_json(result, inputs)),
        ("--schedule-csv", args.schedule_csv, "schedule", lambda: schedule_csv(result.day)),
    )
    try:
        for option, path, what, build in files:
            if not path:
                continue
            try:
                content = build()
            except OSError as error:  # openpyxl writes temp files: a full disk, a size limit
                reason = error.strerror or error
                raise InputError(f"{option} {path}: cannot write it: {reason}") from None
            write_output(path, content, option=option)
            print(f"{what} -> {path}", file=sys.stderr)
    except InputError as error:
        print(f"fleetplan plan: {error}", file=sys.stderr)
        return False
    return True


def _write_router(args: argparse.Namespace, result, models: dict[str, str]) -> bool:
    """The plan's routing (--router; a day plan's: the day's pools) to --output, or to standard
    output; False (said why) where it cannot be written."""
    from fleetplan.core.errors import InputError
    from fleetplan.services.router_config import litellm_config, routing_json

    if args.router == "litellm":
        text = litellm_config(result, models)
    else:
        text = routing_json(result, models)
    if not args.output:
        sys.stdout.write(text)
        return True
    try:
        write_output(args.output, text, option="--output")
    except InputError as error:
        print(f"fleetplan plan: {error}", file=sys.stderr)
        return False
    print(f"router ({args.router}) -> {args.output}", file=sys.stderr)
    return True


def _write_deploy(args: argparse.Namespace, result, models: dict[str, str]) -> bool:
    """The recommended fleet as deployments (--deploy) to --deploy-out, or standard output;
    False (said why) where it cannot be written. SkyPilot's files are written all or none."""
    from fleetplan.core.errors import InputError
    from fleetplan.services.deploy import kubernetes_yaml, skypilot_yaml

    try:
        if args.deploy == "kubernetes":
            text = kubernetes_yaml(result, models)
            if args.deploy_out:
                write_output(Path(args.deploy_out).expanduser(), text, option="--deploy-out")
                print(f"kubernetes -> {args.deploy_out}", file=sys.stderr)
            else:
                sys.stdout.write(text)
            return True
        files = skypilot_yaml(result, models)
        if not args.deploy_out:
            sys.stdout.write("---\n".join(files.values()))
            return True
        folder = Path(args.deploy_out).expanduser()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            reason = error.strerror or error
            raise InputError(f"--deploy-out {folder}: cannot create the folder: {reason}") from None
        taken = _inputs(args) | {_real(path): f"{option}'s file" for option, path in _outputs(args)}
        paths = [(folder / name, text) for name, text in files.items()]
        for path, _ in paths:
            if _real(path) in taken:
                raise InputError(
                    f"--deploy-out {path} is {taken[_real(path)]}: an output cannot replace it"
                )
        write_outputs(paths, option="--deploy-out")
        print(f"skypilot ({len(files)} services) -> {folder}/", file=sys.stderr)
    except InputError as error:
        print(f"fleetplan plan: {error}", file=sys.stderr)
        return False
    return True
