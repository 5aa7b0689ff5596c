"""The day program's LP relaxation with its reduced costs, and the columns they rule out
(reduced-cost fixing): what the tie-break and a large day's proof solve on."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, OptimizeResult, linprog
from scipy.sparse import csr_array, vstack

from fleetplan.planner.solve import kernel

# The relaxation's own limit; within a plan, the plan's time left where that is less (an LP
# that does not finish is no answer: the day is then solved whole, within what is left).
RELAX_LIMIT_S = 3600.0


def relax(
    objective: np.ndarray, constraints: Sequence[LinearConstraint], bounds: Bounds
) -> OptimizeResult | None:
    """A program's LP relaxation with its reduced costs (None where it has no answer)."""
    matrix = vstack([csr_array(c.A) for c in constraints]).tocsr()
    lower = np.concatenate([np.broadcast_to(c.lb, (c.A.shape[0],)) for c in constraints])
    upper = np.concatenate([np.broadcast_to(c.ub, (c.A.shape[0],)) for c in constraints])
    equal = lower == upper
    above = ~equal & np.isfinite(upper)
    below = ~equal & np.isfinite(lower)
    relaxed = linprog(
        objective,
        A_ub=vstack([matrix[above], -matrix[below]]).tocsr(),
        b_ub=np.concatenate([upper[above], -lower[below]]),
        A_eq=matrix[equal] if equal.any() else None,
        b_eq=lower[equal] if equal.any() else None,
        bounds=np.column_stack([bounds.lb, bounds.ub]),
        method="highs",
        options={"time_limit": max(kernel.clipped(RELAX_LIMIT_S), 1e-3)},
    )
    return relaxed if relaxed.status in (0, 2) else None


def fixed(
    integrality: np.ndarray, relaxed: OptimizeResult | None, ceiling: float, bounds: Bounds
) -> Bounds:
    """`bounds` with every integer column bounded by what a plan of objective <= `ceiling` can
    give it (reduced-cost fixing, exact: any plan's objective is at least the LP relaxation's
    optimum plus each column's reduced cost times its value, so a column of reduced cost d > 0
    is at most (ceiling - optimum) / d in every such plan; 0 where one unit alone lifts the
    optimum above the ceiling)."""
    if relaxed is None or relaxed.status != 0 or relaxed.lower is None:
        return bounds
    reduced = np.asarray(relaxed.lower.marginals, dtype=float)
    margin = 1e-6 * max(1.0, abs(ceiling))
    upper_bounds = np.array(bounds.ub, dtype=float)
    lower_bounds = np.asarray(bounds.lb, dtype=float)
    priced = (integrality == 1) & (reduced > 0) & (lower_bounds == 0)
    most = np.floor((ceiling + margin - relaxed.fun) / reduced[priced] + 1e-9)
    upper_bounds[priced] = np.minimum(upper_bounds[priced], np.maximum(most, 0.0))
    return Bounds(bounds.lb, upper_bounds)
