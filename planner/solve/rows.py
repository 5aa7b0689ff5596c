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
        self.rows.extend([len(self.lower)] * len(entries))
        self.cols.extend(col for col, _val in entries)
        self.vals.extend(val for _col, val in entries)
        self.lower.append(lower)
        self.upper.append(upper)

    def constraint(self) -> LinearConstraint:
        shape = (len(self.lower), self.columns)
        matrix = coo_array((self.vals, (self.rows, self.cols)), shape=shape).tocsr()
        return LinearConstraint(matrix, self.lower, self.upper)
