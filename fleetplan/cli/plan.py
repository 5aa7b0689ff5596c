"""`fleetplan plan`: recommend a fleet for a scenario (JSON)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fleetplan.cli.common import output_file, warehouse_arg, write_output
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
        "--json",
        type=output_file,
        metavar="OUT",
        help="write the whole plan as JSON, with its inputs and their sources in 'inputs'",
    )


def run(args: argparse.Namespace) -> int:
    from fleetplan.core.errors import InputError
    from fleetplan.planner.explain import trade_off
    from fleetplan.planner.report import summary
    from fleetplan.services import exports, workbook
    from fleetplan.services.planning import load_scenario, plan_from_warehouse
    from fleetplan.warehouse import queries
    from fleetplan.warehouse.db import Warehouse

    try:
        scenario = load_scenario(Path(args.scenario))
        if args.capacity_rule:
            scenario = scenario.model_copy(update={"capacity_rule": args.capacity_rule})
        with Warehouse.open(args.warehouse, read_only=True) as warehouse:
            result = plan_from_warehouse(warehouse, scenario)
            inputs = exports.plan_inputs(
                scenario,
                catalog=queries.gpu_catalog(warehouse),
                prices=queries.gpu_prices(warehouse),
                regions=queries.regions(warehouse),
            )
    except InputError as error:
        print(f"fleetplan plan: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    except OSError as error:
        print(f"fleetplan plan: cannot read {args.scenario}: {error.strerror}", file=sys.stderr)
        return EXIT_PROBLEMS
    sys.stdout.write(summary(result))
    between = trade_off(result)
    if between is not None:
        print(f"\nTrade-off: {between.sentence()}")
    files = (
        ("--csv", args.csv, "pools", lambda: exports.plan_csv(result)),
        ("--fleet-csv", args.fleet_csv, "fleet", lambda: exports.fleet_csv(result)),
        ("--sources-csv", args.sources_csv, "sources", lambda: exports.sources_csv(result, inputs)),
        ("--xlsx", args.xlsx, "workbook", lambda: workbook.plan_xlsx(result, inputs)),
        ("--json", args.json, "plan", lambda: exports.plan_json(result, inputs)),
    )
    try:
        for option, path, what, build in files:
            if path:
                write_output(path, build(), option=option)
                print(f"{what} -> {path}", file=sys.stderr)
    except InputError as error:
        print(f"fleetplan plan: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    if result.recommended.totals is None:
        print(f"fleetplan plan: no plan: {result.message}", file=sys.stderr)
        return EXIT_INFEASIBLE
    return EXIT_OK
