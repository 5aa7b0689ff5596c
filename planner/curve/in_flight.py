"""A closed loop's curve in its own terms: throughput and P99s against log concurrency.

A closed-loop sweep (AIPerf, GenAI-Perf, LLMPerf, InferenceX, ML.ENERGY) sets how many requests
are in flight, not a rate. On the rate axis its plateau is near-vertical (the throughput stops
rising while the latency climbs), so a held-out concurrency is placed on the sweep's own axis
instead: every closed-loop level, the plateau's included (there the latency is
still defined: by Little's law the time in the system is concurrency / throughput), repeats at
one concurrency by their median, each metric made monotone in concurrency (more requests in
flight never make one faster: `curve_levels.Axis`, isotonic in log P99).

Between two measured concurrencies the curve is straight in (log concurrency, log P99): a power
law through both (`Axis(cubic=False)`: `numpy.interp` in the logs). Little's law gives both
ends that shape: below the knee the time in the system barely grows with concurrency
(exponent near 0), past it the throughput is flat and the time grows in proportion (exponent
1); a sweep doubles its concurrency from one level to the next, so a piece spans one regime or
the turn between them. A cubic through three to six such points (the open-loop axes' PCHIP)
bends between them where no level shows a bend. On the held-out InferenceX levels below saturation
(benchmarks/capacity_curve.py, 89 of them) the straight pieces put the P99 TTFT within 25 % for
72, the cubic for 69 (P99 TPOT: 83 and 82): chosen on that table's own data, so the table is no
independent check of the choice. The held-out closed-loop levels are predicted on these axes
(`LoadCurve.predict_closed_loop`).
"""

from __future__ import annotations

import math
import statistics

from fleetplan.planner.curve.levels import Axis, CurveLevel


def in_flight_axes(levels: list[CurveLevel]) -> dict[str, Axis | None]:
    """A closed loop's throughput ("rate") and P99s ("ttft", "tpot") against log concurrency
    (module docstring). Empty with fewer than two concurrencies; a metric missing at one is
    None."""
    by_concurrency: dict[int, list[CurveLevel]] = {}
    for level in levels:
        if level.concurrency is not None and level.concurrency > 0:
            by_concurrency.setdefault(level.concurrency, []).append(level)
    if len(by_concurrency) < 2:
        return {}
    xs = [math.log(c) for c in sorted(by_concurrency)]
    axes: dict[str, Axis | None] = {}
    for name, attribute in (
        ("rate", "offered_rps"),
        ("ttft", "ttft_p99_ms"),
        ("tpot", "tpot_p99_ms"),
    ):
        values = []
        for c in sorted(by_concurrency):
            known = [getattr(lv, attribute) for lv in by_concurrency[c] if getattr(lv, attribute)]
            values.append(statistics.median(known) if known else None)
        axes[name] = None if None in values else Axis(xs, values, cubic=False)
    return axes if axes["rate"] else {}
