"""Plans with `"estimates": "fill"` (fleetplan/services/fill.py): every offered GPU a model was
not measured on is planned with estimated levels (or an identical architecture's measured ones),
each such pool labelled with its basis and error band; "off" plans only what was measured."""

from __future__ import annotations

import csv
import json

import pytest

from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.services.fill import with_estimates
from fleetplan.services.planning import plan_from_tables

OFFERS = (("rtx-4090", 0.25), ("h100-pcie", 2.0), ("h100-sxm", 2.49))


def scenario(model: str, estimates: str = "fill", **cls) -> Scenario:
    traffic = {"name": "chat", "rate_rps": 8.0, "ttft_p99_ms": 2000, "tpot_p99_ms": 150} | cls
    return Scenario.model_validate(
        {
            "model": model,
            "estimates": estimates,
            "classes": [traffic],
            "gpus": [{"gpu_model": g, "hourly_usd": h, "site": "dc"} for g, h in OFFERS],
            "sites": [{"name": "dc", "electricity_usd_per_kwh": 0.12, "grid_gco2_per_kwh": 350}],
        }
    )


def gpu_of(configuration: str) -> str:
    return configuration.split("x ", 1)[1].split(" ", 1)[0]


@pytest.mark.slow  # 13 fill plans: seconds
def test_fill_compares_4090_and_h100_for_every_bundled_model(sample_tables):
    models = sorted(sample_tables.points["model"].unique())
    assert len(models) == 13
    for model in models:
        plan = plan_from_tables(
            scenario(model), sample_tables.points, sample_tables.catalog, pareto_points=0
        )
        usable = {
            gpu_of(row.configuration) for row in plan.capacities if row.capacity_rps_per_server > 0
        }
        assert {"rtx-4090", "h100-pcie", "h100-sxm"} <= usable, (model, usable)
        assert plan.status.value == "optimal", model
        for pool in plan.recommended.pools:
            if pool.level_source_file.startswith("fleetplan estimate"):
                assert pool.basis == "estimated"
                band = pool.estimate_error
                assert band["kind"] and len(band["saturation"]) == 2 and band["borrowed"]
            elif pool.level_source_file.startswith("identical architecture"):
                assert pool.basis == "identical architecture"
            else:
                assert pool.basis == "measured"


def test_off_plans_only_what_was_measured_and_reads_as_before(sample_tables):
    model = "microsoft/phi-4"  # measured on one H100 PCIe only
    off = plan_from_tables(
        scenario(model, "off"), sample_tables.points, sample_tables.catalog, pareto_points=0
    )
    assert {gpu_of(r.configuration) for r in off.capacities} == {"h100-pcie"}
    assert all(p.basis == "measured" for p in off.recommended.pools)
    dumped = json.loads(off.model_dump_json())
    assert all(
        "basis" not in p and "estimate_error" not in p for p in dumped["recommended"]["pools"]
    )
    points = sample_tables.points
    assert with_estimates(points, scenario(model, "off")) is points
    assert "estimates" not in scenario(model, "off").model_dump()  # quiet when off


def test_an_estimated_pool_carries_its_band_and_plans_on_its_low_end(sample_tables):
    model = "microsoft/phi-4"
    plan = plan_from_tables(
        scenario(model), sample_tables.points, sample_tables.catalog, pareto_points=0
    )
    estimated = [
        p
        for fleet in (plan.recommended, *plan.baselines)
        for p in fleet.pools
        if p.basis == "estimated"
    ]
    assert estimated
    for pool in estimated:
        low, high = pool.capacity_low_rps_per_server, pool.capacity_high_rps_per_server
        assert low < high and pool.capacity_rps_per_server == pytest.approx(low)
        sat_low, sat_high = pool.estimate_error["saturation"]
        # the interval is the band around the estimate: high / low = (1 + hi) / (1 + lo)
        assert high / low == pytest.approx((1 + sat_high) / (1 + sat_low), rel=1e-6)
        dumped = json.loads(pool.model_dump_json())
        assert dumped["basis"] == "estimated" and dumped["estimate_error"]["kind"]
    # the page's table of the level behind each pool says an estimated one was simulated
    from fleetplan.services.plan_tables import levels_view

    table = levels_view(plan)
    assert len(table) == len(plan.recommended.pools)
    for pool, level in zip(plan.recommended.pools, table["Measured level"], strict=True):
        assert level.startswith("simulated, not measured") == (pool.basis == "estimated")


def test_a_model_of_identical_architecture_borrows_its_measured_levels(sample_tables):
    # AceMath-7B (Qwen2.5-Math-7B's shape) was measured on H100 only; DeepSeek-R1-Distill-Qwen-7B
    # has the same shape and was measured on one RTX 4090
    filled = with_estimates(sample_tables.points, scenario("nvidia/AceMath-7B-Instruct"))
    lent = filled[
        (filled["model"] == "nvidia/AceMath-7B-Instruct")
        & (filled["gpu_model"] == "rtx-4090")
        & (filled["gpu_count"] == 1)
    ]
    assert not lent.empty
    assert (
        lent["source_file"]
        .str.startswith("identical architecture (deepseek-ai/DeepSeek-R1-Distill-Qwen-7B)")
        .all()
    )
    donor = sample_tables.points[
        (sample_tables.points["model"] == "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B")
        & (sample_tables.points["gpu_model"] == "rtx-4090")
        & (sample_tables.points["gpu_count"] == 1)
    ]
    assert sorted(lent["ttft_p99_ms"]) == sorted(donor["ttft_p99_ms"])
    # measured configurations are never estimated
    measured = sample_tables.points[sample_tables.points["model"] == "nvidia/AceMath-7B-Instruct"]
    again = filled[
        (filled["model"] == "nvidia/AceMath-7B-Instruct")
        & (filled["gpu_model"] == "h100-pcie")
        & (filled["gpu_count"] == 1)
    ]
    assert len(again) == len(measured)


def test_a_weight_too_large_for_one_gpu_is_estimated_on_the_fewest_that_hold_it(sample_tables):
    filled = with_estimates(sample_tables.points, scenario("meta-llama/Meta-Llama-3-70B-Instruct"))
    sxm = filled[(filled["gpu_model"] == "h100-sxm")]
    assert set(sxm["gpu_count"]) == {2}  # 141 GB of weights: two 80 GB GPUs, not one
    assert (sxm["variant"] == "estimated").all() and (sxm["stable"].iloc[:-1]).all()


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_plan_command_says_which_pools_rest_on_estimates(cli, sample_warehouse_path, tmp_path):
    path = tmp_path / "s.json"
    path.write_text(scenario("microsoft/phi-4", "off").model_dump_json())
    done = cli(
        "plan",
        "--warehouse",
        sample_warehouse_path,
        "--scenario",
        path,
        "--estimates",
        "fill",
        "--csv",
        tmp_path / "pools.csv",
    )
    assert done.returncode == 0, done.stderr
    assert "ESTIMATED, not measured: error band" in done.stdout
    assert "rest on estimates, not on runs of their own configuration" in done.stdout
    rows = list(csv.DictReader((tmp_path / "pools.csv").open()))
    assert {"estimated"} <= {row["basis"] for row in rows}
    assert all(
        row["estimate_error"].startswith("error band")
        for row in rows
        if row["basis"] == "estimated"
    )
    plain = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", path)
    assert plain.returncode == 0 and "ESTIMATED" not in plain.stdout


def test_a_choice_an_estimate_could_flip_prints_the_command_that_settles_it(sample_tables):
    plan = plan_from_tables(
        scenario("microsoft/phi-4", ttft_p99_ms=500, tpot_p99_ms=60, rate_rps=20.0),
        sample_tables.points,
        sample_tables.catalog,
        pareto_points=0,
    )
    notes = [n for n in plan.notes if "could flip it" in n]
    assert len(notes) == 1, plan.notes
    note = notes[0]
    assert note.startswith("class 'chat': the choice of ")
    assert "fleetplan collect --backend vllm --model microsoft/phi-4" in note
    assert "--find-capacity --ttft-p99 500 --tpot-p99 60" in note
    # a sharegpt class has no fixed lengths: the estimate's mean lengths stand in
    assert "--input-len 207 --output-len 205" in note
    measured_only = plan_from_tables(
        scenario("microsoft/phi-4", "off", ttft_p99_ms=500, tpot_p99_ms=60, rate_rps=20.0),
        sample_tables.points,
        sample_tables.catalog,
        pareto_points=0,
    )
    assert not [n for n in measured_only.notes if "could flip it" in n]


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_day_scenario_plans_with_estimates_too(cli, sample_warehouse_path, tmp_path):
    from tests.support.paths import ROOT

    # the example's day, with H100 SXM servers on demand too: a GPU nobody measured (its
    # estimate carries the day's busy hours beside the measured H100 PCIe reserved)
    day = json.loads((ROOT / "examples" / "day-chat-nightly.json").read_text())
    day["gpus"].append(
        {"gpu_model": "h100-sxm", "hourly_usd": 4.00, "site": "dc", "commitment": "on_demand"}
    )
    (tmp_path / "day.json").write_text(json.dumps(day))
    done = cli(
        "plan", "--warehouse", sample_warehouse_path, "--scenario",
        tmp_path / "day.json", "--estimates", "fill",
        "--schedule-csv", tmp_path / "schedule.csv", "--json", tmp_path / "plan.json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "ESTIMATED, not measured" in done.stdout and "Day: $" in done.stdout
    # the day's schedule says which of its servers rest on estimates
    rows = list(csv.DictReader((tmp_path / "schedule.csv").open()))
    assert {"measured", "estimated"} <= {row["basis"] for row in rows}
    day = json.loads((tmp_path / "plan.json").read_text())["day"]
    pools = [p for hour in day["schedule"] for p in hour["pools"]]
    assert any(p.get("basis") == "estimated" for p in pools)
    assert all(p.get("basis", "measured") in ("measured", "estimated") for p in pools)
    plain = cli(
        "plan", "--warehouse", sample_warehouse_path, "--scenario",
        ROOT / "examples" / "day-chat-nightly.json",
    )  # fmt: skip
    assert plain.returncode == 0 and "ESTIMATED" not in plain.stdout


# A model nobody measured, planned from its config.json (the scenario's model_configs)
QWEN3_32B = {
    "model_type": "qwen3",
    "hidden_size": 5120,
    "intermediate_size": 25600,
    "num_hidden_layers": 64,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}


def new_model_scenario(tmp_path, **extra):
    path = tmp_path / f"new-{len(list(tmp_path.glob('new-*.json')))}.json"
    data = {
        "model": "Qwen/Qwen3-32B",
        "estimates": "fill",
        "classes": [
            {"name": "chat", "rate_rps": 4, "ttft_p99_ms": 3000, "tpot_p99_ms": 150}
            | {"input_len": 1000, "output_len": 200}
        ],
        "gpus": [{"gpu_model": g, "hourly_usd": h, "site": "dc"} for g, h in OFFERS],
        "sites": [{"name": "dc", "electricity_usd_per_kwh": 0.12, "grid_gco2_per_kwh": 350}],
    } | extra
    path.write_text(json.dumps(data))
    return path


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_model_nobody_measured_is_planned_from_its_config_json(
    cli, sample_warehouse_path, tmp_path
):
    """The issue's dead end: `plan` with Qwen/Qwen3-32B exited 1 ("no benchmark results")."""
    plain = new_model_scenario(tmp_path)
    refused = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", plain)
    assert refused.returncode == 1 and "no benchmark results for model" in refused.stderr
    assert "model_configs" in refused.stderr and "--model-config" in refused.stderr
    # in the scenario
    out = tmp_path / "plan.json"
    path = new_model_scenario(tmp_path, model_configs={"Qwen/Qwen3-32B": QWEN3_32B})
    done = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", path, "--json", out)
    assert done.returncode == 0, done.stderr
    pools = json.loads(out.read_text())["recommended"]["pools"]
    assert pools and all(p["basis"] == "estimated" for p in pools)
    assert {p["gpu_model"] for p in pools} <= {g for g, _ in OFFERS}
    # or on the command line, beside a scenario that names none
    config = tmp_path / "config.json"
    config.write_text(json.dumps(QWEN3_32B))
    again = tmp_path / "again.json"
    done = cli(
        "plan", "--warehouse", sample_warehouse_path, "--scenario", plain, "--model-config",
        config, "--json", again,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        json.loads(again.read_text())["recommended"] == json.loads(out.read_text())["recommended"]
    )


def test_a_config_it_cannot_read_is_refused_naming_the_model_and_key(
    cli, sample_warehouse_path, tmp_path
):
    broken = QWEN3_32B | {"num_key_value_heads": 7}
    path = new_model_scenario(tmp_path, model_configs={"Qwen/Qwen3-32B": broken})
    done = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", path)
    assert done.returncode == 1
    assert "model_configs.Qwen/Qwen3-32B.num_key_value_heads" in done.stderr
    assert "must divide the 64 attention heads" in done.stderr


def test_a_scenario_carries_at_most_fifty_model_configs():
    from pydantic import ValidationError

    base = scenario("microsoft/phi-4").model_dump(mode="json")
    configs = {f"acme/m{i}": QWEN3_32B for i in range(51)}
    with pytest.raises(ValidationError):
        Scenario.model_validate(base | {"model_configs": configs})
    assert Scenario.model_validate(base | {"model_configs": dict(list(configs.items())[:50])})


def test_a_config_json_uploaded_for_a_model_makes_the_scenario_plan_it_on_estimates():
    """`services.planning.with_model_config`: what the Plan page's "A model nobody measured"
    does with an id and a config.json's bytes."""
    from fleetplan.core.errors import InputError
    from fleetplan.planner import Scenario
    from fleetplan.services.planning import with_model_config

    base = Scenario.model_validate(
        {"name": "chat on old", "model": "acme/old"}
        | {"model_configs": {"qwen/qwen3-32b": {"stale": 1}}}
        | {"classes": [{"name": "chat", "rate_rps": 1}]}
        | {"gpus": [{"gpu_model": "h100-sxm", "hourly_usd": 2.5, "site": "dc"}]}
        | {"sites": [{"name": "dc", "electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 300}]}
    )
    added = with_model_config(base, " Qwen/Qwen3-32B ", json.dumps(QWEN3_32B).encode(), name="c")
    assert added.model == "Qwen/Qwen3-32B" and added.estimates == "fill"
    assert added.name == "chat on Qwen3-32B"  # a name "... on <model>" follows the model
    assert added.model_configs == {"Qwen/Qwen3-32B": QWEN3_32B}  # over the earlier one's
    refusals = {
        b"[]": "a model config.json is a JSON object",
        b'{"a": 1, "a": 2}': "given twice",
        json.dumps(QWEN3_32B | {"num_attention_heads": 0}).encode(): "num_attention_heads",
    }
    for content, said in refusals.items():
        with pytest.raises(InputError) as error:
            with_model_config(base, "Qwen/Qwen3-32B", content, name="config.json")
        assert said in str(error.value) and error.value.file == "config.json"
    with pytest.raises(InputError) as error:
        with_model_config(base, "  ", json.dumps(QWEN3_32B).encode(), name="config.json")
    assert error.value.field == "model"
