"""The cost/carbon frontier on the bundled data searches gaps a chart can show, not stretches of
fleets that differ only in how load is split between their pools
(`planner.peak.frontier.MIN_GAP`)."""

from __future__ import annotations

import pytest

from fleetplan.planner.peak import frontier
from fleetplan.services.planning import plan_from_tables
from fleetplan.services.scenario_defaults import default_scenario
from fleetplan.warehouse import queries
from fleetplan.warehouse.db import Warehouse

pytestmark = pytest.mark.usefixtures("fresh_caches")


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_frontier_on_the_bundled_data_is_found_in_few_solves(sample_warehouse_path, monkeypatch):
    with Warehouse.open(sample_warehouse_path, read_only=True) as wh:
        points, catalog = queries.benchmark_points(wh), queries.gpu_catalog(wh)
        prices, regions = queries.gpu_prices(wh), queries.regions(wh)
    scenario = default_scenario(points, catalog, prices, regions)
    solves = []
    solve = frontier.solve_fleet

    def counted(*args, **kwargs):
        solves.append(args[1])
        return solve(*args, **kwargs)

    monkeypatch.setattr(frontier, "solve_fleet", counted)
    # At a 0.6 ceiling each capped solve found a fleet a millionth cleaner than the last: 229
    # solves until the 10 s time limit stopped them, "10 points found within the time limit".
    result = plan_from_tables(scenario.model_copy(update={"max_utilization": 0.6}), points, catalog)
    assert result.pareto_message is None  # neither cut short nor unproven
    assert len(result.pareto) >= 10
    assert len(solves) < 60, len(solves)
    # each capped solve finds a point or closes a gap: about two per point at most
    assert solves.count("capped") <= 2 * len(result.pareto) + 2
