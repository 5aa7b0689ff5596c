"""A sparse constraint matrix built one row at a time, for scipy's `milp`."""

from __future__ import annotations

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
        row = len(self.lower)
        for col, val in entries:
            self.rows.append(row)
            self.cols.append(col)
            self.vals.append(val)
        self.lower.append(lower)
        self.upper.append(upper)

    def constraint(self) -> LinearConstraint:
        shape = (len(self.lower), self.columns)
        matrix = coo_array((self.vals, (self.rows, self.cols)), shape=shape).tocsr()
        return LinearConstraint(matrix, self.lower, self.upper)
