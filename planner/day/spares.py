"""Availability in a day plan: spare servers hour by hour, so that each class meets its
attainment in every hour it has traffic (`planner.availability.probability`'s model: servers up
independently, each with its offer's availability).

The day program plans the servers each pool needs, all up (`DaySolution.servers`); then, in each
hour, each class with an attainment target gets spares, one server at a time, on the pool where
one more server raises the class's attainment most per dollar of that hour, until the target
holds (the product of its pools' chances without fallback; the joint chance of their capacity
with it). A reserved unit holds the most servers it needs in any hour, spares included; an
on-demand pool rents its spares in the hours they are needed. Without an attainment target a
class gets no spares: its attainment is reported, as at the peak.

The spares are added after the program: the day program does not weigh them against its other
choices (a plan with them is feasible and meets every target; a cheaper one may exist), and the
plan's message says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from fleetplan.planner.availability.probability import (
    MAX_POOL_SERVERS,
    PoolState,
    class_attainment,
    servers_needed,
)
from fleetplan.planner.day.layout import DaySolution, Layout
from fleetplan.planner.scenario.parts import HOURS
from fleetplan.planner.scenario.scenario import Scenario

SPARES = (
    "spare servers added hour by hour for the attainment targets after the day program, which "
    "does not weigh them (feasible; a cheaper plan may exist)"
)


@dataclass(frozen=True, slots=True)
class HourAttainment:
    """A class in an hour: its target, the chance it is served, and its servers needed."""

    traffic_class: str
    hour: int
    target: float | None
    attainment: float
    needed: dict[int, int]  # pool -> servers needed all up


def applies(scenario: Scenario) -> bool:
    """Whether the day says anything of availability: an offer below 1, or a target."""
    return any(g.availability < 1 for g in scenario.gpus) or any(
        c.attainment is not None for c in scenario.classes
    )


def with_spares(
    layout: Layout, solution: DaySolution, scenario: Scenario
) -> tuple[DaySolution, list[HourAttainment]]:
    """`solution` with each class's spares hour by hour (module docstring), and each class's
    attainment in each hour it has traffic."""
    if not solution.has_plan:
        return solution, []
    pools = layout.pools
    classes = {c.name: c for c in scenario.classes}
    servers = dict(solution.servers)
    found: list[HourAttainment] = []
    by_class_hour: dict[tuple[str, int], list[int]] = {}
    for i, h in solution.servers:
        if solution.rates.get((i, h), 0.0) > 0:
            by_class_hour.setdefault((pools[i].traffic.name, h), []).append(i)
    for (name, hour), members in sorted(by_class_hour.items(), key=lambda kv: (kv[0][1], kv[0])):
        traffic = classes[name]
        needed = {i: servers_needed(solution.rates[(i, hour)], pools[i].capacity) for i in members}
        count = {i: max(needed[i], servers[(i, hour)]) for i in members}

        def chance(count: dict[int, int], members=members, hour=hour, traffic=traffic) -> float:
            states = [
                (
                    PoolState(count[i], pools[i].offer.availability, pools[i].capacity),
                    solution.rates[(i, hour)],
                )
                for i in members
            ]
            rate = sum(solution.rates[(i, hour)] for i in members)
            return class_attainment(states, rate, fallback=traffic.fallback)

        now = chance(count)
        target = traffic.attainment
        while target is not None and now < target:
            best, gain = None, -1.0
            for i in members:
                if pools[i].offer.availability >= 1.0 and not traffic.fallback:
                    continue  # a pool always up gains nothing alone
                trial = {**count, i: count[i] + 1}
                lift = (chance(trial) - now) / max(pools[i].usd_server[hour], 1e-9)
                if lift > gain:
                    best, gain = i, lift
            if best is None or count[best] >= MAX_POOL_SERVERS:
                raise ValueError(
                    f"class {name!r} at {hour}:00 cannot reach its attainment {target:g} "
                    f"with its pools' availability (at {now:.6f})"
                )
            count[best] += 1
            now = chance(count)
        for i in members:
            servers[(i, hour)] = count[i]
        found.append(HourAttainment(name, hour, target, now, needed))
    reserved = dict(solution.reserved)
    held: dict[tuple[str, str, int], list[int]] = {}
    for (i, h), n in servers.items():
        if pools[i].reserved:
            held.setdefault(pools[i].unit, [0] * HOURS)[h] += n
    for unit, hours in held.items():
        reserved[unit] = max(reserved.get(unit, 0), max(hours))
    spared = any(servers[key] != solution.servers[key] for key in servers)
    message = f"{solution.message}; {SPARES}" if spared else solution.message
    return replace(solution, servers=servers, reserved=reserved, message=message), found


def lowest(found: Sequence[HourAttainment]) -> dict[str, HourAttainment]:
    """Each class's hour of lowest attainment."""
    out: dict[str, HourAttainment] = {}
    for row in found:
        if row.traffic_class not in out or row.attainment < out[row.traffic_class].attainment:
            out[row.traffic_class] = row
    return out
