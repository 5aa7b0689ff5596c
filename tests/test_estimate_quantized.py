"""A quantized checkpoint (FP8, AWQ, GPTQ, bitsandbytes, MXFP4, compressed-tensors) is sized from
its config.json's `quantization_config` (`planner/capacity/quantization.py`): its linear layers
in the bits it names, its embeddings in 16 bits, a mixture's experts alone in MXFP4 (gpt-oss),
and its products at the 16-bit rate unless weights and activations are both 8-bit floats."""

from __future__ import annotations

import json

import pytest

from fleetplan.planner.capacity.architecture import architecture_from_config, estimated_parameters
from fleetplan.planner.capacity.quantization import quantized_weights
from fleetplan.planner.estimate.serving import Shape

LLAMA_31_8B = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "max_position_embeddings": 131072,
}
FP8_DYNAMIC = {  # neuralmagic's / RedHat's FP8-dynamic checkpoints (llm-compressor)
    "quant_method": "compressed-tensors",
    "config_groups": {
        "group_0": {
            "weights": {"num_bits": 8, "type": "float", "strategy": "channel"},
            "input_activations": {"num_bits": 8, "type": "float", "dynamic": True},
            "targets": ["Linear"],
        }
    },
    "ignore": ["lm_head"],
}
QWEN25_7B = {
    "model_type": "qwen2",
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "num_hidden_layers": 28,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "vocab_size": 152064,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
}
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
GPT_OSS_20B = {
    "model_type": "gpt_oss",
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "num_hidden_layers": 24,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "vocab_size": 201088,
    "num_local_experts": 32,
    "num_experts_per_tok": 4,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "max_position_embeddings": 131072,
    "quantization_config": {
        "quant_method": "mxfp4",
        "modules_to_not_convert": [
            "model.layers.*.self_attn",
            "model.layers.*.mlp.router",
            "model.embed_tokens",
            "lm_head",
        ],
    },
}


def arch(config: dict):
    return architecture_from_config("acme/q", config, source="test")


GIB = 2**30


@pytest.mark.parametrize(
    ("config", "card_gib"),
    [
        # OpenAI's gpt-oss model card: checkpoints of 12.8 GiB (20b) and 60.8 GiB (120b)
        (GPT_OSS_20B, 12.8),
        (GPT_OSS_20B | {"num_hidden_layers": 36, "num_local_experts": 128}, 60.8),
    ],
)
def test_gpt_oss_is_sized_as_its_model_card_says(config, card_gib):
    found = arch(config)
    assert found.weight_bytes / GIB == pytest.approx(card_gib, rel=0.01)
    assert "weights sized from its quantization_config (mxfp4" in found.source
    assert found.kv_bytes == 2.0  # the cache stays in the 16-bit dtype


@pytest.mark.parametrize(
    ("config", "per_linear"),
    [
        (LLAMA_31_8B | {"quantization_config": FP8_DYNAMIC}, 1.0),
        (LLAMA_31_8B | {"quantization_config": {"quant_method": "fbgemm_fp8"}}, 1.0),
        (QWEN25_7B | {"quantization_config": AWQ}, 0.5 + 2.5 / 128),
    ],
)
def test_linear_layers_take_the_bits_it_names_and_embeddings_stay_16_bit(config, per_linear):
    found = arch(config)
    plain = {k: v for k, v in config.items() if k != "quantization_config"}
    parameters = estimated_parameters(plain)
    embeddings = 2 * plain["vocab_size"] * plain["hidden_size"]  # untied: input and output
    expected = (parameters - embeddings) * per_linear + embeddings * 2
    assert found.weight_bytes == pytest.approx(expected)
    assert found.kv_bytes == 2.0 and "quantization_config" in found.source


def test_the_bytes_follow_the_bits_and_groups_it_names():
    parameters = estimated_parameters(QWEN25_7B)
    embeddings = 2 * 152064 * 3584
    linear = parameters - embeddings
    for bits, group, per in ((4, 128, 0.5 + 2.5 / 128), (8, 128, 1 + 3 / 128), (4, -1, 0.5)):
        q = {"quant_method": "gptq", "bits": bits, "group_size": group}
        sized = quantized_weights(
            q, parameters=parameters, routed=0, embeddings=embeddings, element=2
        )
        assert sized.weight_bytes == pytest.approx(linear * per + embeddings * 2)
    bnb = {"quant_method": "bitsandbytes", "load_in_4bit": True}
    assert arch(QWEN25_7B | {"quantization_config": bnb}).weight_bytes == pytest.approx(
        linear * 0.5625 + embeddings * 2
    )


def test_mxfp4_quantizes_a_mixtures_experts_only_and_its_products_run_at_16_bits():
    oss = arch(GPT_OSS_20B)
    assert oss.routed and (oss.experts, oss.experts_per_token) == (32, 4)
    experts = 24 * 32 * 3 * 2880 * 2880
    assert oss.expert_bytes == pytest.approx(experts * 0.53125)
    assert oss.weight_bytes - oss.expert_bytes == pytest.approx(
        (estimated_parameters(GPT_OSS_20B) - experts) * 2
    )  # attention, router and embeddings in bf16
    # a token computes with its 4 experts' parameters, at the 16-bit rate (W4A16)
    active = estimated_parameters(GPT_OSS_20B) - experts * (1 - 4 / 32)
    assert oss.compute_parameters == pytest.approx(active)
    assert Shape.of(oss, 2880).parameters == pytest.approx(active)


def test_fp8_weights_and_activations_cost_half_the_16_bit_products():
    fp8 = arch(LLAMA_31_8B | {"quantization_config": FP8_DYNAMIC})
    assert fp8.compute_parameters == pytest.approx(estimated_parameters(LLAMA_31_8B) / 2)
    weight_only = FP8_DYNAMIC | {
        "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}
    }
    w8a16 = arch(LLAMA_31_8B | {"quantization_config": weight_only})
    assert w8a16.compute_parameters == pytest.approx(estimated_parameters(LLAMA_31_8B))
    # an 8-bit KV cache it names is the cache's element
    scheme = FP8_DYNAMIC | {"kv_cache_scheme": {"num_bits": 8, "type": "float"}}
    assert arch(LLAMA_31_8B | {"quantization_config": scheme}).kv_bytes == 1.0


def test_a_dense_16_bit_model_is_sized_as_before():
    plain = arch(LLAMA_31_8B)
    assert plain.compute_parameters is None
    assert plain.weight_bytes == pytest.approx(2 * estimated_parameters(LLAMA_31_8B))


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_gpt_oss_is_estimated_on_one_rtx_4090_from_its_own_config(
    cli, sample_warehouse_path, tmp_path
):
    from tests.support.estimates import estimate_capacity

    def estimate(config: dict, json_out: bool = True):
        return estimate_capacity(
            cli, sample_warehouse_path, tmp_path, model="openai/gpt-oss-20b", config=config,
            gpu="rtx-4090", count=1, lengths=(1000, 200), targets=(1000, 50), json_out=json_out,
        )  # fmt: skip

    # gpt-oss's config.json: every other layer attends to its last 128 tokens
    windowed = GPT_OSS_20B | {"sliding_window": 128}
    windowed["layer_types"] = ["sliding_attention", "full_attention"] * 12
    done = estimate(windowed)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    # counted whole, and said so: the cache vLLM allocates holds more past the window
    assert "caches only their last 128 tokens" in report["bounds"]["note"]
    assert "(a window of 128 tokens)" in report["bounds"]["architecture"]
    text = estimate(windowed, json_out=False).stdout
    assert "vLLM caches only their last 128 tokens" in text.split("KV cache:")[1]
    assert report["basis"] == "estimated" and report["capacity_rps"] > 0
    assert "mixture of experts" in report["estimate"]["method"]
    assert "mxfp4" in report["bounds"]["architecture"]
    # 13.8 GB of weights leave the 24 GB card a cache; its 20.9B parameters in 16 bits would not
    assert report["bounds"]["weights_fit"] and report["bounds"]["kv_tokens"] > 100_000
    unquantized = {k: v for k, v in GPT_OSS_20B.items() if k != "quantization_config"}
    done = estimate(unquantized, json_out=False)
    assert done.returncode != 0 and "do not fit" in done.stdout + done.stderr


def test_a_float32_checkpoint_is_served_in_16_bits_unless_the_run_says_otherwise():
    """vLLM's --dtype auto serves a float32 checkpoint in float16 (its engine arguments' words:
    "auto" uses FP16 for FP32 and FP16 models): sized so, and said so."""
    fp32 = arch(LLAMA_31_8B | {"torch_dtype": "float32"})
    assert fp32.weight_bytes == pytest.approx(2 * estimated_parameters(LLAMA_31_8B))
    assert fp32.kv_bytes == 2.0 and "served in 16 bits" in fp32.source
    ran = architecture_from_config(
        "acme/q", LLAMA_31_8B | {"torch_dtype": "float32"}, source="test", kv_dtype="float32"
    )
    assert ran.weight_bytes == pytest.approx(4 * estimated_parameters(LLAMA_31_8B))
