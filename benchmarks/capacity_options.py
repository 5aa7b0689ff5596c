"""The command line of benchmarks/capacity_live.py (its docstring describes the run)."""

from __future__ import annotations

import argparse
from pathlib import Path

from fleetplan.core.spread import DEFAULT_CONFIDENCE


def floats(text: str) -> list[float]:
    """A comma-separated option's numbers ("0.85,1.2")."""
    return [float(part) for part in text.split(",") if part.strip()]


def arguments(description: str, argv: list[str] | None = None) -> argparse.Namespace:
    """capacity_live.py's options, parsed (its docstring says what each step does)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--targets", help="three P99 TTFT targets in ms (default: from the curve)")
    p.add_argument("--requests", type=int, default=400, help="requests per validation level")
    p.add_argument("--ladder", default="0.125,0.25,0.5,1,2", help="rates x burst throughput")
    p.add_argument("--ladder-requests", type=int, default=120, help="least requests a level")
    p.add_argument("--ladder-seconds", type=float, default=60.0, help="least arrivals a level")
    p.add_argument("--burst-requests", type=int, default=64)
    p.add_argument("--max-burst", type=float, default=20.0, help="req/s a shape may burst at")
    p.add_argument("--input-len", type=int, help="fix the shape (with --output-len)")
    p.add_argument("--output-len", type=int)
    p.add_argument(
        "--bracket",
        choices=("latency", "rate"),
        default="latency",
        help="sides where the curve predicts target/(1+m), (1+m) x target; or rates",
    )
    p.add_argument("--margin", type=float, default=0.25, help="m of a latency bracket")
    p.add_argument("--multiples", default="0.85,1.2", help="rate bracket: x the prediction")
    p.add_argument("--tighten", action="store_true", help="also m/2 (rate: 0.9 x and 1.1 x)")
    p.add_argument("--extrapolate", action="store_true", help="let the curve extrapolate")
    p.add_argument("--control", action="store_true", help="each level with collect too")
    p.add_argument("--checker", choices=("vllm", "collect"), default="vllm", help="check tool")
    p.add_argument("--find-capacity", action="store_true", help="run collect --find-capacity")
    p.add_argument("--tolerance", type=float, default=0.1, help="for --find-capacity")
    p.add_argument("--base-url", help="use this running server (with --model DIR) instead")
    p.add_argument("--model", help="the served model's folder (with --base-url)")
    p.add_argument("--work", type=Path, help="folder for run files and logs (default: temp)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-runs", type=int, default=3, help="runs of a rate to decide a bracket")
    p.add_argument("--min-runs", type=int, default=2, help="runs of a rate before it decides")
    p.add_argument("--confidence", type=float, default=DEFAULT_CONFIDENCE, help="of the P99")
    p.add_argument("--out", type=Path, help="write the figures as JSON here")
    return p.parse_args(argv)
