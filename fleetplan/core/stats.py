"""Latency statistics from per-request timings, by the definitions of `fleetplan.core.contract`.

numpy's linear-interpolated percentiles and means, as vLLM computes them, so that statistics
recomputed from a vLLM file's per-request arrays reproduce the ones it stores.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_PERCENTILES = (50, 90, 95, 99)


def summarise_ms(values_s: np.ndarray, metric: str) -> dict[str, float | None]:
    """Mean and p50/p90/p95/p99 of values in seconds, as `{metric}_{stat}_ms`; nulls when empty."""
    if values_s.size == 0:
        return {f"{metric}_{stat}_ms": None for stat in ("mean", "p50", "p90", "p95", "p99")}
    stats = {f"{metric}_mean_ms": float(np.mean(values_s)) * 1000.0}
    for p, value in zip(_PERCENTILES, np.percentile(values_s, _PERCENTILES), strict=True):
        stats[f"{metric}_p{p}_ms"] = float(value) * 1000.0
    return stats


@dataclass(frozen=True, slots=True)
class RequestTimings:
    """Per-request timings of the successful requests of one load level (seconds, tokens)."""

    ttft_s: np.ndarray
    e2el_s: np.ndarray
    output_tokens: np.ndarray
    itl_s: np.ndarray  # chunk gaps of all requests, pooled
    silent: int = 0  # successful requests left out: they streamed no token (no TTFT to time)

    def latency_stats(self) -> dict[str, float | None]:
        multi = self.output_tokens > 1
        tpot = (self.e2el_s[multi] - self.ttft_s[multi]) / (self.output_tokens[multi] - 1)
        stats: dict[str, float | None] = {}
        stats |= summarise_ms(self.ttft_s, "ttft")
        stats |= summarise_ms(tpot, "tpot")
        stats |= summarise_ms(self.itl_s, "itl")
        stats |= summarise_ms(self.e2el_s, "e2el")
        return stats


def disagreements(
    reported: dict[str, float | None],
    recomputed: dict[str, float | None],
    *,
    rel_tol: float = 1e-3,
    abs_tol_ms: float = 1e-3,
) -> list[tuple[str, float, float]]:
    """(field, reported, recomputed) wherever a reported statistic differs from the recomputed
    by more than rounding: 0.1 % (or a microsecond). Tools sum in other orders, in float32, and
    interpolate percentiles their own way: real files differ from their own arrays by 2e-6 to
    2e-4 (vLLM 0.6-0.7, SGLang 0.5), which is no news to the user."""
    problems = []
    for field, value in reported.items():
        other = recomputed.get(field)
        if value is None or other is None:
            continue
        if abs(value - other) > max(abs_tol_ms, rel_tol * max(abs(value), abs(other))):
            problems.append((field, value, other))
    return problems


def pooled(lists: Sequence[Sequence[float]]) -> list[float]:
    """Flatten per-request chunk-gap lists into one pooled list (ITL's definition)."""
    out: list[float] = []
    for gaps in lists:
        out.extend(gaps)
    return out


def finite_number(value: object) -> float | None:
    """`value` as a float where it is a finite number; None for None, NaN, inf and non-numbers
    (a cell of a table, a field of a file: unknown stays unknown)."""
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


TREND_VALUES = 4000  # at most this many values in `trend_z`: its count of pairs is n^2 / 2


def trend_z(values: Sequence[float]) -> float:
    """Mann-Kendall's trend statistic of `values` in their order, as a z-score: S, the count of
    later values above an earlier one less those below, over its standard deviation when the
    order is random, sqrt(n (n - 1) (2n + 5) / 18) (ties ignored); 0.0 for fewer than 3 values.
    Positive: the values rise through the sequence; past 2.33 a random order would give it once
    in a hundred times. Over `TREND_VALUES` values, on that many evenly spaced through them (a
    level of a million requests would otherwise count 5 x 10^11 pairs)."""
    x = np.asarray(values, dtype=float)
    if x.size > TREND_VALUES:
        x = x[np.linspace(0, x.size - 1, TREND_VALUES).astype(int)]
    n = x.size
    if n < 3:
        return 0.0
    s = sum(float(np.sign(x[i + 1 :] - x[i]).sum()) for i in range(n - 1))
    return s / math.sqrt(n * (n - 1) * (2 * n + 5) / 18)
