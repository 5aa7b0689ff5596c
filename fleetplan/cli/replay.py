"""`fleetplan simulate --trace`: the replay's command line (`services.replay`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from fleetplan.core.exits import EXIT_OK, EXIT_PROBLEMS

NAME = "simulate"
MAX_TRACE_BYTES = 2_000_000_000
MAX_PLAN_BYTES = 64 << 20


def _read_plan(path: str) -> dict:
    from fleetplan.core.files import read_at_most
    from fleetplan.core.strict import load_json

    raw = load_json(read_at_most(path, limit=MAX_PLAN_BYTES), file=path)
    if not isinstance(raw, dict):
        raise ValueError("not a fleetplan plan JSON (not an object)")
    return raw


def run_replay(args: argparse.Namespace) -> int:
    from fleetplan.cli.common import Progress
    from fleetplan.core.errors import InputError
    from fleetplan.core.files import read_at_most
    from fleetplan.planner.replay.fleet import PlanShapeError, fleet_of
    from fleetplan.planner.scenario.workload import read_trace
    from fleetplan.services.replay import replay_trace
    from fleetplan.warehouse.db import Warehouse, WarehouseError
    from fleetplan.warehouse.queries import benchmark_points

    if not args.repair_hours > 0:
        print(f"fleetplan {NAME}: --repair-hours must be above 0", file=sys.stderr)
        return EXIT_PROBLEMS
    try:
        fleet = fleet_of(_read_plan(args.plan))
    except OSError as error:
        print(f"fleetplan {NAME}: cannot read {args.plan}: {error.strerror}", file=sys.stderr)
        return EXIT_PROBLEMS
    except (InputError, PlanShapeError, ValueError, KeyError) as error:
        print(f"fleetplan {NAME}: {args.plan}: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    except (AttributeError, TypeError, OverflowError) as error:  # a last resort: a shape unread
        print(
            f"fleetplan {NAME}: {args.plan}: not a fleetplan plan JSON this replay reads "
            f"({type(error).__name__}: {error})",
            file=sys.stderr,
        )
        return EXIT_PROBLEMS
    progress = Progress(f"fleetplan {NAME}", "request")
    try:
        progress.phase(f"reading {args.trace}")
        raw = read_at_most(Path(args.trace), limit=MAX_TRACE_BYTES)
        trace = read_trace(raw.decode("utf-8", errors="replace"), name=args.trace)
        with Warehouse.open(args.warehouse, read_only=True) as warehouse:
            points = benchmark_points(warehouse)
        progress.phase("replaying the requests through the plan's servers")
        try:
            result = replay_trace(
                points,
                fleet,
                trace,
                class_by=args.class_by,
                only=args.only,
                start_hour=args.start,
                scale=args.scale,
                seed=args.seed,
                repair_hours=args.repair_hours,
                progress=progress.update,
            )
        finally:
            progress.close()
    except OSError as error:
        print(f"fleetplan {NAME}: cannot read {args.trace}: {error.strerror}", file=sys.stderr)
        return EXIT_PROBLEMS
    except (InputError, WarehouseError) as error:
        print(f"fleetplan {NAME}: {error}", file=sys.stderr)
        return EXIT_PROBLEMS
    if args.format == "json":
        sys.stdout.write(json.dumps(result, indent=1) + "\n")
    else:
        sys.stdout.write(text(result))
    return EXIT_OK


def _ms(value: float | None) -> str:
    return "unbounded" if value is None else f"{value:,.1f}"


def _target(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def text(result: dict) -> str:
    """The replay for a terminal: per class its verdict, then its hours."""
    lines = [
        f"Replayed {result['requests']:,} requests ({result['placed']}) through the "
        f"{result['plan']} plan's fleet, seed {result['seed']}"
        + (", hosts failing as the plan's availability says" if result["availability"] else "")
        + ".",
        f"Method: {result['method']}.",
        "",
    ]
    for name, server in result["servers"].items():
        lines.append(f"  {name}: {server['server'] or 'server'}; {server['basis']}")
    for c in result["classes"]:
        t = c["targets"]
        if not c["requests"]:
            lines += ["", f"{c['name']}: no requests in the trace (not judged)"]
            continue
        verdict = "MEETS its targets" if c["meets"] else "MISSES its targets"
        lines += [
            "",
            f"{c['name']}: {c['requests']:,} requests, P99 TTFT {_ms(c['ttft_p99_ms'])} ms "
            f"(target {_target(t['ttft_p99_ms'])}), P99 TPOT {_ms(c['tpot_p99_ms'])} ms "
            f"(target {_target(t['tpot_p99_ms'])}), goodput "
            + ("-" if c["goodput"] is None else f"{c['goodput']:.1%}")
            + f": {verdict}"
            + (f"; {c['failed']:,} failed" if c["failed"] else ""),
        ]
        if not c["hours"]:
            continue
        lines.append(
            f"  {'hour':>4} {'requests':>9} {'P99 TTFT ms':>12} {'P99 TPOT ms':>12} "
            f"{'goodput':>8}  verdict"
        )
        for h in c["hours"]:
            verdict = "meets" if h["meets"] else "MISSES"
            if not h["meets"] and "busiest_minute" in h:
                b = h["busiest_minute"]
                verdict += f"; busiest minute {b['start']} at {b['rate_rps']:g} req/s"
            room = h.get("headroom")
            if room:
                verdict += (
                    f"; holds with servers x {room['factor']:g} ("
                    + ", ".join(f"{k}: {v}" for k, v in room["servers"].items())
                    + ")"
                    if room["factor"]
                    else f"; {room['words']}"
                )
            lines.append(
                f"  {h['hour']:>4} {h['requests']:>9,} {_ms(h['ttft_p99_ms']):>12} "
                f"{_ms(h['tpot_p99_ms']):>12} "
                + (f"{'-':>8}" if h["goodput"] is None else f"{h['goodput']:>8.1%}")
                + f"  {verdict}"
            )
    for note in result["notes"]:
        lines += ["", f"Note: {note}"]
    return "\n".join(lines) + "\n"
