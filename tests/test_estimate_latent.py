"""Multi-head latent attention (DeepSeek-V3/R1, Kimi K2; `planner/capacity/latent_attention.py`):
its KV cache is one latent a layer, shared by the heads and replicated over tensor parallelism;
its attention's low-rank weights are counted; DeepSeek-V3's config.json comes to its model
card's 671 billion parameters, 37 billion a token, and is estimated on 8 H200s."""

from __future__ import annotations

import json

import pytest

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.architecture import (
    architecture_from_config,
    estimated_parameters,
    tensor_parallel_problem,
)
from fleetplan.planner.capacity.config_keys import context_length
from fleetplan.planner.estimate.serving import Server, Shape
from fleetplan.services.estimate import bundled_specs

# deepseek-ai/DeepSeek-V3's config.json (the keys fleetplan reads, as the Hub gives them)
DEEPSEEK_V3 = {
    "model_type": "deepseek_v3",
    "first_k_dense_replace": 3,
    "hidden_size": 7168,
    "intermediate_size": 18432,
    "kv_lora_rank": 512,
    "max_position_embeddings": 163840,
    "moe_intermediate_size": 2048,
    "moe_layer_freq": 1,
    "n_routed_experts": 256,
    "n_shared_experts": 1,
    "num_attention_heads": 128,
    "num_experts_per_tok": 8,
    "num_hidden_layers": 61,
    "num_key_value_heads": 128,
    "q_lora_rank": 1536,
    "qk_nope_head_dim": 128,
    "qk_rope_head_dim": 64,
    "quantization_config": {
        "activation_scheme": "dynamic",
        "fmt": "e4m3",
        "quant_method": "fp8",
        "weight_block_size": [128, 128],
    },
    "rope_scaling": {
        "beta_fast": 32,
        "beta_slow": 1,
        "factor": 40,
        "mscale": 1.0,
        "mscale_all_dim": 1.0,
        "original_max_position_embeddings": 4096,
        "type": "yarn",
    },
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "v_head_dim": 128,
    "vocab_size": 129280,
}


def arch(config: dict):
    return architecture_from_config("deepseek-ai/DeepSeek-V3", config, source="test")


def test_deepseek_v3_counts_its_model_cards_parameters():
    found = arch(DEEPSEEK_V3)
    assert estimated_parameters(DEEPSEEK_V3) == pytest.approx(671e9, rel=0.005)
    # FP8 weights and activations: a token's 37B active parameters at half the 16-bit cost
    assert 2 * found.compute_parameters == pytest.approx(37e9, rel=0.02)
    assert found.routed and (found.experts, found.experts_per_token) == (256, 8)
    # FP8 linear layers, 16-bit embeddings: about a byte a parameter
    assert found.weight_bytes == pytest.approx(671e9 + 2 * 129280 * 7168, rel=0.005)


def test_its_cache_is_one_latent_a_layer_replicated_over_the_gpus():
    found = arch(DEEPSEEK_V3)
    assert found.latent_kv == 512 + 64 and found.kv_heads == 1
    assert found.kv_bytes_per_token == 61 * 576 * 2  # 70 KB a token; 128 heads would be 4 MB
    assert tensor_parallel_problem(found, 8) is None  # 128 heads split, the latent replicated
    assert "does not divide" in tensor_parallel_problem(found, 3)
    # each of t GPUs reads the whole latent cache of its batch (replicated), 1 / t of the weights
    shape = Shape.of(found, 7168)
    h200 = bundled_specs()["h200"]
    moved_8 = Server(shape, h200, 8).terms(64, 64_000, 0, 0)[0] * h200.bandwidth
    cache = 64_000 * found.kv_bytes_per_token
    assert moved_8 == pytest.approx(found.read_bytes(64) / 8 + cache)


def test_yarn_lengths_are_derived_as_vllm_derives_them():
    assert context_length(DEEPSEEK_V3) == 4096 * 40  # not 163,840 x 40
    qwen3_yarn = {
        "max_position_embeddings": 40960,
        "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768},
    }
    assert context_length(qwen3_yarn) == 131072


@pytest.mark.parametrize("key", ["qk_rope_head_dim", "v_head_dim"])
def test_a_latent_figure_missing_is_named(key):
    config = {k: v for k, v in DEEPSEEK_V3.items() if k != key}
    with pytest.raises(InputError) as error:
        arch(config)
    assert error.value.field == key


def test_a_gqa_model_with_more_gpus_than_kv_heads_reads_one_head_a_gpu():
    from tests.test_estimate_quantized import QWEN25_7B as qwen_7b

    found = architecture_from_config("qwen", qwen_7b, source="test")
    shape, h100 = Shape.of(found, 3584), bundled_specs()["h100-sxm"]
    cache = 10_000 * found.kv_bytes_per_token
    moved = {t: Server(shape, h100, t).terms(8, 10_000, 0, 0)[0] * h100.bandwidth for t in (4, 8)}
    assert moved[4] == pytest.approx(found.weight_bytes / 4 + cache / 4)
    # TP 8 over 4 KV heads: each GPU holds (and reads) a whole head's cache, 1 / 4 of it
    assert moved[8] == pytest.approx(found.weight_bytes / 8 + cache / 4)


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_deepseek_v3_is_estimated_on_eight_h200s(cli, sample_warehouse_path, tmp_path):
    from tests.support.estimates import estimate_capacity

    def on(count: int, json_out: bool = True):
        return estimate_capacity(
            cli, sample_warehouse_path, tmp_path, model="deepseek-ai/DeepSeek-V3",
            config=DEEPSEEK_V3, gpu="h200", count=count, lengths=(1000, 500),
            targets=(2000, 80), json_out=json_out,
        )  # fmt: skip

    done = on(8)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["basis"] == "estimated" and report["capacity_rps"] > 0
    assert "fp8" in report["bounds"]["architecture"]
    # on 4 H200s (564 GB) its 673 GB of weights do not fit
    done = on(4, json_out=False)
    assert done.returncode != 0 and "do not fit" in done.stdout + done.stderr


def test_a_different_latent_is_no_identical_architecture():
    from dataclasses import replace

    from fleetplan.planner.estimate.shape import same_shape

    latent = arch(DEEPSEEK_V3)
    assert same_shape(latent, arch(DEEPSEEK_V3))
    assert not same_shape(latent, replace(latent, latent_kv=288))
