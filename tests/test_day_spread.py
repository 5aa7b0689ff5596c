"""A day plan's volume work spread over the window hours that tie (planner/day/spread.py): on
the bundled data (the new user's nightly job at 1,000,000 requests, and at its 50,000) and on a
small instance where an on-demand offer's GPUs per hour bound the spread."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fleetplan.planner.day import plan_day as day_plan
from fleetplan.planner.day.hourly_pools import DayLimits
from fleetplan.planner.day.layout import DaySolution, Layout, day_limit_rows, hourly, vector_of
from fleetplan.planner.day.spread import spread
from fleetplan.planner.scenario.parts import HOURS
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.planner.solve.kernel import SolveStatus
from fleetplan.services.planning import plan_from_warehouse
from fleetplan.warehouse.db import Warehouse
from tests.support.day_brute_force import candidates, check_served, hours
from tests.support.paths import ROOT
from tests.support.planner_points import gpu, scenario


def _day(warehouse, requests: int | None):
    raw = json.loads((ROOT / "examples" / "day-chat-nightly.json").read_text())
    if requests is not None:
        raw["classes"][1]["daily_requests"] = requests
    day = Scenario.model_validate(raw)
    with Warehouse.open(warehouse, read_only=True) as wh:
        return day, plan_from_warehouse(wh, day).day


def _servers(plan, name: str, reserved: bool) -> dict[int, int]:
    offers = {r.offer for r in plan.reserved}
    return {
        h.hour: sum(
            p.servers
            for p in h.pools
            if p.traffic_class == name and (p.offer in offers) is reserved
        )
        for h in plan.schedule
    }


def _covered(day, plan) -> None:
    """Every hour's demand met, every volume served inside its window (the plan's schedule)."""
    for traffic in day.classes:
        served = {h.hour: h.demand_rps[traffic.name] for h in plan.schedule}
        pools = {
            h.hour: [p for p in h.pools if p.traffic_class == traffic.name] for h in plan.schedule
        }
        assert all(sum(p.rate_rps for p in pools[h]) == pytest.approx(served[h]) for h in served)
        if traffic.is_volume:
            inside = set(traffic.window())
            assert all(served[h] == 0 for h in served if h not in inside)
            assert sum(served.values()) * 3600 == pytest.approx(traffic.daily_requests)
        else:
            demand = traffic.hourly_demand()
            assert all(served[h] == pytest.approx(demand[h]) for h in served)


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_nightly_overflow_is_rented_evenly_through_the_window(sample_warehouse_path, monkeypatch):
    """1,000,000 requests: the RTX 4090s the idle H100s leave to rent are spread over the 8 hours
    of 22:00-06:00 (equal prices and grid), not rented all in one hour, at the same cost."""
    day, plan = _day(sample_warehouse_path, 1_000_000)
    window = day.classes[1].window()
    rented = _servers(plan, "nightly eval", reserved=False)
    counts = [rented[h] for h in window]
    assert min(counts) > 0 and max(counts) - min(counts) <= 1
    assert all(rented[h] == 0 for h in range(HOURS) if h not in window)
    _covered(day, plan)
    monkeypatch.setattr(day_plan, "spread", lambda layout, solution, limits: solution)
    _, unspread = _day(sample_warehouse_path, 1_000_000)
    assert max(_servers(unspread, "nightly eval", reserved=False).values()) > max(counts)
    assert plan.cost_usd == pytest.approx(unspread.cost_usd, rel=1e-9)
    assert plan.gpu_hours == pytest.approx(unspread.gpu_hours, rel=1e-12)
    assert plan.kgco2e == pytest.approx(unspread.kgco2e, rel=1e-9)
    assert plan.reserved == unspread.reserved
    assert sum(rented.values()) == sum(_servers(unspread, "nightly eval", False).values())


def test_the_nightly_job_is_spread_over_reserved_servers_idle_anyway(sample_warehouse_path):
    """50,000 requests on the reserved H100s chat leaves idle at night: one hour of the window
    no busier than another by more than one server."""
    day, plan = _day(sample_warehouse_path, None)
    busy = _servers(plan, "nightly eval", reserved=True)
    counts = [busy[h] for h in day.classes[1].window()]
    assert max(counts) - min(counts) <= 1 and max(counts) == 1
    _covered(day, plan)


# One offer, RTX 4090s by the hour (1 req/s each), at most 3 GPUs in any hour; at 23:00 a
# batch class takes all 3, so the nightly job's 6 server-hours go to 22:00, 00:00 and 01:00.
TIGHT = scenario(
    [
        {"name": "batch", "hourly_rps": hours({23: 3})},
        {"name": "nightly", "daily_requests": 6 * 3600, "window_hours": [22, 2]},
    ],
    [gpu("rtx-4090", 0.3, commitment="on_demand", max_gpus=3)],
)


def test_the_spread_keeps_an_on_demand_offers_gpus_per_hour():
    day, pools = candidates(TIGHT)
    limits = DayLimits.of(day)
    batch = next(i for i, p in enumerate(pools) if p.traffic.name == "batch")
    nightly = next(i for i, p in enumerate(pools) if p.traffic.name == "nightly")
    packed = DaySolution(  # an optimum as the solver may give it: the job in two hours
        SolveStatus.OPTIMAL,
        "optimal",
        {},
        {(batch, 23): 3, (nightly, 22): 3, (nightly, 0): 3},
        {(batch, 23): 3.0, (nightly, 22): 3.0, (nightly, 0): 3.0},
    )
    layout = Layout(pools, range(len(pools)))
    check_served(day, pools, packed)
    even = spread(layout, packed, limits)
    check_served(day, pools, even)
    night = {h: even.servers.get((nightly, h), 0) for h in (22, 23, 0, 1)}
    assert night == {22: 2, 23: 0, 0: 2, 1: 2}
    assert all(even.rates[(nightly, h)] == pytest.approx(2.0) for h in (22, 0, 1))
    vector = vector_of(layout, even)
    assert all(row.holds(vector) for row in day_limit_rows(layout, limits))
    before = vector_of(layout, packed)
    assert float(np.sum(vector[layout.s(0) : layout.x(0)])) == float(
        np.sum(before[layout.s(0) : layout.x(0)])
    )
    for kind in ("usd", "kg", "kwh"):
        assert hourly(layout, vector, kind).sum() == pytest.approx(
            hourly(layout, before, kind).sum()
        )
