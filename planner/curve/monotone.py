"""Monotone fits for a handful of points, in plain Python: the closest non-decreasing sequence
(`isotonic`) and the monotone cubic through points (`Pchip`).

`Pchip` is the piecewise cubic Hermite interpolant of Fritsch and Carlson (1980) with the
derivatives of Fritsch and Butland (1984), the same as `scipy.interpolate.PchipInterpolator`
(weighted harmonic mean of the neighbouring slopes inside, a shape-preserving three-point formula
at the ends): exact at every point, monotone where the points are, never overshooting them. The
curves here have 2 to 10 points and are evaluated thousands of times by a planner's bisections;
scipy's version costs a third of a millisecond to build and tens of microseconds per call on such
sizes, this one a few microseconds.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence


def isotonic(values: Sequence[float]) -> list[float]:
    """The closest non-decreasing sequence (least squares; pool adjacent violators)."""
    blocks: list[list[float]] = []  # [mean, weight]
    for value in values:
        blocks.append([float(value), 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            mean, weight = blocks.pop()
            blocks[-1] = [
                (blocks[-1][0] * blocks[-1][1] + mean * weight) / (blocks[-1][1] + weight),
                blocks[-1][1] + weight,
            ]
    return [mean for mean, weight in blocks for _ in range(int(weight))]


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def _end_slope(h0: float, h1: float, m0: float, m1: float) -> float:
    """The end point's derivative: a three-point estimate, kept to the shape of the data."""
    d = ((2 * h0 + h1) * m0 - h0 * m1) / (h0 + h1)
    if _sign(d) != _sign(m0):
        return 0.0
    if _sign(m0) != _sign(m1) and abs(d) > 3 * abs(m0):
        return 3 * m0
    return d


class Pchip:
    """The monotone cubic through (xs[i], ys[i]), xs strictly increasing, at least two points.
    Called outside [xs[0], xs[-1]] it continues the end pieces (callers clamp)."""

    __slots__ = ("_d", "_xs", "_ys")

    def __init__(self, xs: Sequence[float], ys: Sequence[float]) -> None:
        if len(xs) != len(ys) or len(xs) < 2:
            raise ValueError("Pchip needs two points or more, as many x as y")
        self._xs = [float(x) for x in xs]
        self._ys = [float(y) for y in ys]
        h = [b - a for a, b in zip(self._xs, self._xs[1:], strict=False)]
        if min(h) <= 0:
            raise ValueError("Pchip needs strictly increasing x")
        m = [(b - a) / step for a, b, step in zip(self._ys, self._ys[1:], h, strict=False)]
        if len(m) == 1:
            self._d = [m[0], m[0]]
            return
        inner = []
        for k in range(1, len(m)):
            if _sign(m[k]) != _sign(m[k - 1]) or m[k] == 0 or m[k - 1] == 0:
                inner.append(0.0)
                continue
            w1, w2 = 2 * h[k] + h[k - 1], h[k] + 2 * h[k - 1]
            inner.append((w1 + w2) / (w1 / m[k - 1] + w2 / m[k]))
        first = _end_slope(h[0], h[1], m[0], m[1])
        last = _end_slope(h[-1], h[-2], m[-1], m[-2])
        self._d = [first, *inner, last]

    def __call__(self, x: float) -> float:
        xs = self._xs
        k = min(max(bisect_right(xs, x) - 1, 0), len(xs) - 2)
        step = xs[k + 1] - xs[k]
        t = (x - xs[k]) / step
        y0, y1, d0, d1 = self._ys[k], self._ys[k + 1], self._d[k], self._d[k + 1]
        t2, t3 = t * t, t * t * t
        return (
            (2 * t3 - 3 * t2 + 1) * y0
            + (t3 - 2 * t2 + t) * step * d0
            + (-2 * t3 + 3 * t2) * y1
            + (t3 - t2) * step * d1
        )
