"""A sparse constraint matrix built one row at a time, for scipy's `milp`."""

from __future__ import annotations

import numpy as np
from scipy.optimize import LinearConstraint
from scipy.sparse import coo_array


class Rows:
    """A sparse constraint matrix, one row at a time: lower <= row . (z, x) <= upper."""

    def __init__(self, columns: int) -> None:
        self.columns = columns
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []

    def add(self, entries: list[tuple[int, float]], lower: float, upper: float) -> None:
        self.rows.extend([len(self.lower)] * len(entries))
        self.cols.extend(col for col, _val in entries)
        self.vals.extend(val for _col, val in entries)
        self.lower.append(lower)
        self.upper.append(upper)

    def add_block(
        self, cols: np.ndarray, coef: np.ndarray, lower: np.ndarray, upper: float
    ) -> None:
        """Rows over the columns `cols`, one per line of `coef` (its zeros left out), each
        lower[k] <= row_k . (z, x) <= upper: as many `add`s, in one pass."""
        at, col = np.nonzero(coef)
        self.rows.extend((at + len(self.lower)).tolist())
        self.cols.extend(cols[col].tolist())
        self.vals.extend(coef[at, col].tolist())
        self.lower.extend(np.asarray(lower, dtype=float).tolist())
        self.upper.extend([upper] * len(lower))

    def add_rows(self, cols: np.ndarray, vals: np.ndarray, lower: float, upper: float) -> None:
        """Rows of the same width at once: row k over the columns `cols[k]` with the values
        `vals[k]` (both of shape rows x width), each lower <= row . (z, x) <= upper."""
        count, width = cols.shape
        first = len(self.lower)
        self.rows.extend(np.repeat(np.arange(first, first + count), width).tolist())
        self.cols.extend(cols.ravel().tolist())
        self.vals.extend(np.asarray(vals, dtype=float).ravel().tolist())
        self.lower.extend([lower] * count)
        self.upper.extend([upper] * count)

    def constraint(self) -> LinearConstraint:
        shape = (len(self.lower), self.columns)
        matrix = coo_array((self.vals, (self.rows, self.cols)), shape=shape).tocsr()
        return LinearConstraint(matrix, self.lower, self.upper)
