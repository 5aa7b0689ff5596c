"""A mixture of experts (Mixtral, Qwen-MoE, OLMoE, gpt-oss shapes) is sized as one: all its
experts in memory, the experts a step's tokens are routed to read from it, a token's k experts
computed with (`Architecture.read_bytes`, `planner/estimate/serving.py`); estimated by
`fleetplan capacity --estimate`, labelled as such, with the band its own validation measured."""

from __future__ import annotations

import json

import pytest

from fleetplan.planner.capacity.architecture import (
    architecture_from_config,
    estimated_parameters,
    expert_parameters,
)
from fleetplan.planner.capacity.envelope import Hardware, level_flags, server_envelope
from fleetplan.planner.estimate.serving import Efficiencies, Server, Shape, kv_cache_tokens
from fleetplan.planner.estimate.shape import same_shape
from fleetplan.services.envelope import bundled_architectures
from fleetplan.services.estimate import bundled_specs

# The config.json figures of public mixtures of experts (their model cards' parameter counts:
# total, active)
MIXTRAL = {
    "model_type": "mixtral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
QWEN3_30B_A3B = {
    "model_type": "qwen3_moe",
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "moe_intermediate_size": 768,
    "num_hidden_layers": 48,
    "num_attention_heads": 32,
    "num_key_value_heads": 4,
    "head_dim": 128,
    "vocab_size": 151936,
    "num_experts": 128,
    "num_experts_per_tok": 8,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "max_position_embeddings": 40960,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
QWEN15_MOE = {
    "model_type": "qwen2_moe",
    "hidden_size": 2048,
    "intermediate_size": 5632,
    "moe_intermediate_size": 1408,
    "shared_expert_intermediate_size": 5632,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "vocab_size": 151936,
    "num_experts": 60,
    "num_experts_per_tok": 4,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
OLMOE = {
    "model_type": "olmoe",
    "hidden_size": 2048,
    "intermediate_size": 1024,
    "num_hidden_layers": 16,
    "num_attention_heads": 16,
    "num_key_value_heads": 16,
    "vocab_size": 50304,
    "num_experts": 64,
    "num_experts_per_tok": 8,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
CARDS = [
    (MIXTRAL, 46.7e9, 12.9e9),
    (QWEN3_30B_A3B, 30.5e9, 3.3e9),
    (QWEN15_MOE, 14.3e9, 2.7e9),
    (OLMOE, 6.9e9, 1.3e9),
]
EFF = Efficiencies(overhead_s=0.002, inv_bandwidth_eff=1.3, inv_compute_eff=2.0, allreduce_s=5e-5)


def arch(config: dict, **given):
    return architecture_from_config("acme/moe", config | given, source="test")


@pytest.mark.parametrize(("config", "total", "active"), CARDS)
def test_total_and_active_parameters_match_the_model_cards(config, total, active):
    found = arch(config)
    assert estimated_parameters(config) == pytest.approx(total, rel=0.02)
    assert found.weight_bytes == pytest.approx(2 * total, rel=0.02)
    assert found.active_bytes == pytest.approx(2 * active, rel=0.04)
    assert found.routed and found.experts == config.get(
        "num_local_experts", config.get("num_experts")
    )
    assert found.experts_per_token == config["num_experts_per_tok"]


def test_a_step_reads_the_experts_its_tokens_are_routed_to():
    mixtral = arch(MIXTRAL)
    assert mixtral.read_bytes(1) == pytest.approx(mixtral.active_bytes)
    reads = [mixtral.read_bytes(n) for n in (1, 2, 4, 8, 16, 64, 512)]
    assert reads == sorted(reads) and reads[0] < reads[-1] <= mixtral.weight_bytes
    assert reads[-1] == pytest.approx(mixtral.weight_bytes, rel=1e-6)  # every expert touched
    # two tokens routed independently to 2 of 8: 1 - (6/8)^2 of the experts read
    shared = mixtral.weight_bytes - mixtral.expert_bytes
    assert mixtral.read_bytes(2) == pytest.approx(shared + mixtral.expert_bytes * (1 - 0.75**2))
    assert mixtral.expert_bytes == pytest.approx(2 * expert_parameters(MIXTRAL))
    assert expert_parameters(MIXTRAL) == pytest.approx(32 * 8 * 3 * 4096 * 14336)


def test_dense_and_expert_layers_are_counted_apart():
    # DeepSeek's first layers dense (intermediate_size), one shared expert beside the routed ones
    config = QWEN3_30B_A3B | {"first_k_dense_replace": 2, "n_shared_experts": 1}
    plain = estimated_parameters(QWEN3_30B_A3B)
    hidden, moe_width, dense_width = 2048, 768, 6144
    per_layer_routed = 128 * 3 * hidden * moe_width + hidden * 128
    expected = (
        plain
        - 2 * per_layer_routed  # two layers dense instead
        + 2 * 3 * hidden * dense_width
        + 46 * 3 * hidden * moe_width  # the shared expert of the 46 expert layers
    )
    assert estimated_parameters(config) == pytest.approx(expected)
    assert expert_parameters(config) == pytest.approx(46 * 128 * 3 * hidden * moe_width)
    # Qwen-MoE's every other layer routed (decoder_sparse_step 2)
    assert expert_parameters(QWEN3_30B_A3B | {"decoder_sparse_step": 2}) == pytest.approx(
        expert_parameters(QWEN3_30B_A3B) / 2
    )
    # an intermediate_size of 0 beside the experts: no dense MLP, not an error
    zero = arch(QWEN3_30B_A3B | {"intermediate_size": 0})
    assert zero.weight_bytes == pytest.approx(arch(QWEN3_30B_A3B).weight_bytes)


def test_given_weight_bytes_keep_the_experts_share():
    # gpt-oss-20b's shape: 32 experts, 4 per token, MXFP4 experts (bytes given, as required)
    from tests.test_estimate_quantized import GPT_OSS_20B as gpt_oss

    found = arch(gpt_oss, fleetplan_weight_bytes=13.8e9)
    share = expert_parameters(gpt_oss) / estimated_parameters(gpt_oss)
    assert 0.8 < share < 1 and found.weight_bytes == 13.8e9
    assert found.expert_bytes == pytest.approx(13.8e9 * share)
    assert found.active_bytes == pytest.approx(13.8e9 * (1 - share * 28 / 32))


def test_a_mixture_of_experts_steps_faster_than_a_dense_model_of_its_size_until_all_are_read():
    specs = bundled_specs()
    moe = Shape.of(arch(MIXTRAL), 4096)
    dense = Shape.of(
        architecture_from_config(
            "acme/dense", MIXTRAL | {"num_local_experts": 1, "fleetplan_parameters": 46.7e9},
            source="test",
        ),
        4096,
    )  # fmt: skip
    server_moe, server_dense = (
        Server(moe, specs["h100-sxm"], 2),
        Server(dense, specs["h100-sxm"], 2),
    )
    one_moe, one_dense = server_moe.step_s(EFF, 1, 1000), server_dense.step_s(EFF, 1, 1000)
    assert one_moe < 0.4 * one_dense  # one token reads 2 of 8 experts
    moved_moe, flops_moe, *_ = server_moe.terms(256, 256 * 1000, 0, 0)
    moved_dense, flops_dense, *_ = server_dense.terms(256, 256 * 1000, 0, 0)
    assert moved_moe == pytest.approx(moved_dense, rel=1e-3)  # a full batch reads them all
    assert flops_moe == pytest.approx(flops_dense * 12.88 / 46.70, rel=0.01)  # k experts' work
    # memory holds every expert: the KV cache is the dense model's
    kv = kv_cache_tokens(moe, specs["h100-sxm"], 2)
    assert kv == pytest.approx(kv_cache_tokens(dense, specs["h100-sxm"], 2), rel=1e-3)


def test_the_decode_floor_is_the_active_experts_share():
    mixtral = arch(MIXTRAL)
    h100 = Hardware("h100-sxm", 80, 3350)
    bounds = server_envelope(
        mixtral, h100, gpu_count=2, tensor_parallel_size=2, input_tokens=590, output_tokens=245
    )
    assert bounds.tpot_floor_ms == pytest.approx(mixtral.active_bytes / (2 * 3350e9) * 1000)
    # a 6 ms TPOT is under a dense 46.7B model's floor (13.9 ms), not under Mixtral's (3.8 ms)
    assert bounds.tpot_floor_ms < 6 < mixtral.weight_bytes / (2 * 3350e9) * 1000
    assert not level_flags(
        bounds, request_throughput_rps=5, output_throughput_tps=1200, tpot_ms=6.0
    )


def test_a_dense_model_of_equal_weights_is_no_identical_architecture():
    mixtral = arch(MIXTRAL)
    given = {"num_local_experts": 1, "fleetplan_weight_bytes": mixtral.weight_bytes}
    dense = architecture_from_config("acme/dense", MIXTRAL | given, source="test")
    assert not same_shape(mixtral, dense) and same_shape(mixtral, arch(MIXTRAL))


def test_the_bundled_table_holds_mixtral_as_a_mixture_of_experts():
    mixtral = bundled_architectures()["mistralai/mixtral-8x7b-v0.1"]
    assert mixtral.routed and (mixtral.experts, mixtral.experts_per_token) == (8, 2)
    assert mixtral.active_bytes == pytest.approx(arch(MIXTRAL).active_bytes, rel=0.005)


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_capacity_estimates_a_new_mixture_of_experts_labelled_with_its_band(
    cli, sample_warehouse_path, tmp_path
):
    from tests.support.estimates import estimate_capacity

    def estimate(model: str, config: dict):
        done = estimate_capacity(
            cli, sample_warehouse_path, tmp_path, model=model, config=config, gpu="h100-sxm",
            count=1, lengths=(1000, 200), targets=(1000, 50),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    report = estimate("Qwen/Qwen3-30B-A3B", QWEN3_30B_A3B)
    assert report["basis"] == "estimated" and report["capacity_rps"] > 0
    assert "mixture of experts" in report["estimate"]["method"]
    assert "mixture of experts" in report["estimate"]["error"]["source"]
    # the same shape with its experts all read every step (a dense model of 30.5B) carries less
    as_dense = {"num_experts": 1, "fleetplan_parameters": 30.53e9, "moe_intermediate_size": 0}
    dense = estimate("acme/dense-30b", QWEN3_30B_A3B | as_dense)
    assert dense["saturation_rps"] < report["saturation_rps"]


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_fill_plan_estimates_mixtral_beside_its_real_h100_sxm_sweep(
    cli, sample_warehouse_path, tool_outputs, tmp_path
):
    """The real Mixtral sweep (inference-sim/training, 2x H100 SXM) imported as a user would, then
    a plan with "fill" for a class naming only its lengths: every other offer is estimated as a
    mixture of experts, labelled with the band its own validation measured."""
    sweeps = sorted((tool_outputs / "inference-sim-training-h100").glob("*mixtral*"))
    assert sweeps
    for folder in sweeps:
        done = cli(
            "ingest", folder, "--warehouse", sample_warehouse_path, "--gpu", "h100-sxm",
            "--gpu-count", "2",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
    scenario = {
        "model": "mistralai/Mixtral-8x7B-v0.1",
        "estimates": "fill",
        "classes": [
            # the codegen sweep's lengths, no dataset: its measured levels are "shared_prefix"
            {"name": "code", "rate_rps": 12, "ttft_p99_ms": 2000, "tpot_p99_ms": 80}
            | {"input_len": 566, "output_len": 247}
        ],
        "gpus": [
            {"gpu_model": gpu, "hourly_usd": usd, "site": "dc"}
            for gpu, usd in (("h100-pcie", 2.0), ("rtx-4090", 0.35), ("h100-sxm", 2.49))
        ],
        "sites": [{"name": "dc", "electricity_usd_per_kwh": 0.12, "grid_gco2_per_kwh": 350}],
    }
    path = tmp_path / "mixtral.json"
    path.write_text(json.dumps(scenario))
    out = tmp_path / "plan.json"
    done = cli("plan", "--warehouse", sample_warehouse_path, "--scenario", path, "--json", out)
    assert done.returncode == 0, done.stderr
    assert "ESTIMATED, not measured" in done.stdout
    pools = json.loads(out.read_text())["recommended"]["pools"]
    assert pools and all(p["basis"] == "estimated" for p in pools)
    for pool in pools:
        error = pool["estimate_error"]
        assert error["kind"].endswith("(mixture of experts)")
        assert "mixture of experts" in error["method"]


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_queue_form_follows_the_simulation_for_a_mixture_of_experts():
    """The queue form (plans' estimates) reads the experts a step's tokens touch as the
    simulation does. Without it its step stayed one token's read at any load: Qwen3-30B-A3B's
    saturation came out 33.3 req/s against the simulation's 17.7, its P50 TPOT at half load
    5.3 ms against 32.0."""
    from tests.support.estimates import queue_and_simulation

    queue, simulated, *_ = queue_and_simulation(arch(QWEN3_30B_A3B), 2048)
    assert queue.saturation_rps == pytest.approx(simulated.saturation_rps, rel=0.25)
    middle = len(queue.curve) // 2
    assert queue.curve[middle].tpot_p50_ms == pytest.approx(
        simulated.curve[middle].tpot_p50_ms, rel=0.35
    )


def test_figures_past_a_floats_range_or_of_another_kind_are_refused_or_left_out():
    """Found by fuzzing config.json files: each raised OverflowError or TypeError."""
    from fleetplan.core.errors import InputError
    from fleetplan.planner.capacity.config_keys import context_length
    from fleetplan.planner.capacity.experts import config_experts

    with pytest.raises(InputError) as error:  # a shared expert count past a float's range
        architecture_from_config("m", QWEN3_30B_A3B | {"n_shared_experts": 10**400}, source="t")
    assert error.value.field == "n_shared_experts"
    # a layer listed as a list is no layer index: the other dense layer is still read
    listed = config_experts(QWEN3_30B_A3B | {"mlp_only_layers": [[0], 1]})
    assert listed is not None and listed.layers == 48 - 1
    # a rope factor past a float's range scales nothing; a YaRN original past any context
    # is not read as the original length
    huge = {"type": "linear", "factor": 10**400}
    assert context_length(QWEN3_30B_A3B | {"rope_scaling": huge}) == 40960
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 10**400}
    assert context_length(QWEN3_30B_A3B | {"rope_scaling": yarn}) == 4 * 40960
