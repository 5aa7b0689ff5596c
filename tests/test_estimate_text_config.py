"""A multimodal config.json (Gemma 3, Llama 4, Mistral Small 3.1) keeps its language model under
`text_config`, its dtype at the top: estimates read the one over the other (`text_config`), and
Llama 4's shared expert and interleaved dense layers are counted."""

from __future__ import annotations

import pytest

from fleetplan.planner.capacity.architecture import (
    architecture_from_config,
    estimated_parameters,
    text_config,
)

# meta-llama/Llama-4-Scout-17B-16E(-Instruct) and google/gemma-3-27b-it: their config.json's
# language-model keys, as the Hub gives them
SCOUT = {
    "architectures": ["Llama4ForConditionalGeneration"],
    "model_type": "llama4",
    "torch_dtype": "bfloat16",
    "text_config": {
        "model_type": "llama4_text",
        "hidden_size": 5120,
        "intermediate_size": 8192,
        "intermediate_size_mlp": 16384,
        "num_hidden_layers": 48,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "num_local_experts": 16,
        "num_experts_per_tok": 1,
        "interleave_moe_layer_step": 1,
        "vocab_size": 202048,
        "tie_word_embeddings": False,
        "max_position_embeddings": 10485760,
    },
    "vision_config": {"hidden_size": 1408, "num_hidden_layers": 34},
}
GEMMA3_27B = {
    "architectures": ["Gemma3ForConditionalGeneration"],
    "model_type": "gemma3",
    "torch_dtype": "bfloat16",
    "text_config": {
        "model_type": "gemma3_text",
        "head_dim": 128,
        "hidden_size": 5376,
        "intermediate_size": 21504,
        "num_attention_heads": 32,
        "num_hidden_layers": 62,
        "num_key_value_heads": 16,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window": 1024,
        "vocab_size": 262208,
        "max_position_embeddings": 131072,
    },
    "vision_config": {"hidden_size": 1152},
}


def test_the_language_model_is_read_under_its_top_levels_dtype():
    flat = text_config(GEMMA3_27B)
    assert flat["num_hidden_layers"] == 62 and flat["torch_dtype"] == "bfloat16"
    assert "vision_config" not in flat and "text_config" not in flat
    assert text_config(flat) == flat  # a flat config is itself


def test_gemma_3_counts_its_model_cards_27_billion_and_its_context():
    gemma = architecture_from_config("google/gemma-3-27b-it", GEMMA3_27B, source="test")
    assert estimated_parameters(GEMMA3_27B) == pytest.approx(27e9, rel=0.01)
    assert gemma.weight_bytes == pytest.approx(2 * 27e9, rel=0.01)
    # its linear rope scaling is already in max_position_embeddings (vLLM leaves it so)
    assert gemma.max_context == 131072 and (gemma.kv_heads, gemma.head_dim) == (16, 128)


def test_llama_4_scout_counts_its_shared_expert_and_its_model_cards_17_billion_a_token():
    scout = architecture_from_config("meta-llama/Llama-4-Scout", SCOUT, source="test")
    assert scout.routed and (scout.experts, scout.experts_per_token) == (16, 1)
    # 109B on its card with its vision encoder; 17B a token: one routed and one shared expert
    assert estimated_parameters(SCOUT) == pytest.approx(109e9, rel=0.02)
    assert scout.active_bytes / 2 == pytest.approx(17e9, rel=0.02)
    # Maverick's layout: every other layer routes to 128 experts, the rest dense (16,384 wide)
    maverick = SCOUT | {
        "text_config": SCOUT["text_config"]
        | {"num_local_experts": 128, "interleave_moe_layer_step": 2}
    }
    assert estimated_parameters(maverick) == pytest.approx(400e9, rel=0.02)


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        # Qwen3-Next: three linear-attention layers to one of attention
        (
            {"layer_types": ["linear_attention"] * 3 + ["full_attention"]}
            | {"linear_num_value_heads": 32},
            "linear_num_key_heads",
        ),
        ({"attn_layer_period": 8, "attn_layer_offset": 4}, "mamba_d_state"),  # Jamba
        ({"hybrid_override_pattern": "M-M-M*-"}, "ssm_state_size"),  # Nemotron-H
    ],
)
def test_a_hybrid_model_lacking_its_states_shape_is_refused_naming_the_key(extra, key):
    """Hybrids are sized (tests/test_estimate_hybrid.py); one whose recurrent layers' shape the
    config.json does not give is refused naming the first key missing, bytes given or not."""
    from fleetplan.core.errors import InputError

    dense = dict(text_config(GEMMA3_27B))
    with pytest.raises(InputError) as error:
        architecture_from_config("acme/hybrid", dense | extra, source="test")
    assert error.value.field == key and "recurrent state" in error.value.reason
    # sliding-window layers are attention (counted whole)
    sliding = dense | {"layer_types": ["sliding_attention"] * 5 + ["full_attention"]}
    assert architecture_from_config("acme/sw", sliding, source="test").kv_heads == 16
    # given weights do not size the state: still refused
    given = dense | extra | {"fleetplan_weight_bytes": 30e9}
    with pytest.raises(InputError) as error:
        architecture_from_config("acme/h", given, source="test")
    assert error.value.field == key
