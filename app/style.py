"""Shared look: colour-blind-safe colours (Okabe-Ito), one colour per GPU model everywhere, and
log axes labelled in plain numbers."""

from __future__ import annotations

import math
from collections.abc import Iterable

OKABE_ITO = ("#E69F00", "#0072B2", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
_FIXED = {"rtx-4090": "#E69F00", "h100-pcie": "#0072B2", "h100-sxm": "#009E73", "h200": "#CC79A7"}


def gpu_colours(gpu_models: list[str]) -> dict[str, str]:
    free = [c for c in OKABE_ITO if c not in _FIXED.values()]
    colours, extra = {}, 0
    for gpu in sorted(set(gpu_models)):
        if gpu in _FIXED:
            colours[gpu] = _FIXED[gpu]
        else:
            colours[gpu] = free[extra % len(free)]
            extra += 1
    return colours


# A log axis labelled at 1, 2 and 5 per decade (fewer over wide ranges, more over narrow ones),
# written out in full: plotly's own labels ("2, 10k, 5, 2, 1000") are hard to read.
_STEPS = ((0.5, (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9)), (1.0, (1, 2, 3, 5, 7)), (3.0, (1, 2, 5)))


def tick_text(value: float) -> str:
    """A tick label: thousands separated, no float noise ("1,000", "0.2", "15")."""
    return f"{value:,.0f}" if value >= 100 else f"{value:,.3g}"


def log_ticks(values: Iterable[float]) -> dict[str, list]:
    """`tickvals`/`ticktext` for a log axis over `values` (data units; non-positive ignored);
    empty when there is nothing to label."""
    finite = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    if not finite:
        return {}
    low, high = min(finite), max(finite)
    span = math.log10(high / low)
    steps = next((s for limit, s in _STEPS if span <= limit), (1,))
    ticks = [
        step * 10.0**decade
        for decade in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
        for step in steps
    ]
    kept = [t for t in ticks if low / 1.5 <= t <= high * 1.5]
    return {"tickvals": kept, "ticktext": [tick_text(t) for t in kept]}
