"""Shared look: colour-blind-safe colours (Okabe-Ito), one colour per GPU model everywhere."""

from __future__ import annotations

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
