"""What the estimate reads of a measured level (a row of the warehouse's canonical table): its
positive figures, its mean token counts and its tensor-parallel size. Shared by the calibration
(`calibrate`), the prefix-cache reading (`prefix_cache`) and the benchmarks that simulate a
level as it ran."""

from __future__ import annotations

from collections.abc import Mapping

from fleetplan.core.stats import finite_number


def positive(value: object) -> float | None:
    """A positive finite figure of a row (`core.stats.finite_number`, above 0), else None."""
    number = finite_number(value)
    return number if number is not None and number > 0 else None


def level_tokens(row: Mapping) -> tuple[float, float] | None:
    """A level's mean input and output tokens: measured means, else the configured lengths."""
    prompt = positive(row.get("input_tokens_mean")) or positive(row.get("input_len"))
    output = positive(row.get("output_tokens_mean")) or positive(row.get("output_len"))
    return (prompt, output) if prompt and output else None


def tensor_parallel(row: Mapping) -> int:
    """The level's tensor-parallel size: stated, else one engine over all the server's GPUs."""
    stated = positive(row.get("tensor_parallel_size"))
    return int(stated) if stated else int(row.get("gpu_count") or 1)
