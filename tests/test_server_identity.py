"""A configuration is a server, not only a GPU (issue 19, item 6): engine, engine version, dtype,
tensor parallelism and a free `variant` label (from the file, `--variant` at ingest, the Upload
page) keep runs of different servers apart: stored (migration 008), never one curve, each a
candidate of the plan unless an offer names one; and capacity intervals with the end planned on
(`capacity_at`), overlaps said, and the collect command for traffic never measured."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.configuration import (
    Capacity,
    Configuration,
    server_label,
    with_servers,
)
from fleetplan.planner.capacity.intervals import overlap_notes, overlapping
from fleetplan.planner.capacity.rules import capacities
from fleetplan.planner.plan import plan
from fleetplan.planner.report.table import pool_table
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.services.plan_tables import capacities_view, fleet_view
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points
from tests.support.planner_points import gpu, level, points, scenario

CHAT = {"name": "chat", "rate_rps": 10, "ttft_p99_ms": 500}


def run_file(rate: float, variant: str | None = None, engine: str = "vllm") -> dict:
    run = {
        "tool": "test",
        "engine": engine,
        "engine_version": "0.8.5",
        "model": "acme/m",
        "dtype": "bfloat16",
        "gpu_model": "h100-pcie",
        "gpu_count": 1,
        "tensor_parallel_size": 1,
        "dataset": "sharegpt",
        "points": [
            {
                "offered_rate_rps": rate,
                "completed": 100,
                "duration_s": 100 / rate,
                "request_throughput_rps": rate,
                "ttft_p99_ms": 50.0,
            }
        ],
    }
    if variant is not None:
        run["variant"] = variant
    return {"format": "fleetplan.runs", "format_version": 1, "runs": [run]}


def _two_servers():
    """One GPU, two servers: vLLM keeps up to 8 req/s, TGI to 4 (both within the target)."""
    frame = points(
        ("h100-pcie", 1, [level(2, 2.0, ttft=40), level(4, 4.0, ttft=60), level(8, 8.0, ttft=90)]),
        ("h100-pcie", 1, [level(2, 2.0, ttft=40), level(4, 4.0, ttft=80)]),
    )
    first = frame["run_id"] == frame["run_id"].iloc[0]
    return frame.assign(
        engine=["vllm" if f else "tgi" for f in first],
        engine_version=["0.8.5" if f else "3.0" for f in first],
        dtype="bfloat16",
        tensor_parallel_size=1,
        variant=["prefix-caching" if f else None for f in first],
    )


def test_a_server_in_words_leaves_out_what_is_unknown():
    assert (
        server_label("vllm", "0.8.5", "float16", 2.0, "fp8 kv")
        == "vllm 0.8.5, float16, TP 2, fp8 kv"
    )
    assert server_label(None, None, float("nan"), None, "") == ""
    assert server_label("vllm", pd.NA, pd.NA, pd.NA, None) == "vllm"  # a table's empty cells
    assert Configuration("h100-pcie", 1, "tgi 3.0").name == "1x h100-pcie (tgi 3.0)"
    assert with_servers(_two_servers())["server"].nunique() == 2


def test_runs_of_two_servers_on_one_gpu_are_two_configurations_and_two_curves():
    frame = _two_servers()
    sc = Scenario.model_validate(scenario([CHAT], [gpu("h100-pcie", 2.0)]))
    caps = capacities(frame, sc)
    assert {c.configuration.server for c in caps} == {
        "vllm 0.8.5, bfloat16, TP 1, prefix-caching",
        "tgi 3.0, bfloat16, TP 1",
    }
    by_engine = {c.configuration.server.split()[0]: c for c in caps}
    assert by_engine["vllm"].capacity_rps == pytest.approx(8.0)
    assert by_engine["tgi"].capacity_rps == pytest.approx(4.0)
    result = plan(sc, frame, pareto_points=0, baselines=False)
    (pool,) = result.recommended.pools  # the faster server, 2 x 8 req/s for 10
    assert pool.server.startswith("vllm") and pool.servers == 2
    assert {row.server for row in result.capacities} == {c.configuration.server for c in caps}
    assert "Engine / variant" in fleet_view(result).columns
    assert set(capacities_view(result)["Engine / variant"]) == {
        c.configuration.server for c in caps
    }
    table = pool_table(result)
    assert table["server"].iloc[0] == pool.server
    assert table["capacity_at"].iloc[0] == "low"


def test_an_offer_naming_a_variant_plans_only_that_server():
    frame = _two_servers()
    named = scenario([CHAT], [gpu("h100-pcie", 2.0, variant="prefix-caching")])
    caps = capacities(frame, Scenario.model_validate(named))
    assert [c.configuration.server.split()[0] for c in caps] == ["vllm"]
    wrong = scenario([CHAT], [gpu("h100-pcie", 2.0, variant="eagle")])
    with pytest.raises(InputError, match="prefix-caching") as error:
        capacities(frame, Scenario.model_validate(wrong))
    assert error.value.field == "gpus[0].variant"


def _capacity(name: str, low: float, high: float, value: float | None = None) -> Capacity:
    return Capacity(
        traffic_class="chat",
        configuration=Configuration(name, 1),
        capacity_rps=value if value is not None else low,
        level=None,
        before_ceiling_rps=(value if value is not None else low) / 0.8,
        rps_low=low,
        rps_high=high,
    )


def test_a_capacity_is_planned_at_the_end_asked_for_and_keeps_both_ends():
    cap = _capacity("h100-pcie", 10.0, 20.0, value=17.0)  # the rule's estimate: 17 req/s
    mid, high = cap.at_end("mid"), cap.at_end("high")
    assert cap.at_end("low").capacity_rps == 10.0
    assert mid is cap and high.capacity_rps == 20.0  # "mid" is the estimate itself
    assert high.before_ceiling_rps == pytest.approx(20.0 / 0.8)
    assert (high.low, high.high) == (10.0, 20.0)
    single = Capacity("chat", Configuration("rtx-4090", 1), 12.8, None)
    assert (single.low, single.high, single.at_end("high").capacity_rps) == (12.8, 12.8, 12.8)


def test_overlapping_intervals_are_said_and_single_values_are_not_an_overlap():
    caps = [
        _capacity("h100-pcie", 10.0, 20.0),
        _capacity("rtx-4090", 15.0, 16.0),
        _capacity("l40s", 25.0, 30.0),
        _capacity("l4", 12.8, 12.8),
    ]
    found = overlapping(caps)
    assert found[0] == [1, 3] and found[1] == [0] and 2 not in found
    (note,) = overlap_notes(caps)  # one note for the class, each configuration named once
    assert "of 3 configurations overlap: 1x h100-pcie (10 to 20), 1x rtx-4090 (15 to 16), " in note
    assert "1x l4 (12.8);" in note and "l40s" not in note
    many = [_capacity(f"gpu-{k}", 10.0, 20.0) for k in range(9)]
    (note,) = overlap_notes(many)
    assert "of 9 configurations overlap" in note and note.count("(10 to 20)") == 6
    assert "and 3 more;" in note
    assert overlapping([_capacity("a", 5, 5), _capacity("b", 5, 5)]) == {}


def test_the_capacity_end_is_a_scenario_field_and_a_plan_option(
    cli, tmp_path, sample_warehouse_path
):
    with pytest.raises(Exception, match="capacity_at"):
        Scenario.model_validate(scenario([CHAT], [gpu("h100-pcie", 2.0)], capacity_at="top"))
    sc = scenario(
        [{"name": "chat", "rate_rps": 5, "ttft_p99_ms": 2000}],
        [gpu("h100-pcie", 2.0)],
        model="DeepSeek-R1-Distill-Qwen-14B",
    )
    path = tmp_path / "s.json"
    path.write_text(json.dumps(sc))
    out = tmp_path / "plan.json"
    done = cli(
        "plan", "--warehouse", sample_warehouse_path, "--scenario", str(path),
        "--capacity-at", "mid", "--json", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "planned on each capacity's mid end" in done.stdout
    written = json.loads(out.read_text())
    assert written["capacity_at"] == "mid"
    (pool,) = written["recommended"]["pools"]
    low, high = pool["capacity_low_rps_per_server"], pool["capacity_high_rps_per_server"]
    assert low < pool["capacity_rps_per_server"] <= high  # the curve's estimate, above the low end
    assert pool["server"] == "vllm 0.8.5, float16, TP 1"


def test_a_class_never_measured_gets_the_exact_collect_command(
    cli, tmp_path, sample_warehouse_path
):
    sc = scenario(
        [{"name": "rag", "rate_rps": 5, "ttft_p99_ms": 800, "input_len": 2048, "output_len": 256}],
        [gpu("h100-pcie", 2.0)],
        model="DeepSeek-R1-Distill-Qwen-14B",
    )
    path = tmp_path / "s.json"
    path.write_text(json.dumps(sc))
    done = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", str(path))
    assert done.returncode == 2  # nothing to plan it on
    command = (
        "fleetplan collect --backend vllm --model deepseek-ai/DeepSeek-R1-Distill-Qwen-14B "
        "--gpu h100-pcie --gpu-count 1 --tensor-parallel-size 1 --input-len 2048 "
        "--output-len 256 --find-capacity --ttft-p99 800 --out runs/ --ingest"
    )
    assert command in done.stdout


def test_ingest_stores_the_variant_a_file_lacks_and_refuses_another(cli, tmp_path, warehouse_path):
    plain, labelled = tmp_path / "plain.json", tmp_path / "labelled.json"
    plain.write_text(json.dumps(run_file(4.0)))
    labelled.write_text(json.dumps(run_file(8.0, variant="eagle")))
    done = cli("ingest", "--warehouse", warehouse_path, str(plain), "--variant", "prefix-caching")
    assert done.returncode == 0, done.stderr
    refused = cli(
        "ingest", "--warehouse", warehouse_path, str(labelled), "--variant", "prefix-caching"
    )
    assert refused.returncode == 1 and "--variant" in refused.stdout + refused.stderr
    assert cli("ingest", "--warehouse", warehouse_path, str(labelled)).returncode == 0
    with Warehouse.open(warehouse_path, read_only=True) as warehouse:
        stored = benchmark_points(warehouse)
    assert sorted(stored["variant"]) == ["eagle", "prefix-caching"]
    assert with_servers(stored)["server"].nunique() == 2


def test_the_benchmarks_curves_draw_each_server_of_one_gpu_apart():
    from fleetplan.services.capacity import LatencyTargets
    from fleetplan.services.load_tables import benchmark_curves

    frame = _two_servers().assign(stable=True, load_basis=None, sustained_rps=None)
    curves = benchmark_curves(frame, targets=LatencyTargets(ttft_p99_ms=500))
    assert sorted(c.configuration for c in curves) == [
        "1x h100-pcie (tgi 3.0, bfloat16, TP 1)",
        "1x h100-pcie (vllm 0.8.5, bfloat16, TP 1, prefix-caching)",
    ]
    one = benchmark_curves(frame[frame["engine"] == "tgi"], targets=LatencyTargets(ttft_p99_ms=500))
    assert [c.configuration for c in one] == ["1x h100-pcie"]  # one server: the GPUs say it


def test_the_fleet_in_words_says_where_capacity_intervals_overlap():
    from fleetplan.planner.report.explain import explain

    frame = _two_servers()
    sc = Scenario.model_validate(scenario([CHAT], [gpu("h100-pcie", 2.0)]))
    result = plan(sc, frame, pareto_points=0, baselines=False)
    assert not any("overlap" in line for line in explain(result, sc))
    rows = result.capacities
    names = [f"{r.configuration} ({r.server})" for r in rows]
    overlapped = [row.model_copy(update={"overlaps": [names[1 - i]]}) for i, row in enumerate(rows)]
    said = " ".join(explain(result.model_copy(update={"capacities": overlapped}), sc))
    assert "Capacity intervals overlap" in said and "does not say which" in said
