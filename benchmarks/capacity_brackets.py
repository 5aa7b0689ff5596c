"""Where `benchmarks/capacity_live.py` checks a prediction: its targets and each bracket's rates.

A bracket is two rates either side of a predicted capacity C, each run until its P99 TTFT
decides against the target (`core.spread.judge_runs`). Two ways to place them (`--bracket`):

- **latency** (the default): the rates at which the curve predicts a P99 TTFT of target / (1 +
  m) and of target x (1 + m), m the `--margin` (0.25). The check then asks exactly what the
  model claims, that its P99 is within m of the truth: if it is, the lower rate's true P99 is
  under (1 + m) x target / (1 + m) = target and meets it, the upper's over target x (1 + m) /
  (1 + m) and misses it. m = 0.25 is the accuracy the capacity model is held to (held-out
  levels within 25 %, benchmarks/RESULTS.md). The rates follow the curve's slope: where it is
  flat they lie far from C, where it is steep near it. A bracket in rates cannot be decided on
  a flat curve: measured here, P99 TTFT rose 360-519 ms from 0.9 to 3.5 req/s, so 0.85 x C
  and 1.2 x C differed by about 10 % in P99, less than runs of one rate differ (390-585 ms).
- **rate**: `--multiples` x C (0.85 and 1.2), as before.

The targets (`choose_targets`, unless `--targets`) lie log-spaced (`TARGET_QUANTILES`) inside
the range where both of a latency bracket's rates exist: from (1 + m) x the curve's lowest P99
to its highest (to 0.95 x the saturation with `--extrapolate`, where the queue form is the
prediction) / (1 + m). A curve too flat for that range has no latency bracket: it says so.
"""

from __future__ import annotations

import argparse
import math

from fleetplan.planner.curve.load_curve import LoadCurve

TARGET_QUANTILES = (0.25, 0.5, 0.75)  # of the usable log P99 range: spread, none at an end
FLAT = 1.5  # a rate-bracket curve whose P99 varies less than this factor: spread over it


def floats(text: str) -> list[float]:
    """A comma-separated option's numbers ("0.85,1.2")."""
    return [float(part) for part in text.split(",") if part.strip()]


class BracketError(ValueError):
    """The curve cannot place the check asked for; the message says why."""


def _range(curve: LoadCurve, extrapolate: bool) -> tuple[float, float]:
    values = [p99 for _, p99 in curve.sample("ttft", extrapolate=extrapolate)]
    if not values:
        raise BracketError(f"the curve has no P99 TTFT to choose targets from: {curve.problem}")
    return min(values), max(values)


def choose_targets(curve: LoadCurve, ctx: argparse.Namespace) -> list[float]:
    """Three P99 TTFT targets log-spaced where the check can place them, whole milliseconds."""
    low, high = _range(curve, ctx.extrapolate or ctx.bracket == "latency")
    if ctx.bracket == "latency":
        low, high = low * (1 + ctx.margin), high / (1 + ctx.margin)
        if high <= low:
            raise BracketError(
                f"the curve's P99 TTFT spans less than (1 + {ctx.margin:g})^2: no rate where "
                f"it predicts a target / {1 + ctx.margin:g} and another where it predicts "
                f"{1 + ctx.margin:g} x the target (try --bracket rate)"
            )
    elif high < FLAT * low:
        print(f"the curve is flat ({low:.0f}-{high:.0f} ms): targets up to {FLAT:g} x its lowest")
        high = FLAT * low
    # Whole milliseconds, rounded up: a target just under the curve's lowest P99 predicts nothing.
    return [math.ceil(low * (high / low) ** q) for q in TARGET_QUANTILES]


def side_unit(ctx: argparse.Namespace) -> str:
    """What a side's label multiplies: "T", the target latency (`--bracket latency`), or "x",
    the predicted capacity (`--bracket rate`)."""
    return "T" if ctx.bracket == "latency" else "x"


def bracket_pairs(ctx: argparse.Namespace, curve: LoadCurve, target: float, capacity: float):
    """Each bracket as ((label, rate), (label, rate)), lower side first. A latency bracket's
    label is the predicted P99 as a multiple of the target; a rate bracket's the multiple of C."""
    if ctx.bracket == "rate":
        pairs = [floats(ctx.multiples)] + ([[0.9, 1.1]] if ctx.tighten else [])
        # labels as the table looks them up (`capacity_live._p99`): three significant digits
        return [tuple((f"{m:.3g}", m * capacity) for m in pair) for pair in pairs]
    margins = [ctx.margin] + ([ctx.margin / 2] if ctx.tighten else [])
    out = []
    for margin in margins:
        sides = []
        for multiple in (1 / (1 + margin), 1 + margin):
            estimate = curve.capacity(
                target_ttft_p99_ms=target * multiple, target_tpot_p99_ms=None, extrapolate=True
            )
            # the upper side needs the curve to reach (1 + m) x target below saturation
            reached = multiple < 1 or (estimate.ttft_p99_ms or 0) >= 0.99 * target * multiple
            if estimate.capacity_rps <= 0 or not reached:
                raise BracketError(
                    f"no rate below saturation predicts {target * multiple:.0f} ms for a "
                    f"target of {target:g} ms: {estimate.reason or 'the curve stays under it'}"
                )
            sides.append((f"{multiple:.3g}", estimate.capacity_rps))
        out.append(tuple(sides))
    return out


def bracket_of(levels: dict[str, dict], sides) -> dict:
    """Whether a bracket held: its lower side met the target and its upper side missed it, and
    which sides could not tell (`levels`: each side's judgement, by label)."""
    (low, _), (high, _) = sides
    decisions = [levels[label]["decision"] for label in (low, high)]
    return {
        "low": float(low),
        "high": float(high),
        "met": decisions[0] == "meets",
        "missed": decisions[1] == "misses",
        "undecided": [m for m, d in zip((low, high), decisions, strict=True) if d == "cannot tell"],
    }


def lost_requests(runs: list[dict]) -> str | None:
    """Why a side misses its target whatever its P99 says: requests that failed, or a run cut
    short (`complete` False), in any of its runs. The P99 is taken over the requests that
    succeeded, and a request that failed never had its first token within the target; so a
    rate that loses requests does not meet it (as `fleetplan collect --find-capacity` fails
    such a level on its first run). None when every run completed every request."""
    failed = sum(int(run.get("failed") or 0) for run in runs)
    short = sum(run.get("complete") is False for run in runs)
    if not failed and not short:
        return None
    said = [f"{failed} request{'s' * (failed != 1)} failed"] if failed else []
    said += [f"{short} of {len(runs)} runs cut short"] if short else []
    return f"misses: {' and '.join(said)} (a P99 of the rest does not count them)"
