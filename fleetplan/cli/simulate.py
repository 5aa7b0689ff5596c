"""`fleetplan simulate`: check a plan's attainment by simulating hosts that fail and return."""

from __future__ import annotations

import argparse
import json
import sys

from fleetplan.core.exits import EXIT_OK, EXIT_PROBLEMS

NAME = "simulate"


def add_parser(sub: argparse._SubParsersAction) -> None:
    simulate = sub.add_parser(
        NAME, help="simulate a plan's hosts failing and returning; the share of time met"
    )
    simulate.add_argument(
        "--plan", required=True, metavar="FILE", help="a plan JSON (fleetplan plan --json)"
    )
    simulate.add_argument("--hours", type=float, default=2000.0, help="hours to simulate")
    simulate.add_argument("--seed", type=int, default=0, help="random seed")
    simulate.add_argument(
        "--repair-hours",
        type=float,
        default=1.0,
        help="mean time a failed host stays down (h); up times follow from the availability",
    )
    simulate.add_argument(
        "--window-s", type=float, default=60.0, help="arrivals are counted per window (s)"
    )


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from fleetplan.core.errors import InputError
    from fleetplan.core.files import read_at_most
    from fleetplan.core.strict import load_json
    from fleetplan.planner.availability.simulation import report, simulate
    from fleetplan.planner.peak.results import Plan

    if not (args.hours > 0 and args.repair_hours > 0 and args.window_s > 0):
        print(
            "fleetplan simulate: --hours, --repair-hours and --window-s must be above 0",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    try:
        raw = load_json(read_at_most(args.plan, limit=64 << 20), file=args.plan)  # a file, bounded
        raw.pop("inputs", None)
        plan = Plan.model_validate(raw)
        result = simulate(
            plan,
            hours=args.hours,
            seed=args.seed,
            repair_hours=args.repair_hours,
            window_s=args.window_s,
        )
    except OSError as error:
        print(f"fleetplan simulate: cannot read {args.plan}: {error.strerror}", file=sys.stderr)
        return EXIT_PROBLEMS
    except InputError as error:  # not JSON, or a key given twice
        print(f"fleetplan simulate: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    except (json.JSONDecodeError, ValidationError, AttributeError) as error:
        print(
            f"fleetplan simulate: {args.plan} is not a fleetplan plan JSON: {error}",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    except ValueError as error:
        print(f"fleetplan simulate: {args.plan}: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    sys.stdout.write(report(result))
    return EXIT_OK
