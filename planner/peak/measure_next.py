"""What to measure next: where a plan's choice for a class rests on an estimated configuration
(or passes one over) and the estimate's error band could flip it, the plan says so and prints
the `fleetplan collect --find-capacity` command that would settle it.

A choice can flip when, per server-hour of cost over capacity, the chosen configuration's cost
per req/s at the pessimistic end of its interval is above another candidate's at that one's
optimistic end, and one of the two rests on an estimate (a measured pair is the capacity
overlap note's matter, `capacity.intervals`). The command measures each estimated one of the
two with the class's targets and token shape (its fixed lengths, else the estimate's mean
lengths rounded).
"""

from __future__ import annotations

from collections.abc import Sequence

from fleetplan.planner.capacity.configuration import level_basis
from fleetplan.planner.capacity.measure_hint import collect_command
from fleetplan.planner.peak.economics import PoolEconomics
from fleetplan.planner.peak.results import FleetPlan
from fleetplan.planner.scenario.scenario import Scenario


def _estimated(pool: PoolEconomics) -> bool:
    level = pool.capacity.level
    return level_basis(level) == "estimated"


def _per_rps(pool: PoolEconomics, capacity: float) -> float:
    return pool.usd_per_server_hour / capacity + pool.usd_per_rps_hour if capacity > 0 else 1e300


def _command(pool: PoolEconomics, scenario: Scenario) -> str:
    traffic = next(c for c in scenario.classes if c.name == pool.capacity.traffic_class)
    level = pool.capacity.level
    if traffic.input_len is None or traffic.output_len is None:
        traffic = traffic.model_copy(
            update={
                "input_len": round(level.input_tokens_mean or 0) or None,
                "output_len": round(level.output_tokens_mean or 0) or None,
            }
        )
    configuration = pool.capacity.configuration
    return collect_command(
        scenario.model_of(traffic),
        configuration.gpu_model,
        configuration.gpus_per_server,
        traffic,
    )


def measure_next_notes(
    fleet: FleetPlan, pools: Sequence[PoolEconomics], scenario: Scenario
) -> list[str]:
    """One note per class whose choice an estimate's band could flip (module docstring)."""
    if not any(p.capacity.level is not None and p.capacity.level.estimate for p in pools):
        return []  # nothing estimated: nothing an estimate could flip
    by_class: dict[str, list[PoolEconomics]] = {}
    for pool in pools:
        by_class.setdefault(pool.capacity.traffic_class, []).append(pool)
    notes = []
    for traffic in scenario.classes:
        chosen = [p for p in fleet.pools if p.traffic_class == traffic.name and p.rate_rps > 0]
        if not chosen:
            continue
        main = max(chosen, key=lambda p: p.rate_rps)
        mine = by_class.get(traffic.name, [])
        picked = next(
            (
                p
                for p in mine
                if p.gpu_model == main.gpu_model
                and p.gpus_per_server == main.gpus_per_server
                and p.capacity.configuration.server == main.server
            ),
            None,
        )
        if picked is None:
            continue
        worst = _per_rps(picked, picked.capacity.low)
        rivals = [
            p
            for p in mine
            if p is not picked
            and (_estimated(p) or _estimated(picked))
            and _per_rps(p, p.capacity.high) < worst
        ]
        if not rivals:
            continue
        rival = min(rivals, key=lambda p: _per_rps(p, p.capacity.high))
        unsure = [p for p in (picked, rival) if _estimated(p)]
        commands = " ; ".join(dict.fromkeys(_command(p, scenario) for p in unsure))
        notes.append(
            f"class {traffic.name!r}: the choice of {picked.capacity.configuration.label} over "
            f"{rival.capacity.configuration.label} rests on an estimate whose error band could "
            f"flip it (${_per_rps(picked, picked.capacity.low):.3g} per req/s-hour at the low end "
            f"of its capacity against ${_per_rps(rival, rival.capacity.high):.3g} at the other's "
            f"high end); to settle it, measure: {commands}"
        )
    return notes
