"""Replay a request trace through a planned fleet: each request routed as the exported router
would, each server simulated by the serving model (`planner.estimate.simulate.serve`), per class
and hour the P99s against the targets, the goodput, and where a target misses, the busiest minute
and the headroom that holds it (`fleetplan simulate --trace`).

Modules, in the order a replay runs them:
- `fleet`: a plan JSON's fleet hour by hour (`fleet_of`), the classes' targets and models;
- `trace`: a trace's requests on the plan's clock, classes matched, rate scaled (`requests_of`);
- `run`: routing, hosts failing and the servers simulated (`replay`);
- `results`: what it says per class and hour, the busiest minute and the headroom (`summarise`).
"""
