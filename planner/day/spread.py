"""A day plan's volume work spread evenly over the hours that tie (after the solve and its
fewest-GPU-hours tie-break; `day_plan.plan_day`).

Among plans of equal cost and GPU-hours the solver picks any: a nightly volume may be rented
all in one hour of its window (312 RTX 4090s for an hour) when every hour of the window has the
same prices and grid. For each volume class and each pool (offer x configuration) serving it,
servers (and the requests they carry, shared evenly among them) move between the window hours
whose coefficients are identical for that pool (price, electricity, grid, capacity), one at a
time from the busiest hour to the idlest, until the counts differ by at most one. A move is
made only where every limit still holds (`day_limit_rows`: an on-demand offer's GPUs in each hour,
budget and carbon cap per hour and per day) and, for reserved servers, where the hour has one
idle; reserved counts never change. Cost, carbon, energy and GPU-hours stay what they were: the
moved terms have the same coefficients in both hours. Deterministic: hours are taken in the
window's order.
"""

from __future__ import annotations

from dataclasses import replace

from fleetplan.planner.day.hourly_pools import DayLimits
from fleetplan.planner.day.layout import KINDS, DaySolution, Layout, day_limit_rows, vector_of

_TOLERANCE = 1e-9


class _State:
    """The plan being spread: its vector over the layout's columns, the limit rows each column
    is in, and each reserved unit's busy servers per hour."""

    def __init__(self, layout: Layout, solution: DaySolution, limits: DayLimits) -> None:
        self.layout = layout
        self.vector = vector_of(layout, solution)
        self.rows = day_limit_rows(layout, limits)
        self.touching: dict[int, list[int]] = {}
        for r, row in enumerate(self.rows):
            for col, _coef in row.entries:
                self.touching.setdefault(col, []).append(r)
        self.reserved = dict(solution.reserved)
        self.busy: dict[tuple[tuple[str, str, int], int], int] = {}
        for (i, h), count in solution.servers.items():
            pool = layout.pools[i]
            if pool.reserved:
                self.busy[(pool.unit, h)] = self.busy.get((pool.unit, h), 0) + count

    def set(self, changes: dict[int, float]) -> bool:
        """Sets columns to values where no limit row they are in goes above its bound (or above
        where it was); else leaves them. Returns whether it set them."""
        rows = {r for col in changes for r in self.touching.get(col, ())}
        before = {r: self.rows[r].value(self.vector) for r in rows}
        old = {col: self.vector[col] for col in changes}
        for col, value in changes.items():
            self.vector[col] = value
        for r in rows:
            row = self.rows[r]
            value = row.value(self.vector)
            if value > max(row.upper + _TOLERANCE, before[r] + _TOLERANCE):
                for col, value_before in old.items():
                    self.vector[col] = value_before
                return False
        return True


def spread(layout: Layout, solution: DaySolution, limits: DayLimits) -> DaySolution:
    """`solution` with each volume pool's servers as even as the tied hours and the limits
    allow (`layout`: every hour its own, over every pool of the solution)."""
    if not solution.has_plan or not any(_volume(layout, i) for i, _h in solution.servers):
        return solution  # nothing to spread (a day of interactive classes alone)
    state = _State(layout, solution, limits)
    moved = False
    for i, pool in enumerate(layout.pools):
        if not pool.traffic.is_volume:
            continue
        ns = [n for h in pool.traffic.window() if (n := layout.index.get((i, h))) is not None]
        if not any(state.vector[layout.s(n)] for n in ns):
            continue
        groups: dict[tuple[float, ...], list[int]] = {}
        for n in ns:
            groups.setdefault(_signature(layout, n), []).append(n)
        for group in groups.values():
            if len(group) > 1:
                moved |= _even(state, i, group)
    if not moved:
        return solution
    servers = {p: c for p, c in solution.servers.items() if not _volume(layout, p[0])}
    rates = {p: r for p, r in solution.rates.items() if not _volume(layout, p[0])}
    for n, (i, h) in enumerate(layout.pairs):
        if not layout.pools[i].traffic.is_volume:
            continue
        count, rate = round(state.vector[layout.s(n)]), float(state.vector[layout.x(n)])
        if count or rate > 0:
            servers[(i, h)] = count
            rates[(i, h)] = rate
    return replace(solution, servers=servers, rates=rates)


def _volume(layout: Layout, i: int) -> bool:
    return layout.pools[i].traffic.is_volume


def _signature(layout: Layout, n: int) -> tuple[float, ...]:
    """A pair's coefficients in everything the objective and the limits count."""
    return tuple(
        float(table[kind][n]) for kind in KINDS for table in (layout.server_coef, layout.rps_coef)
    )


def _even(state: _State, i: int, group: list[int]) -> bool:
    """Moves servers of pool `i` between the pairs of `group` (its tied hours), busiest to
    idlest, until they differ by at most one or no move keeps the limits; the rate the group
    carries is shared among its servers evenly. Returns whether it changed anything."""
    layout = state.layout
    pool = layout.pools[i]
    s = {n: round(state.vector[layout.s(n)]) for n in group}
    total_servers = sum(s.values())
    total_rate = float(sum(state.vector[layout.x(n)] for n in group))
    if total_servers == 0 or total_rate <= 0:
        return False
    share = total_rate / total_servers  # within each server's capacity: the group's were

    def rate_of(count: int) -> float:
        return share * count

    if not state.set({layout.x(n): rate_of(s[n]) for n in group}):
        return False
    hour = {n: layout.pairs[n][1] for n in group}
    order = {n: k for k, n in enumerate(group)}  # the window's order, from its start
    while True:
        donors = sorted(group, key=lambda n: (-s[n], order[n]))
        takers = sorted(group, key=lambda n: (s[n], order[n]))
        if s[donors[0]] - s[takers[0]] <= 1:
            break
        done = False
        for a in donors:
            for b in takers:
                if s[a] - s[b] <= 1:
                    break
                if pool.reserved:
                    key = (pool.unit, hour[b])
                    if state.busy.get(key, 0) + 1 > state.reserved.get(pool.unit, 0):
                        continue
                changes = {
                    layout.s(a): s[a] - 1,
                    layout.x(a): rate_of(s[a] - 1),
                    layout.s(b): s[b] + 1,
                    layout.x(b): rate_of(s[b] + 1),
                }
                if state.set(changes):
                    s[a] -= 1
                    s[b] += 1
                    if pool.reserved:
                        state.busy[(pool.unit, hour[a])] -= 1
                        state.busy[key] = state.busy.get(key, 0) + 1
                    done = True
                    break
            if done:
                break
        if not done:
            break
    return True  # the rates at least are shared evenly now
