"""Shared look: colour-blind-safe colours (Okabe-Ito), a distinct colour per configuration (a GPU
model's first configuration in that model's colour), and log axes labelled in plain numbers."""

from __future__ import annotations

import math
from collections.abc import Iterable

OKABE_ITO = ("#E69F00", "#0072B2", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
_FIXED = {"rtx-4090": "#E69F00", "h100-pcie": "#0072B2", "h100-sxm": "#009E73", "h200": "#CC79A7"}


def series_colours(series_gpus: dict[str, str]) -> dict[str, str]:
    """A distinct colour per series (a configuration), in order: the first series of a GPU model
    takes that model's colour (as everywhere in the app), the others the free colours, yellow
    last (it is faint on white); the palette repeats past eight."""
    colours: dict[str, str] = {}
    for series, gpu in series_gpus.items():
        fixed = _FIXED.get(gpu)
        if fixed and fixed not in colours.values():
            colours[series] = fixed
    free = [c for c in OKABE_ITO if c not in colours.values() and c != "#F0E442"] + ["#F0E442"]
    rest = [s for s in series_gpus if s not in colours]
    for i, series in enumerate(rest):
        colours[series] = free[i] if i < len(free) else OKABE_ITO[i % len(OKABE_ITO)]
    return {series: colours[series] for series in series_gpus}


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
