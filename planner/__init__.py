"""Fleet planning: which GPUs, how many, and which traffic goes where. Pure domain logic: no
Streamlit, no DuckDB; typed inputs (a `Scenario`, benchmark points as a DataFrame of the canonical
table, GPU reference figures) and a typed `Plan` out.

The model (the dashboard and the CSV say the same):
- A configuration is (GPU model, GPUs per server) for the scenario's model, as measured.
- Capacity of one server of a configuration for a class, by the scenario's `capacity_rule`:
  "model" (the default): the highest rate whose P99 TTFT and P99 TPOT the configuration's
  latency-against-load curve (fitted on the levels where the server kept up, no extrapolation)
  predicts within the class's targets; for a class without targets, the highest rate the server
  kept up with. Where the curve cannot say (too few stable levels), today's rule, labelled so.
  "measured" (today's rule): the highest achieved request throughput among the measured levels
  whose P99s meet the targets. Either way times the utilisation ceiling (headroom); 0 when no
  rate passes. Each pool says what its capacity rests on (its basis) and the P99s the curve
  predicts at its planned load per server.
- Pools, not shared servers: each class is served by pools of its own, as a router would do it,
  because a server's latency depends on its total load.
- Decision: integer servers per (class, configuration) pool and the rate each carries; each
  class's full rate is served; a pool carries at most servers x capacity; limits on GPUs per
  model, budget ($/h) and carbon (kgCO2e/h). Solved with scipy's `milp` (HiGHS) under a time limit.
- Cost: servers x GPUs x price per GPU-hour, plus energy x PUE x electricity price where
  electricity is not included. Power rises linearly with the carried rate from idle to the
  measured power at the measured level (`measured`), or to rated power there (`modelled`).
  Operational carbon = energy x PUE x grid intensity; embodied carbon = GPUs x embodied kgCO2e x
  hours / lifetime hours (calendar amortisation), unless switched off for existing hardware.
- Objective: cost, carbon, or cost with a carbon price; ties go to fewer GPUs. A month is 730 h.

Where things live (a module here imports the module that defines a name, never this package:
that would be an import cycle through this file, which imports them all):
- `scenario`: the input contract (a `Scenario` of traffic classes, GPU offers, sites, objective).
- `capacity`: capacity of one server of a configuration for a class, by the scenario's rule:
  `model_capacity` (on the latency-against-load curve of `load_model`) or `measured_capacity`
  (today's rule, and the model's fallback); the types are in `levels`. To add a rule: a module
  beside those two that returns `Capacity`s with their basis, a value of `scenario.CapacityRule`,
  and its branch in `capacity._class_capacities`.
- `economics`: a candidate pool's linear coefficients: $, kW and kgCO2e per server and per req/s.
- `milp`: the mixed-integer program and its solve (per class first, jointly under limits).
  To add a constraint (a limit such as a power cap in kW), as the budget and the carbon cap are:
  its scenario field in `scenario` (validated, the unit in its name; None = no limit); its field
  in `milp.Limits`, filled from the scenario in `fleets.scenario_limits`; its row in `milp`'s
  constraints, from `economics.PoolEconomics`' per-server and per-req/s coefficients, and its
  check on a solution in the same module; why a plan is infeasible under it in
  `diagnosis.binding_limits`; the page's input in `app/plan_inputs.py` (`_limits`) through
  `services.scenario_forms.scenario_settings`; tests in tests/test_planner.py: a scenario the
  limit changes, one it makes infeasible, with the message naming the limit.
- `results`: the output models (`Plan`, `FleetPlan`, `PoolPlan`, `Totals`, `ParetoPoint`, ...).
- `pools`: pool arithmetic: a chosen pool's figures, and a fleet's totals.
- `fleets`: a named fleet solved from the candidate pools under an objective and limits.
- `baselines`: the simpler fleets a plan is compared with (all-H100, all-RTX-4090, the paper's
  rule); to add one, add a `Baseline` there.
- `frontier`: the cost/carbon Pareto sweep.
- `diagnosis`: why a scenario is infeasible, and the notes a plan carries.
- `plan`: `plan()`, which runs the steps above in order.
- `report` (CSV rows and a terminal summary), `explain` (why this fleet, in words).
- `defaults` and `presets`: starting points for a new scenario (the dashboard's first plan).
- `unit_costs` ($ per million tokens of one loaded server) and `paper_check` (the io.net
  paper's claims recomputed): the paper's view of the data, beside the planner.
"""

from fleetplan.planner.economics import EnergyBasis, GpuFacts
from fleetplan.planner.plan import plan
from fleetplan.planner.results import (
    CapacityRow,
    FleetPlan,
    ParetoPoint,
    Plan,
    PlanStatus,
    PoolPlan,
    Totals,
)
from fleetplan.planner.scenario import CarbonPrice, GpuOffer, Scenario, Site, TrafficClass

__all__ = [
    "CapacityRow",
    "CarbonPrice",
    "EnergyBasis",
    "FleetPlan",
    "GpuFacts",
    "GpuOffer",
    "ParetoPoint",
    "Plan",
    "PlanStatus",
    "PoolPlan",
    "Scenario",
    "Site",
    "Totals",
    "TrafficClass",
    "plan",
]
