"""Valid inequalities for the day program's demand rows (exact: no integer plan is cut off).

Every class's demand in an hour (a volume's over its window) implies a covering row over the
integer servers of its pools, sum_p capacity_p * s_p >= demand. Two strengthenings of it hold for
every integer s >= 0 and tighten the LP relaxation, which at a day's size is far below the
optimum (a class of 1.5 req/s on servers of 10 pays a tenth of a server in the LP, a whole one in
any plan):

- coefficient tightening: capacity_p -> min(capacity_p, demand) (one server of pool p that alone
  covers the demand satisfies the row whatever its capacity);
- mixed-integer rounding (MIR) of the row divided by t, for each pool's capacity t: with
  a_p = capacity_p / t, b = demand / t and f = frac(b) > 0,
  sum_p (floor(a_p) + min(frac(a_p), f) / f) * s_p >= ceil(b).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_EPS = 1e-9
MAX_DIVISORS = 64  # MIR cuts per demand row, at most


def tightened(entries: Sequence[tuple[int, float]], demand: float) -> list[tuple[int, float]]:
    """The covering row's entries (column, capacity) with every capacity at most the demand."""
    return [(col, min(cap, demand)) for col, cap in entries]


def cut_rows(
    entries: Sequence[tuple[int, float]], demand: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The MIR cuts of a demand row (after tightening), one per distinct capacity below the
    demand (the largest MAX_DIVISORS of them), each the rounding of the module's docstring,
    all divisors at once in arrays: the row's columns, one line of coefficients per cut (0 where
    the cut leaves a column out) and each cut's lower side. None where there is none (a divisor
    that divides the demand whole gives none)."""
    if demand <= _EPS or not entries:
        return None
    cols = np.array([col for col, _cap in entries])
    caps = np.minimum(np.array([cap for _col, cap in entries], dtype=float), demand)
    divisors = np.unique(np.round(caps[caps < demand - _EPS], 9))[::-1][:MAX_DIVISORS]
    b = demand / divisors
    f = b - np.floor(b)
    keep = (f >= 1e-7) & (f <= 1 - 1e-7)
    if not keep.any():
        return None
    divisors, b, f = divisors[keep], b[keep], f[keep, None]
    a = caps[None, :] / divisors[:, None]
    whole = np.floor(a + 1e-12)
    coef = whole + np.minimum(np.maximum(a - whole, 0.0), f) / f
    return cols, np.where(coef > _EPS, coef, 0.0), np.ceil(b)
