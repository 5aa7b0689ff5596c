"""Fleet planning: which GPUs, how many, and which traffic goes where. Pure domain logic: no
Streamlit, no DuckDB; typed inputs (a `Scenario`, benchmark points as a DataFrame of the canonical
table, GPU reference figures) and a typed `Plan` out.

The model (the dashboard and the CSV say the same):
- A configuration is (GPU model, GPUs per server, server) for the scenario's model, as measured:
  the server is the engine, its version, the dtype, tensor parallelism and the runs' free
  `variant` label, so runs of different servers are never one curve and each is a candidate
  (a GPU offer naming a `variant` keeps that one).
- A capacity is an interval (`rps_low` to `rps_high`) with its basis in words; the plan rests on
  the end the scenario's `capacity_at` names ('low', the default; 'mid'; 'high'). Where two
  configurations' intervals overlap, the plan's notes say the data cannot rank them.
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
  `curve_capacity` (on the latency-against-load curve of `load_model`, whose levels, saturation
  and queue form are in `curve_levels`) or `measured_capacity` (today's rule, and the latency
  model's fallback); the types are in `levels`. To add a rule: a module
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
- `diagnosis`: why a scenario is infeasible, and the notes a plan carries; `intervals`: where
  capacity intervals overlap; `measure_hint`: the `fleetplan collect --find-capacity` command
  for a class whose traffic was never measured.
- `bounds`: a server's physical bounds (KV cache, decode bandwidth) from the model's shape and
  the GPUs' memory and bandwidth: what no measured level may exceed.
- `plan`: `plan()`, which runs the steps above in order.
- A day (scenario version 2): `day_pools` (candidate pools with hourly coefficients, the day's
  limits), `day_pruning` (pools and repeated hours no optimum needs), `day_cuts` (rounding cuts
  on the demand rows), `day_lp` (the LP relaxation and reduced-cost fixing), `day` (the 24-hour
  program, a large one by decomposition), `day_plan` (its
  answer beside the peak plan and reserved-only), `day_results` (the output models) and
  `day_report` (terminal text, the schedule CSV). `scenario_parts` holds the scenario's bounds,
  offers and sites; `workload` turns a request log into classes.
- `report` (the CSV's schema and digits, labels, a terminal summary; the dashboard's tables are
  `services.plan_views`), `explain` (why this fleet, in words).
- `availability` (servers needed for an attainment, the chance pools carry their load),
  `availability_milp` (the cheapest fleet meeting attainment), `availability_plan` (a plan with
  availability; `plan` dispatches to it only when a scenario has availability < 1 or an
  attainment), `availability_report` (its words), `simulation` (`fleetplan simulate`).
- `defaults` and `presets`: starting points for a new scenario (the dashboard's first plan).
- `unit_costs` ($ per million tokens of one loaded server) and `paper_check` (the io.net
  paper's claims recomputed): the paper's view of the data, beside the planner.
"""

from fleetplan.planner.peak.economics import EnergyBasis, GpuFacts
from fleetplan.planner.peak.results import (
    CapacityRow,
    FleetPlan,
    ParetoPoint,
    Plan,
    PlanStatus,
    PoolPlan,
    Totals,
)
from fleetplan.planner.plan import plan
from fleetplan.planner.scenario.parts import CarbonPrice, GpuOffer, Site
from fleetplan.planner.scenario.scenario import Scenario, TrafficClass

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
