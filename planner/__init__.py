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

Where things live: one sub-package per part, each above the ones it imports
(tests/test_layout.py holds the floors; each `__init__` names its modules):
- `scenario/`: the input contract (`Scenario`, its classes, offers and sites).
- `curve/`: latency against load, a configuration's levels as a `LoadCurve`.
- `capacity/`: a server's capacity for a class, by the scenario's rule, with its basis.
- `estimate/`: what nobody measured: a serving model per GPU and engine, calibrated on the
  measured levels, simulated under Poisson arrivals (labelled, with its error band).
- `solve/`: the solver kernel every program runs on (HiGHS, the tie-break, the status map).
- `peak/`: the peak plan: coefficients, the program, fleets, baselines, frontier, diagnosis, and
  the output models (`Plan`).
- `report/`: a plan in a table and in words.
- `availability/`: fleets sized for servers that fail.
- `day/`: a day scenario planned over its 24 hours (with availability's arithmetic for its
  spares hour by hour).
- `replay/`: a request trace replayed through a planned fleet, each server simulated by the
  serving model (`fleetplan simulate --trace`).
- `paper/`: the io.net paper's claims recomputed (a check, not planning).
- `plan` (planner/plan.py): `plan()`, which runs the steps in order.
A module imports the module that defines a name, never this package (which imports `plan`).
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
