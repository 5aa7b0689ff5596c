"""The simpler fleets a plan is compared with, each solved under the same rules (targets, limits,
objective) from a subset of the candidate pools:

- all-H100: only H100 servers (PCIe, SXM or NVL);
- all-RTX-4090: only RTX 4090 servers;
- the paper's rule (io.net AIBC 2025): classes with a P99 TTFT target under 200 ms on H100
  servers, the rest on servers of four RTX 4090s.

A baseline whose GPUs the scenario does not offer is `not_applicable`. To add one, add a
`Baseline` to `BASELINES`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextvars import copy_context
from dataclasses import dataclass

from fleetplan.planner.peak.economics import PoolEconomics
from fleetplan.planner.peak.fleets import Candidates, scenario_limits, solve_fleet
from fleetplan.planner.peak.program import Weights
from fleetplan.planner.peak.results import FleetPlan, PlanStatus
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.planner.solve import kernel

PAPER_TTFT_THRESHOLD_MS = 200.0
H100_MODELS = ("h100-pcie", "h100-sxm", "h100-nvl")
RTX_4090 = "rtx-4090"


@dataclass(frozen=True, slots=True)
class Baseline:
    name: str
    # The GPU models the scenario must offer for the baseline to apply: one of each group.
    needs: tuple[tuple[str, ...], ...]
    # Which pools the baseline may use, given the scenario (a rule may look at its classes).
    rule: Callable[[Scenario], Callable[[PoolEconomics], bool]]

    def applies(self, scenario: Scenario) -> bool:
        offered = {g.gpu_model for g in scenario.gpus}
        return all(offered & set(group) for group in self.needs)


def _only_h100(_scenario: Scenario) -> Callable[[PoolEconomics], bool]:
    return lambda pool: pool.gpu_model in H100_MODELS


def _only_4090(_scenario: Scenario) -> Callable[[PoolEconomics], bool]:
    return lambda pool: pool.gpu_model == RTX_4090


def _paper_rule(scenario: Scenario) -> Callable[[PoolEconomics], bool]:
    realtime = {
        c.name
        for c in scenario.classes
        if c.ttft_p99_ms is not None and c.ttft_p99_ms < PAPER_TTFT_THRESHOLD_MS
    }

    def keep(pool: PoolEconomics) -> bool:
        if pool.capacity.traffic_class in realtime:
            return pool.gpu_model in H100_MODELS
        return pool.gpu_model == RTX_4090 and pool.gpus_per_server == 4

    return keep


BASELINES: tuple[Baseline, ...] = (
    Baseline("all-H100", (H100_MODELS,), _only_h100),
    Baseline("all-RTX-4090", ((RTX_4090,),), _only_4090),
    Baseline(
        "paper rule (TTFT < 200 ms to H100, rest to 4x RTX 4090)",
        ((RTX_4090,), H100_MODELS),
        _paper_rule,
    ),
)


# Threads the baselines are solved in, at most (1: one after another, as
# `benchmarks/planner.py --baselines` times them beside the default).
WORKERS = os.cpu_count() or 1

# How a fleet is solved from a subset of the candidates (`fleets.solve_fleet`, or
# `availability_plan.solve_available_fleet` where classes have an attainment target).
Solver = Callable[..., FleetPlan]


def baselines(
    candidates: Candidates, weights: Weights, *, solve: Solver = solve_fleet
) -> list[FleetPlan]:
    """Every baseline, solved by `solve` with the scenario's objective and limits. They are
    independent of each other, so they are solved side by side in threads (HiGHS releases the
    GIL while it solves), each under the plan's clock (`kernel.plan_clock`); the list keeps
    `BASELINES`' order."""
    scenario = candidates.scenario
    limits = scenario_limits(scenario)

    def one(baseline: Baseline) -> FleetPlan:
        if not baseline.applies(scenario):
            message = "the scenario offers none of these GPUs"
            return FleetPlan(name=baseline.name, status=PlanStatus.NOT_APPLICABLE, message=message)
        if kernel.spent():  # the plan's time limit went on what came before
            message = (
                f"not solved: the plan's time limit of {kernel.said(scenario.time_limit_s):g} s "
                "was spent before it (raise time_limit_s)"
            )
            return FleetPlan(name=baseline.name, status=PlanStatus.TIME_LIMIT, message=message)
        subset = candidates.only(baseline.rule(scenario))
        return solve(subset, baseline.name, weights=weights, limits=limits)

    applicable = [b for b in BASELINES if b.applies(scenario)]
    workers = min(len(applicable), WORKERS)
    if workers < 2:
        return [one(b) for b in BASELINES]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        # each task runs in a copy of this context: the plan's clock is seen in the thread
        futures = [pool.submit(copy_context().run, one, b) for b in BASELINES]
        return [f.result() for f in futures]
