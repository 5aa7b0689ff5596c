"""The table and summary line `benchmarks/capacity_live.py` prints: per target, the predicted
capacity, the P99 TTFT at each side of its brackets (pooled over the runs that decided it, and
the rate it was measured at) and whether each bracket held, was missed or could not be decided.
A latency bracket's sides are labelled by the P99 the curve predicts there, as a multiple of the
target ("0.8T"); a rate bracket's by the multiple of the capacity ("0.85x")."""

from __future__ import annotations

import argparse
import time

from benchmarks.capacity_brackets import side_unit
from fleetplan.core import exits


def _p99(row: dict, multiple: float) -> str:
    """vLLM's P99 TTFT at this multiple (pooled over its runs, how many when more than one),
    and fleetplan collect's after a slash (--control)."""
    level = row["levels"].get(f"{multiple:.3g}", {})
    figures = [level.get(key) for key in ("pooled_p99_ms", "control_p99_ttft_ms")]
    shown = "/".join(f"{value:.0f}" for value in figures if value is not None) or "-"
    if level.get("rate_rps"):
        shown += f"@{level['rate_rps']:.2f}"
    return shown + (f" ({level['runs']}r)" if level.get("runs", 1) > 1 else "")


def verdict(bracket: dict, unit: str = "x") -> str:
    """One bracket in words; `unit`: "T" where its sides are multiples of the target latency,
    "x" where they are multiples of the capacity."""
    sides = f"{bracket['low']:g}{unit}/{bracket['high']:g}{unit}"
    if bracket["met"] and bracket["missed"]:
        return f"{sides} yes"
    if bracket.get("undecided"):
        undecided = " and ".join(f"{float(m):g}{unit}" for m in bracket["undecided"])
        return f"{sides} cannot tell at {undecided}"
    low, high = "met" if bracket["met"] else "NOT met", "missed" if bracket["missed"] else "MET"
    return f"{sides} NO ({low} low, {high} high)"


def print_table(ctx: argparse.Namespace, rows: list[dict]) -> int:
    """The table and the summary line; the exit code (every bracket held or not)."""
    multiples = sorted({float(m) for row in rows for m in row["levels"]})
    unit = side_unit(ctx)
    head = f"{'target':>8} {'capacity':>8} {'basis':<12} {'rule':>6} "
    head += " ".join(f"{f'P99@{m:.3g}{unit}':>17}" for m in multiples)
    print("\n" + head + ("  find-cap" if ctx.find_capacity else "") + "  held")
    brackets = [bracket for row in rows for bracket in row["brackets"]]
    for row in rows:
        line = f"{row['target_ms']:>6g}ms {row['capacity_rps']:>8.2f} {row['basis']:<12} "
        line += f"{row['measured_rule_rps']:>6.2f} "
        line += " ".join(f"{_p99(row, m):>17}" for m in multiples)
        if "find_capacity" in row:
            line += f"  {row['find_capacity']['capacity_rps'] or 0:8.2f}"
        verdicts = [verdict(bracket, unit) for bracket in row["brackets"]]
        print(line + "  " + ("; ".join(verdicts) or "no prediction"))
    held = sum(bracket["met"] and bracket["missed"] for bracket in brackets)
    undecided = sum(bool(bracket.get("undecided")) for bracket in brackets)
    runs = sum(len(levels) for levels in ctx.measured.values())
    print(
        f"\nsummary: {held} of {len(brackets)} brackets held, {undecided} undecided after up to "
        f"{ctx.max_runs} runs of a rate, at least {ctx.min_runs} ({runs} runs of "
        f"{len(ctx.measured)} rates; each side judged on the {ctx.confidence:.0%} interval of a "
        "bootstrap of its runs, then their per-request TTFTs; "
        + (
            f"sides where the curve predicts target / {1 + ctx.margin:g} and "
            f"{1 + ctx.margin:g} x target, "
            if ctx.bracket == "latency"
            else f"sides at {ctx.multiples} x the capacity, "
        )
        + f"P99 TTFT from {'fleetplan collect' if ctx.checker == 'collect' else 'vllm bench serve'}"
        f"{'/fleetplan collect' if ctx.control else ''}); shape {ctx.shape[0]}/{ctx.shape[1]} "
        f"tokens, {ctx.requests} requests per level; {(time.monotonic() - ctx.started) / 60:.1f}"
        " min"
    )
    return exits.EXIT_OK if brackets and held == len(brackets) else exits.EXIT_PROBLEMS
