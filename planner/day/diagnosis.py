"""Why a day has no plan under its limits, naming the scenario's fields: each limit
(`day_limit_rows`, named by field) that the best day without limits breaks (the cheapest day for
the budget and the GPU limits, the cleanest for the carbon caps), with the figure it reaches;
where none does alone, every limit set (they bind together)."""

from __future__ import annotations

from collections.abc import Sequence

from fleetplan.planner.day.hourly_pools import DayLimits, DayPool
from fleetplan.planner.day.layout import Layout, day_limit_rows, vector_of
from fleetplan.planner.day.program import solve_day
from fleetplan.planner.peak.program import Weights
from fleetplan.planner.solve.kernel import LimitRow

CHEAPEST = Weights(usd=1.0, kg=0.0)
CLEANEST = Weights(usd=0.0, kg=1.0)


def binding_day_limits(
    pools: Sequence[DayPool], limits: DayLimits, *, time_limit_s: float, carbon_known: bool
) -> str:
    """The words of a day the limits leave without a plan."""
    layout = Layout(pools, range(len(pools)))
    rows = day_limit_rows(layout, limits)
    broken: dict[str, str] = {}  # a field's first broken row (the others are its other hours)
    checks = [(CHEAPEST, "cheapest", lambda r: not r.name.startswith("carbon_cap"))]
    if carbon_known and any(r.name.startswith("carbon_cap") for r in rows):
        checks.append((CLEANEST, "cleanest", lambda r: r.name.startswith("carbon_cap")))
    for weights, which, concerns in checks:
        free = solve_day(pools, weights=weights, limits=DayLimits({}), time_limit_s=time_limit_s)
        if not free.has_plan:
            if which == "cheapest":
                return f"no day plan even without limits ({free.message})"
            continue
        vector = vector_of(layout, free)
        for row in rows:
            field, _, hour = row.name.partition(" at ")
            if concerns(row) and field not in broken and not row.holds(vector, 1e-6):
                where = f" at {hour}" if hour else ""
                reached = f"{_figure(row, row.value(vector))}{where}"
                broken[field] = f"{_words(row)} (the {which} day without limits: {reached})"
    if broken:
        return "the limits leave no way to serve every class every hour: " + "; ".join(
            broken.values()
        )
    together = list(dict.fromkeys(_words(row) for row in rows))
    return "the limits leave no way to serve every class every hour together: " + (
        "; ".join(together) or "see the scenario's limits"
    )


def _figure(row: LimitRow, value: float) -> str:
    if row.name.startswith("budget_usd"):
        return f"${value:,.2f}"
    if row.name.startswith("carbon_cap_kg"):
        return f"{value:,.4g} kgCO2e"
    return f"{abs(value):g} GPUs"


def _words(row: LimitRow) -> str:
    """The limit as the scenario sets it, by its field."""
    field = row.name.partition(" at ")[0]
    if field.startswith("gpus[].min_gpus"):
        return f"{field}: every one of the {-row.upper:g} owned GPUs kept"
    if field.startswith("gpus[].max_gpus"):
        return f"{field} is {row.upper:g}"
    unit = "/h" if field.endswith("_per_hour") else "/day"
    return f"{field} {_figure(row, row.upper)}{unit}"
