"""`fleetplan plan`: recommend a fleet for a scenario (JSON)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fleetplan.cli.common import capacity_at_arg, output_file, warehouse_arg, write_output
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
        "--csv",
        type=output_file,
        metavar="OUT",
        help="write one row per pool as CSV, after '# ' lines with the inputs it rests on "
        "(prices, power figures and sites with their sources); pandas: read_csv(OUT, comment='#')",
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
        help="write the whole plan as JSON, with its inputs in 'inputs'",
    )
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


def run(args: argparse.Namespace) -> int:
    from fleetplan.core.errors import InputError
    from fleetplan.planner.day_report import day_summary, schedule_csv
    from fleetplan.planner.explain import trade_off
    from fleetplan.planner.report import summary
    from fleetplan.services.exports import plan_csv, plan_inputs, plan_json
    from fleetplan.services.planning import load_scenario, plan_from_warehouse
    from fleetplan.warehouse import queries
    from fleetplan.warehouse.db import Warehouse

    try:
        scenario = load_scenario(Path(args.scenario))
        if args.capacity_rule:
            scenario = scenario.model_copy(update={"capacity_rule": args.capacity_rule})
        if args.capacity_at:
            scenario = scenario.model_copy(update={"capacity_at": args.capacity_at})
        with Warehouse.open(args.warehouse, read_only=True) as warehouse:
            result = plan_from_warehouse(warehouse, scenario)
            inputs = plan_inputs(
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
    from fleetplan.planner.availability_report import availability_lines

    sys.stdout.write(summary(result))
    for line in availability_lines(result):
        print(line)
    if result.day is not None:
        sys.stdout.write(day_summary(result.day))
    between = trade_off(result)
    if between is not None:
        print(f"\nTrade-off: {between.sentence()}")
    if args.csv:
        write_output(args.csv, plan_csv(result, inputs), option="--csv")
        print(f"pools -> {args.csv}", file=sys.stderr)
    if args.json:
        write_output(args.json, plan_json(result, inputs), option="--json")
        print(f"plan -> {args.json}", file=sys.stderr)
    if args.schedule_csv:
        if result.day is None:
            print(
                "fleetplan plan: --schedule-csv: a version 1 scenario has no day", file=sys.stderr
            )
            return EXIT_PROBLEMS
        write_output(args.schedule_csv, schedule_csv(result.day), option="--schedule-csv")
        print(f"schedule -> {args.schedule_csv}", file=sys.stderr)
    if result.day is not None:
        if result.day.cost_usd is None:
            print(f"fleetplan plan: no day plan: {result.day.message}", file=sys.stderr)
            return EXIT_INFEASIBLE
        return EXIT_OK
    if result.recommended.totals is None:
        print(f"fleetplan plan: no plan: {result.message}", file=sys.stderr)
        return EXIT_INFEASIBLE
    if args.router:
        from fleetplan.services.router_config import litellm_config, routing_json

        text = litellm_config(result) if args.router == "litellm" else routing_json(result)
        if args.output:
            write_output(args.output, text, option="--output")
            print(f"router ({args.router}) -> {args.output}", file=sys.stderr)
        else:
            sys.stdout.write(text)
    return EXIT_OK
