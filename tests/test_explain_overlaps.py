"""Where many configurations' capacity intervals overlap, "Why this fleet" says it per
configuration the class runs on, naming a few alternatives and counting the rest, instead of
listing every pair (issue 19: the sentence grew with the square of the configurations)."""

from __future__ import annotations

import re

from fleetplan.planner import Scenario
from fleetplan.planner.report.explain import MAX_NAMED_OVERLAPS, explain
from fleetplan.services.planning import plan_from_tables
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points, gpu_catalog
from tests.support.paths import ROOT

EXAMPLE = ROOT / "examples" / "chat-batch-qwen14b.json"


def _name(row) -> str:
    return f"{row.configuration} ({row.server})" if row.server else row.configuration


def test_overlaps_are_said_per_planned_configuration_a_few_named(sample_warehouse_template):
    with Warehouse.open(sample_warehouse_template, read_only=True) as warehouse:
        points, catalog = benchmark_points(warehouse), gpu_catalog(warehouse)
    scenario = Scenario.model_validate_json(EXAMPLE.read_text())
    result = plan_from_tables(scenario, points, catalog, pareto_points=0)
    name = "batch"  # no TTFT target: every configuration serves it
    rows = [r for r in result.capacities if r.traffic_class == name]
    serving = [r for r in rows if r.capacity_rps_per_server > 0]
    # six more servers of the first configuration (variants), so that there are many
    serving += [serving[0].model_copy(update={"server": f"variant {k}"}) for k in range(6)]
    assert len(serving) > MAX_NAMED_OVERLAPS + 1
    # every serving configuration's interval overlapping every other's: the worst case
    overlapped = [r for r in result.capacities if r.traffic_class != name]
    overlapped += [
        r.model_copy(
            update={"overlaps": [_name(o) for o in rows if o.capacity_rps_per_server <= 0]}
        )
        for r in rows
        if r.capacity_rps_per_server <= 0
    ]
    overlapped += [
        r.model_copy(update={"overlaps": [_name(o) for o in serving if o is not r]})
        for r in serving
    ]
    said = explain(result.model_copy(update={"capacities": overlapped}), scenario)
    line = next(text for text in said if text.startswith(f"{name} ("))
    part = line.split("Capacity intervals overlap (", 1)[1].split("): the data", 1)[0]
    pools = [p for p in result.recommended.pools if p.traffic_class == name and p.servers]
    planned = {f"{p.gpus_per_server}x {p.gpu_model} ({p.server})" for p in pools}
    clauses = part.split("; ")
    assert len(clauses) == len(planned)  # one per configuration the class runs on
    for clause in clauses:
        own, others = clause.split(" with ", 1)
        assert own in planned
        more = len(serving) - 1 - MAX_NAMED_OVERLAPS
        assert others.endswith(f" and {more} more")
        named = re.findall(r"\d+x \S+", others.removesuffix(f" and {more} more"))
        assert len(named) == MAX_NAMED_OVERLAPS
