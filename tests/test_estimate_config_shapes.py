"""Published config.json shapes that were refused or mis-sized (2026-12-07: 42 real configs of
2024-2026 models run through `capacity --estimate`), rebuilt here from the keys that matter."""

from __future__ import annotations

import pytest

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.architecture import architecture_from_config, estimated_parameters
from fleetplan.planner.capacity.config_families import FAMILY_DEFAULTS, standard_config

# Qwen3-Coder-480B-A35B-Instruct's shape (card: 480B, 35B active): 0 means no shared expert
QWEN3_CODER = {
    "model_type": "qwen3_moe", "hidden_size": 6144, "intermediate_size": 8192,
    "moe_intermediate_size": 2560, "shared_expert_intermediate_size": 0,
    "num_hidden_layers": 62, "num_attention_heads": 96, "num_key_value_heads": 8,
    "head_dim": 128, "num_experts": 160, "num_experts_per_tok": 8, "vocab_size": 151936,
    "decoder_sparse_step": 1, "mlp_only_layers": [], "tie_word_embeddings": False,
    "max_position_embeddings": 262144, "torch_dtype": "bfloat16",
}  # fmt: skip
# gemma-3-12b-it's multimodal config.json: the text model's vocabulary and head dimension left
# to Gemma 3's defaults (card: 12.2B with its 0.4B vision tower)
GEMMA3_12B = {
    "model_type": "gemma3", "torch_dtype": "bfloat16",
    "text_config": {
        "model_type": "gemma3_text", "hidden_size": 3840, "intermediate_size": 15360,
        "num_attention_heads": 16, "num_hidden_layers": 48, "num_key_value_heads": 8,
        "sliding_window": 1024,
    },
}  # fmt: skip


def test_a_shared_expert_width_of_0_is_no_shared_expert():
    found = architecture_from_config("Qwen/Qwen3-Coder-480B-A35B-Instruct", QWEN3_CODER, source="t")
    assert estimated_parameters(QWEN3_CODER) / 1e9 == pytest.approx(480.15, abs=0.05)
    assert found.active_bytes / 2e9 == pytest.approx(35.5, abs=0.1)


def test_gemma_3s_sparse_config_takes_the_familys_defaults():
    found = architecture_from_config("google/gemma-3-12b-it", GEMMA3_12B, source="t")
    assert found.head_dim == 256  # Gemma's own, not 3,840 / 16 = 240
    assert estimated_parameters(GEMMA3_12B) / 1e9 == pytest.approx(11.77, abs=0.01)
    assert found.kv_bytes_per_token == 2 * 48 * 8 * 256 * 2
    # a value the file gives wins over the family's default
    assert standard_config({"model_type": "gemma3_text", "head_dim": 128})["head_dim"] == 128
    assert FAMILY_DEFAULTS["gemma3_text"]["vocab_size"] == 262_208


def test_per_layer_lists_of_one_value_and_another_familys_top_k():
    # Hunyuan-A13B writes its experts' settings once per layer; Gemma 4 names k top_k_experts
    hunyuan = {
        "model_type": "hunyuan_v1_moe", "hidden_size": 4096, "intermediate_size": 3072,
        "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
        "head_dim": 128, "vocab_size": 128167, "num_experts": 64, "moe_topk": [8] * 32,
        "moe_intermediate_size": [3072] * 32, "num_shared_expert": [1] * 32,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    }  # fmt: skip
    found = architecture_from_config("tencent/Hunyuan-A13B-Instruct", hunyuan, source="t")
    assert (found.experts, found.experts_per_token) == (64, 8)
    assert estimated_parameters(hunyuan) / 1e9 == pytest.approx(80.4, abs=0.1)  # card: 80B
    assert found.active_bytes / 2e9 == pytest.approx(12.7, abs=0.2)  # card: 13B active
    varying = hunyuan | {"moe_topk": [8] * 31 + [4]}
    with pytest.raises(InputError, match="moe_topk"):
        architecture_from_config("m", varying, source="t")
    gemma4 = QWEN3_CODER | {"num_experts_per_tok": None, "top_k_experts": 8}
    assert architecture_from_config("m", gemma4, source="t").experts_per_token == 8


@pytest.mark.parametrize(
    ("extra", "key", "words"),
    [
        ({"layer_types": ["conv", "full_attention"] * 31}, "layer_types", "(conv)"),  # LFM2
        ({"block_configs": [{"attention": {}}]}, "block_configs", "one per layer"),  # one of 62
    ],
)
def test_layers_of_other_kinds_are_refused_naming_the_key(extra, key, words):
    dense = {k: v for k, v in QWEN3_CODER.items() if "expert" not in k and "moe" not in k}
    with pytest.raises(InputError) as error:
        architecture_from_config("m", dense | extra, source="t")
    assert error.value.field == key and words in error.value.reason


def test_softmax_attention_everywhere_is_no_hybrid():
    dense = {k: v for k, v in QWEN3_CODER.items() if "expert" not in k and "moe" not in k}
    found = architecture_from_config("m", dense | {"attn_type_list": [1] * 62}, source="t")
    assert found.layers == 62


def test_a_vision_encoder_takes_memory_from_the_cache_not_time_from_a_step():
    """gemma-3-12b-it's SigLIP (0.42 billion parameters as transformers counts them with its
    projector, 0.41 here) was left out: the KV cache came out 0.8 GB larger than it is."""
    with_vision = GEMMA3_12B | {
        "vision_config": {"hidden_size": 1152, "intermediate_size": 4304, "num_hidden_layers": 27,
                          "patch_size": 14, "model_type": "siglip_vision_model"}
    }  # fmt: skip
    text_only = architecture_from_config("m", GEMMA3_12B, source="t")
    found = architecture_from_config("m", with_vision, source="t")
    assert text_only.resident_bytes == 0
    assert found.resident_bytes / 2e9 == pytest.approx(0.41, abs=0.005)
    assert found.weight_bytes == text_only.weight_bytes  # a step reads the language model's
    assert found.read_bytes(16) == text_only.read_bytes(16)
    assert "vision encoder (0.41 billion parameters)" in found.source


def test_llama_4s_chunked_attention_is_said_as_a_window():
    """Llama 4 attends within chunks of 8,192 tokens in 3 layers of 4; its estimate said nothing
    of it (a sliding window is said)."""
    dense = {k: v for k, v in QWEN3_CODER.items() if "expert" not in k and "moe" not in k}
    found = architecture_from_config("m", dense | {"attention_chunk_size": 8192}, source="t")
    assert found.sliding_window == 8192 and "(or chunked) layers" in found.source
    assert architecture_from_config("m", dense, source="t").sliding_window is None
