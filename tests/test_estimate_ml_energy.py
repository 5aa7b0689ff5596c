"""The estimate against the ML.ENERGY summaries (benchmarks/estimate_ml_energy.py): what the
check reads of them and the shapes it states, and the KV cache against a batch vLLM ran."""

from __future__ import annotations

import pytest

from benchmarks.estimate_ml_energy import SHAPES, levels, output_moments
from fleetplan.planner.capacity.architecture import architecture_from_config, estimated_parameters
from fleetplan.services.envelope import bundled_architectures
from fleetplan.services.estimate import ENGINE, calibrations


def test_output_moments_weigh_long_outputs_by_the_steps_they_decode():
    # half the outputs 100 tokens, half 300: E[o] = 200; a step meets a 300-token output three
    # times as often as a 100-token one, so E[o^2] / E[o] = (100^2 + 300^2) / 2 / 200 = 250
    mean, weighted = output_moments({"bins": [50, 150, 250, 350], "counts": [5, 0, 5]})
    assert mean == pytest.approx(200) and weighted == pytest.approx(250)


@pytest.mark.parametrize(
    ("name", "parameters"),
    [("Qwen__Qwen3-8B__gpqa.json", 8.19e9), ("Qwen__Qwen3-14B__lm-arena-chat.json", 14.77e9)],
)
def test_the_shapes_stated_are_the_models_sizes(name, parameters):
    """The config.json figures the check states give the models' published sizes."""
    arch = architecture_from_config(name, SHAPES[name], source="test")
    assert estimated_parameters(SHAPES[name]) == pytest.approx(parameters, rel=0.005)
    assert arch.weight_bytes == pytest.approx(2 * parameters, rel=0.005)  # bfloat16


@pytest.fixture(scope="module")
def h100_pcie_fit(sample_tables):
    return calibrations(sample_tables.points, bundled_architectures())[("h100-pcie", ENGINE)]


def test_every_h100_and_b200_level_is_estimated_with_its_kind(tool_outputs, h100_pcie_fit):
    frame = levels(tool_outputs, h100_pcie_fit)
    kinds = frame.groupby("gpu")["kind"].unique().to_dict()
    assert list(kinds["h100-sxm"]) == ["same architecture"]
    assert list(kinds["b200"]) == ["other architecture"]
    assert (frame["gpu"] == "h100-sxm").sum() == 13 and (frame["gpu"] == "b200").sum() == 14
    estimated = frame[["itl_est", "itl_est_half", "itl_est_double", "tokens_est"]].to_numpy()
    assert (estimated > 0).all()
    # a longer prompt: more KV to read a step, a longer step (where it is not the overhead's)
    assert (frame["itl_est_double"] >= frame["itl_est_half"]).all()
    assert (frame["itl_est_double"] > frame["itl_est_half"]).mean() > 0.9


def test_the_kv_cache_explains_the_batch_vllm_ran_when_the_cache_bounded_it(
    tool_outputs, h100_pcie_fit
):
    """Qwen3-8B on the H100 with max_num_seqs 96 ran an average batch of 82, not 96: outputs of
    about 8,000 tokens filled the cache. The estimated cache holds about that many of them."""
    frame = levels(tool_outputs, h100_pcie_fit)
    bound = frame[(frame["gpu"] == "h100-sxm") & (frame["batch"] < 0.9 * frame["max_num_seqs"])]
    assert len(bound) == 1
    (row,) = bound.to_dict("records")
    assert row["model"] == "Qwen/Qwen3-8B" and row["max_num_seqs"] == 96
    assert row["kv_batch"] == pytest.approx(row["batch"], rel=0.2)
    # every other H100 level ran the batch it was allowed, and the cache had room for it
    free = frame[(frame["gpu"] == "h100-sxm") & (frame["batch"] >= 0.9 * frame["max_num_seqs"])]
    assert len(free) == 12 and (free["kv_batch"] >= 0.9 * free["batch"]).all()
