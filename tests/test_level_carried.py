"""The measured level behind a pool says the rate its arrivals prove, not the completions over a
run whose drain is counted (issue 19: "4 req/s offered, 3.4 req/s achieved, kept up" read as a
contradiction on the bundled io.net pools)."""

from __future__ import annotations

import re

from fleetplan.planner import Scenario
from fleetplan.planner.capacity.configuration import carried_text
from fleetplan.planner.report.table import rate_text
from fleetplan.services.plan_tables import levels_view
from fleetplan.services.planning import plan_from_tables
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points, gpu_catalog
from tests.support.paths import ROOT

EXAMPLE = ROOT / "examples" / "chat-batch-qwen14b.json"


def test_carried_text_puts_the_proven_rate_first_and_the_whole_run_beside_it():
    kept = carried_text(4.0, 4.0, 3.39, rate_text)
    assert (
        kept
        == "4 req/s sustained over its arrivals (3.39 req/s over the whole run, its drain included)"
    )
    short = carried_text(16.0, 8.38, 6.3)
    assert short.startswith("at least 8.38 req/s proven over its arrivals")
    # a closed loop, a burst at inf, or a level never judged: only what it completed
    assert carried_text(None, None, 6.3) == "6.3 req/s achieved"
    assert carried_text(float("inf"), 5.0, 6.3) == "6.3 req/s achieved"


def test_the_plan_page_level_of_a_kept_up_pool_is_no_contradiction(sample_warehouse_template):
    with Warehouse.open(sample_warehouse_template, read_only=True) as warehouse:
        points, catalog = benchmark_points(warehouse), gpu_catalog(warehouse)
    scenario = Scenario.model_validate_json(EXAMPLE.read_text())
    result = plan_from_tables(scenario, points, catalog, pareto_points=0)
    view = levels_view(result)
    kept = view[view["The server at that level"] == "kept up"]
    assert not kept.empty
    drained = 0
    assert len(result.recommended.pools) > 0  # a loop over nothing asserts nothing
    for pool, text in zip(result.recommended.pools, view["Measured level"], strict=True):
        if pool.behind or pool.level_sustained_rps is None:
            continue
        found = re.match(
            r"([\d.]+) req/s offered, ([\d.]+) req/s sustained over its arrivals", text
        )
        assert found, text
        offered, sustained = map(float, found.groups())
        # kept up: the rate its arrivals prove is the rate offered, whatever the drain
        assert sustained == offered
        assert f"({rate_text(pool.level_throughput_rps)} req/s over the whole run" in text
        drained += sustained > pool.level_throughput_rps
    assert drained  # the 4 req/s levels: 3.39 req/s over runs whose drain is counted
