"""Availability: servers that fail, and fleets sized so each class is served at its targets often
enough (its attainment).

- `probability`: servers needed for an attainment, the chance pools carry their load.
- `program`: the cheapest fleet meeting every class's attainment (`solve_available`).
- `plan_available`: a plan with availability (`planner.plan` dispatches to it only when a
  scenario has availability < 1 or an attainment).
- `summary`: such a plan in words (per pool, per class, the redundancy's cost).
- `simulation`: the plan's attainment checked by simulation (`fleetplan simulate`).
"""
