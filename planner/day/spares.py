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
    carries,
    class_attainment,
    servers_for,
    servers_needed,
)
from fleetplan.planner.day.layout import DaySolution, Layout
from fleetplan.planner.scenario.parts import HOURS
from fleetplan.planner.scenario.scenario import Scenario

GREEDY_STEPS = 200  # spares added one at a time in an hour, before the per-pool sizing
JOINT_SERVERS = 400  # the most servers a fallback class's exact joint chance is computed for
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

        target = traffic.attainment
        rates = {i: solution.rates[(i, hour)] for i in members}
        now = _spared(count, chance, rates, pools, hour, traffic)
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


def _spared(count, chance, rates, pools, hour, traffic) -> float:
    """`count` (changed in place: pool -> servers) with the spares a class needs in an hour to
    meet its attainment, and its chance then.

    One server at a time where it lifts the chance most per dollar, for at most GREEDY_STEPS
    servers; past that (a tiny availability, a huge pool), each pool whose servers are down at
    times gets the fewest with which it carries its own rate at target^(1/k) alone (k such
    pools; `servers_for`): the product of their chances meets the target, and with fallback the
    joint chance, never below the product, too. With fallback and more than JOINT_SERVERS
    servers the chance given is the product (a lower bound: the exact joint one is a
    convolution as large as the pools). ValueError, naming the fields, where no pool can."""
    target = traffic.attainment
    exact = not traffic.fallback or sum(count.values()) <= JOINT_SERVERS
    now = chance(count) if exact else _product(count, rates, pools)
    if target is None:
        return now
    for _ in range(GREEDY_STEPS if exact else 0):
        if now >= target:
            return now
        best, gain = None, -1.0
        for i in rates:
            if pools[i].offer.availability >= 1.0 and not traffic.fallback:
                continue  # a pool always up gains nothing alone
            trial = {**count, i: count[i] + 1}
            lift = (chance(trial) - now) / max(pools[i].usd_server[hour], 1e-9)
            if lift > gain:
                best, gain = i, lift
        if best is None:
            break
        count[best] += 1
        now = chance(count)
    if now >= target:
        return now
    down = [i for i in rates if pools[i].offer.availability < 1.0]
    cannot = (
        f"class {traffic.name!r} at {hour}:00 cannot reach its attainment {target:g} with its "
        "pools' availability"
    )
    if not down:
        raise ValueError(f"{cannot} (at {now:.6f})")
    share = target ** (1 / len(down))
    for i in down:
        needed = servers_needed(rates[i], pools[i].capacity)
        try:
            count[i] = max(count[i], servers_for(needed, pools[i].offer.availability, share))
        except ValueError:
            raise ValueError(
                f"{cannot} ({pools[i].offer.availability:g} would need more than "
                f"{MAX_POOL_SERVERS:,} servers in a pool): lower classes[].attainment or raise "
                "gpus[].availability"
            ) from None
    exact = not traffic.fallback or sum(count.values()) <= JOINT_SERVERS
    return chance(count) if exact else _product(count, rates, pools)


def _product(count, rates, pools) -> float:
    """The chance every pool carries its own rate: a class without fallback's attainment, a
    lower bound of one with it."""
    out = 1.0
    for i, rate in rates.items():
        needed = servers_needed(rate, pools[i].capacity)
        out *= carries(count[i], pools[i].offer.availability, needed)
    return out


def lowest(found: Sequence[HourAttainment]) -> dict[str, HourAttainment]:
    """Each class's hour of lowest attainment."""
    out: dict[str, HourAttainment] = {}
    for row in found:
        if row.traffic_class not in out or row.attainment < out[row.traffic_class].attainment:
            out[row.traffic_class] = row
    return out
