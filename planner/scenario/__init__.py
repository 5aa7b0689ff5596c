"""The planning scenario: what a team tells fleetplan about its traffic, prices and sites (the
input contract, JSON).

- `scenario`: `Scenario` and its `TrafficClass`es, with the scenario-wide choices (objective,
  capacity rule, headroom, limits, a day's timezone).
- `parts`: the parts a scenario is built of: `GpuOffer`, `Site`, `CarbonPrice`, and the
  ranges every field is held to.
- `workload`: traffic classes from a request log (`classes_from_log`).
- `defaults` and `presets`: starting points for a new scenario (the dashboard's first plan).
"""
