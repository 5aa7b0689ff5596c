"""`fleetplan simulate`: check a plan by simulation: its attainment with hosts that fail and
return, or (`--trace`) a request trace replayed through its fleet, latency included."""

from __future__ import annotations

import argparse
import json
import sys

from fleetplan.cli.common import positive_float, warehouse_arg
from fleetplan.core.exits import EXIT_OK, EXIT_PROBLEMS

NAME = "simulate"


def add_parser(sub: argparse._SubParsersAction) -> None:
    simulate = sub.add_parser(
        NAME, help="simulate a plan's hosts failing and returning; the share of time met"
    )
    simulate.add_argument(
        "--plan", required=True, metavar="FILE", help="a plan JSON (fleetplan plan --json)"
    )
    simulate.add_argument("--hours", type=positive_float, default=2000.0, help="hours to simulate")
    simulate.add_argument(
        "--seed", type=non_negative_int, default=0, help="random seed (an integer, 0 or more)"
    )
    simulate.add_argument(
        "--repair-hours",
        type=positive_float,
        default=1.0,
        help="mean time a failed host stays down (h); up times follow from the availability",
    )
    simulate.add_argument(
        "--window-s", type=positive_float, default=60.0, help="arrivals are counted per window (s)"
    )
    replay = simulate.add_argument_group(
        "trace replay (--trace)",
        "replay a request log through the plan's fleet: per class and hour the P99 TTFT and "
        "TPOT, goodput, and whether the targets hold",
    )
    replay.add_argument(
        "--trace",
        metavar="TRACE.csv",
        help="a request log in a format `fleetplan workload` reads (Azure LLM inference trace, "
        "or timestamp, input_tokens, output_tokens [, class])",
    )
    replay.add_argument(
        "--class-by",
        choices=("all", "input", "output", "column"),
        default="all",
        help="split the log into the plan's classes as `fleetplan workload` does (default all)",
    )
    replay.add_argument(
        "--class", dest="only", metavar="NAME", help="replay the whole log as this class"
    )
    replay.add_argument(
        "--scale", type=positive_float, default=1.0, metavar="X", help="multiply the log's rate"
    )
    replay.add_argument(
        "--start",
        type=_hour,
        metavar="HOUR",
        help="move the log's first request to this hour (0-23); default: its time of day",
    )
    replay.add_argument("--format", choices=("text", "json"), default="text")
    warehouse_arg(replay)


def non_negative_int(text: str) -> int:
    """An integer 0 or more (a seed: numpy refuses a negative one)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"an integer 0 or more, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"an integer 0 or more, not {value}")
    return value


def _raw_servers_check(raw: object) -> None:
    """Refuse what the plan model would coerce: a pool's servers given as true/false."""
    from fleetplan.planner.availability.simulation import SimulationInputError

    recommended = raw.get("recommended") if isinstance(raw, dict) else None
    pools = recommended.get("pools") if isinstance(recommended, dict) else None
    for i, pool in enumerate(pools if isinstance(pools, list) else []):
        if isinstance(pool, dict) and isinstance(pool.get("servers"), bool):
            raise SimulationInputError(
                f"recommended.pools[{i}].servers is {pool['servers']!r}: a whole number of "
                "servers, not true/false"
            )


def _hour(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"an hour 0-23, not {text!r}") from None
    if not 0 <= value <= 23:
        raise argparse.ArgumentTypeError(f"an hour 0-23, not {value}")
    return value


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from fleetplan.core.errors import InputError
    from fleetplan.core.files import read_at_most
    from fleetplan.core.strict import load_json
    from fleetplan.planner.availability.simulation import (
        SimulationInputError,
        check_plan,
        report,
        simulate,
    )
    from fleetplan.services.exports import plan_from_json

    if args.trace is not None:
        from fleetplan.cli.replay import run_replay

        return run_replay(args)
    try:
        raw = load_json(read_at_most(args.plan, limit=64 << 20), file=args.plan)  # a file, bounded
        plan = plan_from_json(raw)
        _raw_servers_check(raw)
    except OSError as error:
        print(f"fleetplan simulate: cannot read {args.plan}: {error.strerror}", file=sys.stderr)
        return EXIT_PROBLEMS
    except InputError as error:  # not JSON, or a key given twice
        print(f"fleetplan simulate: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    except (json.JSONDecodeError, ValidationError, AttributeError, TypeError) as error:
        print(
            f"fleetplan simulate: {args.plan} is not a fleetplan plan JSON: {error}",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    except ValueError as error:  # what the plan's reading refuses
        print(f"fleetplan simulate: {args.plan}: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    if plan.day is not None:  # a day plan: its day, hour by hour (not its peak comparison)
        from fleetplan.planner.day.simulation import day_report, read_day, simulate_day

        run_it, say = simulate_day, day_report
    else:
        run_it, say = simulate, report
    try:
        if plan.day is not None:
            fleet = read_day(plan.day)
        else:
            check_plan(plan)
            fleet = plan
    except SimulationInputError as error:  # the plan's fleet: the field named
        print(f"fleetplan simulate: {args.plan}: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    try:
        result = run_it(
            fleet,
            hours=args.hours,
            seed=args.seed,
            repair_hours=args.repair_hours,
            window_s=args.window_s,
        )
    except SimulationInputError as error:  # an option (named) or the work it asks for
        print(f"fleetplan simulate: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    sys.stdout.write(say(result))
    return EXIT_OK
