"""Hybrid and recurrent models (planner/capacity/recurrent.py): layers that keep a state per
sequence beside attention layers (Qwen3-Next's Gated DeltaNet, Nemotron-H's Mamba 2, MiniMax's
lightning attention, Jamba's Mamba) or instead of them (Falcon Mamba), sized from the keys of
their published config.json files: parameters against the model cards, the state's bytes as
vLLM sizes it, the cache and a step holding and reading it, the estimate labelled."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.architecture import architecture_from_config, estimated_parameters
from fleetplan.planner.capacity.envelope import Hardware, server_envelope
from fleetplan.planner.estimate.serving import (
    Server,
    Shape,
    engine_state_units,
    kv_cache_tokens,
)
from fleetplan.services.estimate import bundled_specs

MIB = 2**20

# Qwen3-Next-80B-A3B's shape (card: 80B total, 3B activated; 3 Gated DeltaNet layers to 1 of
# gated attention)
QWEN3_NEXT = {
    "model_type": "qwen3_next", "hidden_size": 2048, "num_hidden_layers": 48,
    "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256,
    "intermediate_size": 5120, "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512, "num_experts": 512, "num_experts_per_tok": 10,
    "decoder_sparse_step": 1, "mlp_only_layers": [], "full_attention_interval": 4,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 32, "vocab_size": 151936,
    "tie_word_embeddings": False, "max_position_embeddings": 262144, "torch_dtype": "bfloat16",
}  # fmt: skip
# Qwen3.5-27B's language model (card: 27B): its layer_types, its state in float32
QWEN35_27B = {
    "model_type": "qwen3_5_text", "hidden_size": 5120, "num_hidden_layers": 64,
    "num_attention_heads": 24, "num_key_value_heads": 4, "head_dim": 256,
    "intermediate_size": 17408, "attn_output_gate": True,
    "layer_types": (["linear_attention"] * 3 + ["full_attention"]) * 16,
    "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
    "linear_num_key_heads": 16, "linear_num_value_heads": 48, "vocab_size": 248320,
    "tie_word_embeddings": False, "mamba_ssm_dtype": "float32", "dtype": "bfloat16",
}  # fmt: skip
# Nemotron-H-56B's blocks (card: 56B): Mamba 2 (M), attention (*), squared-ReLU MLPs (-)
NEMOTRON_H_56B = {
    "model_type": "nemotron_h", "hidden_size": 8192, "num_hidden_layers": 118,
    "hybrid_override_pattern": ("M-M-M-M*-" + "M-M-M-M-M*-" * 9 + "M-M-M-M-M-")[:118],
    "num_attention_heads": 64, "num_key_value_heads": 8, "attention_head_dim": 128,
    "intermediate_size": 32768, "mamba_num_heads": 256, "mamba_head_dim": 64, "n_groups": 8,
    "ssm_state_size": 256, "conv_kernel": 4, "expand": 2, "vocab_size": 131072,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
# NVIDIA-Nemotron-3-Nano-30B-A3B (card: 31.6B total, 3.2B active, 3.6B with embeddings):
# Mamba 2, attention and expert blocks (E), its SSM state cached in float32
NEMOTRON_3_NANO = {
    "model_type": "nemotron_h", "hidden_size": 2688, "num_hidden_layers": 52,
    "hybrid_override_pattern": "MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
    "num_attention_heads": 32, "num_key_value_heads": 2, "head_dim": 128,
    "intermediate_size": 1856, "moe_intermediate_size": 1856,
    "moe_shared_expert_intermediate_size": 3712, "n_routed_experts": 128, "n_shared_experts": 1,
    "num_experts_per_tok": 6, "mamba_num_heads": 64, "mamba_head_dim": 64, "n_groups": 8,
    "ssm_state_size": 128, "conv_kernel": 4, "mamba_ssm_cache_dtype": "float32",
    "vocab_size": 131072, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
# MiniMax-M1 (card: 456B total, 45.9B activated): 7 lightning-attention layers to 1 of softmax
MINIMAX_M1 = {
    "model_type": "minimax_m1", "hidden_size": 6144, "num_hidden_layers": 80,
    "attn_type_list": ([0] * 7 + [1]) * 10, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 9216,
    "num_local_experts": 32, "num_experts_per_tok": 2, "shared_intermediate_size": 0,
    "vocab_size": 200064, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
# Jamba-v0.1 (card: 52B total, 12B active): Mamba layers, attention 1 in 8, experts every other
JAMBA = {
    "model_type": "jamba", "hidden_size": 4096, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    "attn_layer_period": 8, "attn_layer_offset": 4, "expert_layer_period": 2,
    "expert_layer_offset": 1, "num_experts": 16, "num_experts_per_tok": 2,
    "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": 256,
    "vocab_size": 65536, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}  # fmt: skip
# Falcon-Mamba-7B (card: 7.27B): Mamba layers only, no attention
FALCON_MAMBA = {
    "model_type": "falcon_mamba", "hidden_size": 4096, "num_hidden_layers": 64,
    "intermediate_size": 8192, "state_size": 16, "conv_kernel": 4, "expand": 16,
    "time_step_rank": 256, "vocab_size": 65024, "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}  # fmt: skip


def arch(config: dict):
    return architecture_from_config("acme/m", config, source="test", kv_dtype="auto")


@pytest.mark.parametrize(
    ("config", "total", "active", "tolerance"),
    [
        (QWEN3_NEXT, 80e9, 3.9e9, 0.02),  # 3B activated without the 0.6B of embeddings
        (QWEN35_27B, 27e9, None, 0.02),
        (NEMOTRON_H_56B, 56e9, None, 0.02),
        (NEMOTRON_3_NANO, 31.6e9, 3.6e9, 0.02),
        (MINIMAX_M1, 456e9, 45.9e9 + 2.46e9, 0.02),  # 45.9B without embeddings
        (JAMBA, 52e9, 12e9, 0.03),
        (FALCON_MAMBA, 7.27e9, None, 0.01),
    ],
    ids=["qwen3-next", "qwen3.5-27b", "nemotron-h-56b", "nemotron-3-nano", "minimax-m1",
         "jamba", "falcon-mamba"],
)  # fmt: skip
def test_parameters_match_the_model_cards(config, total, active, tolerance):
    assert estimated_parameters(config) == pytest.approx(total, rel=tolerance)
    if active is not None:
        assert arch(config).active_bytes / 2 == pytest.approx(active, rel=0.08)


def test_the_state_is_sized_as_vllm_sizes_it():
    # Gated DeltaNet: (4 - 1) x (2 x 16 x 128 + 32 x 128) + 32 x 128 x 128, bf16, 36 layers
    next_ = arch(QWEN3_NEXT)
    assert (next_.recurrent_layers, next_.attention_layers) == (36, 12)
    assert next_.state_bytes == 36 * (3 * 8192 + 32 * 128 * 128) * 2
    # Mamba 2: (4 - 1) x (64 x 64 + 2 x 8 x 128) of convolution in bf16, 64 x 64 x 128 of SSM
    # state in the float32 the config.json names, 23 layers
    nano = arch(NEMOTRON_3_NANO)
    assert (nano.recurrent_layers, nano.attention_layers) == (23, 6)
    assert nano.state_bytes == 23 * (3 * (4096 + 2048) * 2 + 64 * 64 * 128 * 4)
    # lightning attention: 64 heads x 128 x 128, bf16, 70 layers
    assert arch(MINIMAX_M1).state_bytes == 70 * 64 * 128 * 128 * 2
    # Mamba 1: (4 - 1) x 8,192 + 8,192 x 16, 64 layers
    assert arch(FALCON_MAMBA).state_bytes == 64 * (3 * 8192 + 8192 * 16) * 2
    # Qwen3.5's mamba_ssm_dtype float32 doubles the recurrent state, not the convolution's
    assert arch(QWEN35_27B).state_bytes == 48 * (3 * 10240 * 2 + 48 * 128 * 128 * 4)
    assert arch(QWEN35_27B).state_bytes / MIB == pytest.approx(146.8, abs=0.1)


def test_kv_is_the_attention_layers_and_the_model_says_it_is_hybrid():
    next_ = arch(QWEN3_NEXT)
    assert next_.kv_bytes_per_token == 2 * 12 * 2 * 256 * 2  # 12 of 48 layers
    assert "a hybrid: 36 Gated DeltaNet layers" in next_.source
    assert "12 of 48 layers attention" in next_.source and "MiB of state" in next_.source
    mamba = arch(FALCON_MAMBA)
    assert mamba.kv_bytes_per_token == 0 and mamba.token_units == 0 and mamba.state_units == 1
    assert "no attention layer" in mamba.recurrent


def test_the_bound_holds_each_sequences_state_beside_its_kv():
    """The envelope's sequences: memory over context x k + state; without the state
    (counted as attention only) Qwen3-Next on 4 H100 SXM held 3.5 times as many."""
    found = arch(QWEN3_NEXT)
    hardware = Hardware("h100-sxm", 80, 3350)
    common = {"gpu_count": 4, "tensor_parallel_size": 4, "input_tokens": 1000}
    bounds = server_envelope(found, hardware, **common, output_tokens=200)
    stateless = server_envelope(
        replace(found, state_bytes=0.0),
        hardware,
        **common,
        output_tokens=200,
    )
    assert bounds.kv_tokens == stateless.kv_tokens
    ratio = stateless.sequences / bounds.sequences
    assert ratio == pytest.approx((1100 + found.state_bytes / found.kv_bytes_per_token) / 1100)
    assert bounds.output_tps < stateless.output_tps  # the states read and written each step
    # no attention: the memory holds sequences' states, whatever their lengths
    mamba = server_envelope(arch(FALCON_MAMBA), hardware, **common, output_tokens=200)
    longer = server_envelope(arch(FALCON_MAMBA), hardware, **common, output_tokens=20000)
    assert mamba.sequences == longer.sequences == mamba.kv_tokens


def test_the_engine_pads_states_to_its_attention_pages():
    """vLLM raises Qwen3-Next's attention block to 544 tokens (a page of 2 KV heads x 256 x 2
    bytes a token and layer over a 1.05 MiB state, in multiples of 16): a sequence holds 36
    such pages and half a block of its 12 attention layers', 544 x (36 / 12 + 1/2) tokens."""
    found = arch(QWEN3_NEXT)
    assert engine_state_units(found) == 544 * 3.5
    assert engine_state_units(found) > found.state_units  # padding only adds
    spec = bundled_specs()["h100-sxm"]
    shape = Shape.of(found, 2048)
    assert kv_cache_tokens(shape, spec, 4) * found.kv_bytes_per_token == pytest.approx(
        kv_cache_tokens(Shape.of(replace(found, state_bytes=0), 2048),
                        spec, 4) * found.kv_bytes_per_token
    )  # fmt: skip


def test_a_decode_step_reads_and_writes_the_batchs_states():
    found = arch(NEMOTRON_3_NANO)
    spec = bundled_specs()["h100-sxm"]
    server = Server(Shape.of(found, 2688), spec, 1)
    without = Server(Shape.of(replace(found, state_bytes=0.0), 2688),
                     spec, 1)  # fmt: skip
    moved, *_ = server.terms(64, 64 * 1100, 0, 0)
    moved_without, *_ = without.terms(64, 64 * 1100, 0, 0)
    assert (moved - moved_without) * spec.bandwidth == pytest.approx(2 * 64 * found.state_bytes)
    # a prompt attends in the attention layers only: 6 of 52 layers' quadratic FLOPs
    _, flops, *_ = server.terms(0, 0, 1000, 1000 * 500)
    _, linear, *_ = server.terms(0, 0, 1000, 0)
    assert (flops - linear) * spec.flops == pytest.approx(4 * 6 * server.shape.width * 500_000)


@pytest.mark.slow  # simulates: 1 s or more
def test_the_queue_form_follows_the_simulation_for_a_hybrid():
    """The queue form (plans' estimates) holds each sequence's state in the cache and reads it
    each step as the simulation does, where the cache binds (Qwen3.5-27B on one H100 SXM)."""
    from fleetplan.planner.estimate.predict import predict
    from tests.support.estimates import queue_and_simulation

    found = arch(QWEN35_27B)
    queue, simulated, server, eff, traffic, kv = queue_and_simulation(found, 5120)
    assert queue.saturation_rps == pytest.approx(simulated.saturation_rps, rel=0.25)
    middle = len(queue.curve) // 2
    assert queue.curve[middle].tpot_p50_ms == pytest.approx(
        simulated.curve[middle].tpot_p50_ms, rel=0.35
    )
    # the states bind: without them the same memory carries more
    stateless = Server(Shape.of(replace(found, state_bytes=0.0), 5120), server.gpu, 1)
    more = predict(stateless, eff, traffic, gpu_count=1, kv_tokens_per_replica=kv)
    assert more.saturation_rps > simulated.saturation_rps * 1.2


@pytest.mark.slow  # runs the command: 1 s or more
@pytest.mark.parametrize(
    ("config", "gpu", "count"),
    [(QWEN3_NEXT, "h100-sxm", 4), (NEMOTRON_3_NANO, "h100-sxm", 1), (FALCON_MAMBA, "l40s", 1)],
    ids=["qwen3-next", "nemotron-3-nano", "falcon-mamba"],
)
def test_capacity_estimates_a_hybrid_labelled_with_its_state_and_borrowed_band(
    cli, sample_warehouse_path, tmp_path, config, gpu, count
):
    from tests.support.estimates import estimate_capacity

    common = {"model": "acme/hybrid", "config": config, "gpu": gpu, "count": count}
    common |= {"lengths": (1000, 200), "targets": (2000, 100)}
    done = estimate_capacity(cli, sample_warehouse_path, tmp_path, **common)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["basis"] == "estimated" and report["capacity_rps"] > 0
    bounds, estimate = report["bounds"], report["estimate"]
    assert bounds["state_bytes_per_sequence"] == arch(config).state_bytes
    assert bounds["recurrent"].startswith(("a hybrid", "a recurrent model"))
    assert estimate["error"]["kind"].endswith("(hybrid: band borrowed)")
    assert "no hybrid model was measured" in estimate["error"]["source"]
    assert "a hybrid" in estimate["method"]
    text = estimate_capacity(cli, sample_warehouse_path, tmp_path, **common, json_out=False)
    assert text.returncode == 0 and "MiB per sequence beside its KV" in text.stdout


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"model_type": "rwkv", "hidden_size": 2048, "num_hidden_layers": 24,
          "attention_hidden_size": 2048, "vocab_size": 65536}, "attention_hidden_size"),
        ({"model_type": "kimi_linear", "linear_attn_config": {"kda_layers": [1, 2, 3]}},
         "linear_attn_config"),
        (QWEN3_NEXT | {"layer_types": ["conv"] * 24 + ["full_attention"] * 24}, "layer_types"),
        (QWEN3_NEXT | {"linear_num_key_heads": None}, "linear_num_key_heads"),
        (NEMOTRON_H_56B | {"mamba_num_heads": None}, "mamba_num_heads"),
        (MINIMAX_M1 | {"num_attention_heads": None}, "num_attention_heads"),
    ],
    ids=["rwkv", "kimi-linear", "lfm2-conv", "gdn-heads", "mamba2-heads", "lightning-heads"],
)  # fmt: skip
def test_what_it_cannot_size_is_still_refused_naming_the_key(config, key):
    with pytest.raises(InputError) as error:
        arch(config)
    assert error.value.field == key


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_vision_encoders_memory_is_named_in_the_kv_line(cli, sample_warehouse_path, tmp_path):
    from tests.support.estimates import estimate_capacity

    gemma = {
        "model_type": "gemma3", "torch_dtype": "bfloat16",
        "text_config": {
            "model_type": "gemma3_text", "hidden_size": 3840, "intermediate_size": 15360,
            "num_attention_heads": 16, "num_hidden_layers": 48, "num_key_value_heads": 8,
        },
    }  # fmt: skip
    siglip = {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
              "patch_size": 14, "model_type": "siglip_vision_model"}  # fmt: skip
    common = {"model": "acme/vlm", "gpu": "h100-sxm", "count": 1, "json_out": False}
    common |= {"lengths": (1000, 200), "targets": (2000, 100)}
    shown = {}
    for name, config in (("plain", gemma), ("vision", gemma | {"vision_config": siglip})):
        done = estimate_capacity(cli, sample_warehouse_path, tmp_path, config=config, **common)
        assert done.returncode == 0, done.stderr
        (shown[name],) = [line for line in done.stdout.splitlines() if "KV cache:" in line]
    assert "weights - vision encoder 0.82 GB - reserve" in shown["vision"]
    assert "weights - reserve" in shown["plain"] and "vision" not in shown["plain"]
