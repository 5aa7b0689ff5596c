"""A day: a scenario of version 2 planned over its 24 hours (reserved servers all day, on-demand
servers hour by hour, volumes inside their windows).

- `plan_day`: `plan_day`, the day's answer beside the same scenario at its peak and reserved-only.
- `program`: the 24-hour program and its solve (`solve_day`; a large day by decomposition).
- `hourly_pools`: candidate pools with their coefficients in each hour, and the day's limits.
- `layout`: the program's columns and its answers on them (`Layout`, `DaySolution`).
- `pruning`, `cuts`, `relaxation`: what the program can leave out exactly, its rounding cuts,
  its LP relaxation and reduced-cost fixing.
- `spread`: volume work spread evenly over the hours that tie.
- `diagnosis`: which limits leave a day without a plan, named by the scenario's fields.
- `simulation`: the day's fleet simulated hour by hour with hosts that fail (`fleetplan
  simulate` on a day plan).
- `spares`: with availability, spare servers hour by hour until each class meets its attainment.
- `results` (the output models) and `schedule` (terminal text, the schedule CSV).
"""
