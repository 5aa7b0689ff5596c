"""A plan at the peak: every class at its peak rate, integer servers per (class, configuration)
pool and the rate each carries, the cheapest (or cleanest) fleet under the scenario's limits.

- `economics`: a pool's linear coefficients ($, kW and kgCO2e per server and per req/s).
- `program`: the peak program and its solve (`solve`, per class first, jointly under limits).
- `pools`: a chosen pool's figures and a fleet's totals.
- `fleets`: a named fleet solved from the candidate pools under an objective and limits.
- `baselines`: the simpler fleets a plan is compared with (all-H100, all-RTX-4090, the paper's
  rule).
- `frontier`: the cost/carbon Pareto sweep.
- `diagnosis`: why a scenario is infeasible, and the notes a plan carries.
- `measure_next`: where an estimate's error band could flip a choice, the command that settles it.
- `results`: what a plan says (`Plan`, `FleetPlan`, `PoolPlan`, `Totals`, ...).
"""
