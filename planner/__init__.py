"""Fleet planning: which GPUs, how many, and which traffic goes where. Pure domain logic: no
Streamlit, no DuckDB; typed inputs (a `Scenario`, benchmark points as a DataFrame of the canonical
table, GPU reference figures) and a typed `Plan` out.

The model (the dashboard and the CSV say the same):
- A configuration is (GPU model, GPUs per server) for the scenario's model, as measured.
- Capacity of one server of a configuration for a class: the highest achieved request throughput
  among its measured levels whose P99 TTFT and P99 TPOT meet the class's targets (a missing target
  is no constraint), times the utilisation ceiling; 0 when no level passes. No extrapolation
  beyond measured levels. Where that level is one at which the server fell behind its offered
  load (achieved < 90% of offered, or a burst at `inf`), the plan says so.
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
"""

from fleetplan.planner.economics import EnergyBasis, GpuFacts
from fleetplan.planner.plan import FleetPlan, Plan, PlanStatus, PoolPlan, Totals, plan
from fleetplan.planner.scenario import CarbonPrice, GpuOffer, Scenario, Site, TrafficClass

__all__ = [
    "CarbonPrice",
    "EnergyBasis",
    "FleetPlan",
    "GpuFacts",
    "GpuOffer",
    "Plan",
    "PlanStatus",
    "PoolPlan",
    "Scenario",
    "Site",
    "Totals",
    "TrafficClass",
    "plan",
]
