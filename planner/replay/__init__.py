"""Replay a request trace through a planned fleet: each request routed as the exported router
would, each server simulated by the serving model (`planner.estimate.simulate.serve`), per class
and hour the P99s against the targets, the goodput, and where a target misses, the busiest minute
and the headroom that holds it.

Entry points: `fleet.fleet_of` (a plan JSON's fleet, hour by hour), `trace.requests_of` (a
trace's requests on the plan's clock), `run.replay` (the simulation), `results` (what it says).
"""
