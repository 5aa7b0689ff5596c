"""A level whose figures exceed a physical bound never counts as stable for capacity (issue 21:
"a level whose figures are physically impossible is flagged, never stable"): an imported vLLM
file whose output tokens/s is far over the decode-bandwidth bound of its server is "cannot tell"
with the bound named, in the planner's curve, in its measured rule and in `fleetplan capacity`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.inputs.vllm_results import make_result
from fleetplan.planner.curve.envelope_flags import ENVELOPE_FLAG
from fleetplan.planner.curve.load_curve import fit_curve
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.services.capacity import CapacityQuery, capacity_report
from fleetplan.services.envelope import with_envelope_flags
from fleetplan.services.planning import plan_from_warehouse
from fleetplan.warehouse.importers.base import ImportOptions
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.preview import FileStatus
from fleetplan.warehouse.queries import benchmark_points, gpu_catalog
from tests.support.planner_points import gpu, scenario

MODEL = "meta-llama/Llama-3.1-8B"  # in the bundled architectures table
FORGED_RATE = 4.0
FORGE = 300  # each request says it made 300 times the tokens it streamed (5,000 times would
# be a stream faster than any GPU decodes: refused at import, tests/test_consistency.py)


def forged(rate: float, seed: int) -> dict:
    result = make_result(requests=60, rate=rate, seed=seed, model=MODEL)
    if rate == FORGED_RATE:
        result["output_lens"] = [n * FORGE for n in result["output_lens"]]
        result["total_output_tokens"] *= FORGE
        result["output_throughput"] *= FORGE
        result["total_token_throughput"] = (
            result["total_input_tokens"] + result["total_output_tokens"]
        ) / result["duration"]
    return result


@pytest.fixture
def points(warehouse, tmp_path: Path):
    folder = tmp_path / "results"
    folder.mkdir()
    for seed, rate in enumerate((1.0, 2.0, FORGED_RATE)):
        (folder / f"rate-{rate:g}.json").write_text(json.dumps(forged(rate, seed)))
    outcomes = list(ingest_paths(warehouse, [folder], ImportOptions(gpu="RTX 4090", gpu_count=1)))
    assert all(o.status == FileStatus.IMPORTED for o in outcomes), outcomes
    return benchmark_points(warehouse)


def test_the_forged_level_imports_judged_stable_by_its_timings_alone(points):
    # what the warehouse's judgement sees: it kept up (the timings are real, the tokens are not)
    forged_row = points[points["offered_rate_rps"] == FORGED_RATE].iloc[0]
    assert bool(forged_row["stable"]) is True
    assert forged_row["output_throughput_tps"] > 6_000


def test_the_planners_curve_calls_a_level_over_the_decode_bound_cannot_tell(warehouse, points):
    flagged = with_envelope_flags(points, gpu_catalog(warehouse))
    reason = flagged.loc[flagged["offered_rate_rps"] == FORGED_RATE, ENVELOPE_FLAG].iloc[0]
    assert "decode-bandwidth bound" in reason
    curve = fit_curve(flagged)
    by_rate = {level.offered_rps: level for level in curve.levels}
    level = by_rate[FORGED_RATE]
    assert level.stable is None and level.sustained_rps is None
    assert "cannot tell: over a physical bound" in level.load_reason
    assert "decode-bandwidth bound" in level.load_reason
    assert curve.stable_rates == [1.0, 2.0]
    # without the flags (the planner as it was), the forged level was a stable one
    assert FORGED_RATE in fit_curve(points).stable_rates


def test_fleetplan_capacity_never_rests_on_the_forged_level(warehouse, points):
    query = CapacityQuery(model=MODEL, gpu="RTX 4090", gpu_count=1)
    report = capacity_report(points, query, gpu_catalog(warehouse))
    (level,) = [lv for lv in report.levels if lv.offered_rps == FORGED_RATE]
    assert level.kept_up == "cannot tell" and not level.in_curve
    assert "decode-bandwidth bound" in level.reason
    assert report.measured_rule_rps < 3.0  # the 1 and 2 req/s levels: never the forged one
    assert report.rps_high < FORGED_RATE * 0.99


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@pytest.mark.parametrize("rule", ["model", "measured"])
def test_a_plan_never_counts_the_forged_level(warehouse, points, rule):
    raw = scenario(
        [{"name": "chat", "rate_rps": 3.5}],
        [gpu("rtx-4090", 0.5)],
        model=MODEL,
        capacity_rule=rule,
    )
    result = plan_from_warehouse(warehouse, Scenario.model_validate(raw), pareto_points=0)
    (pool,) = result.recommended.pools
    # the forged level would carry 3.5 req/s on one server; the real ones need two
    assert pool.full_capacity_rps_per_server < 3.0
    assert pool.servers >= 2
