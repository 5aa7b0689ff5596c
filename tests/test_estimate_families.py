"""Model families that name their shape in words of their own (GPT-2's n_layer, MPT's d_model,
Falcon's num_kv_heads, ChatGLM's multi_query_group_num, DBRX's ffn_config, ERNIE's moe_k), whose
MLP has two matrices rather than three (GPT-NeoX, StarCoder 2, Phi-2, Nemotron), or whose
embeddings are tied unless the file says otherwise (Cohere, StarCoder 2): each is sized as the
family's own model counts its parameters (`planner.capacity.config_families`)."""

from __future__ import annotations

import pytest

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.architecture import (
    architecture_from_config,
    estimated_parameters,
    sliding_window,
)
from fleetplan.planner.capacity.config_families import (
    TIED_BY_DEFAULT,
    TWO_MATRIX_MLP,
    standard_config,
    ties_by_default,
)

# The keys of each model's config.json on the Hub that size it, and its parameters as
# transformers 5.19 counts them (the model built on the meta device from these keys,
# `test_transformers_counts_the_same`); GLM-4's (remote code) from its model card.
PUBLISHED = {
    "openai-community/gpt2-xl": (
        {"model_type": "gpt2", "n_embd": 1600, "n_layer": 48, "n_head": 25, "n_inner": None,
         "n_positions": 1024, "vocab_size": 50257},
        1_557_611_200, 25,
    ),
    "EleutherAI/gpt-j-6b": (
        {"model_type": "gptj", "n_embd": 4096, "n_layer": 28, "n_head": 16, "n_positions": 2048,
         "rotary_dim": 64, "vocab_size": 50400, "tie_word_embeddings": False},
        6_050_882_784, 16,
    ),
    "EleutherAI/gpt-neox-20b": (
        {"model_type": "gpt_neox", "hidden_size": 6144, "num_hidden_layers": 44,
         "num_attention_heads": 64, "intermediate_size": 24576, "vocab_size": 50432,
         "max_position_embeddings": 2048, "rotary_pct": 0.25, "tie_word_embeddings": False},
        20_554_567_680, 64,
    ),
    "bigcode/starcoder": (
        {"model_type": "gpt_bigcode", "n_embd": 6144, "n_layer": 40, "n_head": 48,
         "n_inner": 24576, "n_positions": 8192, "multi_query": True, "vocab_size": 49152},
        15_517_456_384, 1,
    ),
    "tiiuae/falcon-7b": (
        {"model_type": "falcon", "hidden_size": 4544, "num_hidden_layers": 32,
         "num_attention_heads": 71, "num_kv_heads": 71, "multi_query": True,
         "new_decoder_architecture": False, "parallel_attn": True, "vocab_size": 65024},
        6_921_720_704, 1,
    ),
    "tiiuae/falcon-40b": (
        {"model_type": "falcon", "hidden_size": 8192, "num_hidden_layers": 60,
         "num_attention_heads": 128, "num_kv_heads": 8, "new_decoder_architecture": True,
         "parallel_attn": True, "vocab_size": 65024},
        41_303_293_952, 8,
    ),
    "bigscience/bloom-7b1": (
        {"model_type": "bloom", "hidden_size": 4096, "n_layer": 30, "n_head": 32,
         "vocab_size": 250880},
        7_069_016_064, 32,
    ),
    "facebook/opt-6.7b": (
        {"model_type": "opt", "hidden_size": 4096, "num_hidden_layers": 32,
         "num_attention_heads": 32, "ffn_dim": 16384, "vocab_size": 50272,
         "max_position_embeddings": 2048, "word_embed_proj_dim": 4096},
        6_658_473_984, 32,
    ),
    "mosaicml/mpt-7b": (
        {"model_type": "mpt", "d_model": 4096, "n_heads": 32, "n_layers": 32,
         "expansion_ratio": 4, "max_seq_len": 2048, "vocab_size": 50432,
         "attn_config": {"alibi": True, "attn_type": "multihead_attention"}},
        6_649_286_656, 32,
    ),
    "microsoft/phi-2": (
        {"model_type": "phi", "hidden_size": 2560, "num_hidden_layers": 32,
         "num_attention_heads": 32, "intermediate_size": 10240, "vocab_size": 51200,
         "max_position_embeddings": 2048, "tie_word_embeddings": False},
        2_779_683_840, 32,
    ),
    "bigcode/starcoder2-15b": (
        {"model_type": "starcoder2", "hidden_size": 6144, "num_hidden_layers": 40,
         "num_attention_heads": 48, "num_key_value_heads": 4, "intermediate_size": 24576,
         "vocab_size": 49152, "max_position_embeddings": 16384, "sliding_window": 4096},
        15_655_899_136, 4,
    ),
    "nvidia/Minitron-8B-Base": (
        {"model_type": "nemotron", "hidden_size": 4096, "num_hidden_layers": 32,
         "num_attention_heads": 48, "head_dim": 128, "num_key_value_heads": 8,
         "intermediate_size": 16384, "vocab_size": 256000, "max_position_embeddings": 4096},
        8_271_699_968, 8,
    ),
    "databricks/dbrx-instruct": (
        {"model_type": "dbrx", "d_model": 6144, "n_heads": 48, "n_layers": 40,
         "max_seq_len": 32768, "vocab_size": 100352,
         "attn_config": {"kv_n_heads": 8, "clip_qkv": 8, "rope_theta": 500000},
         "ffn_config": {"ffn_hidden_size": 10752, "moe_num_experts": 16, "moe_top_k": 4}},
        131_596_523_520, 8,
    ),
    "baidu/ERNIE-4.5-21B-A3B-PT": (
        {"model_type": "ernie4_5_moe", "hidden_size": 2560, "num_hidden_layers": 28,
         "num_attention_heads": 20, "num_key_value_heads": 4, "intermediate_size": 12288,
         "moe_intermediate_size": 1536, "moe_num_experts": 64, "moe_k": 6,
         "moe_num_shared_experts": 2, "moe_layer_start_index": 1, "moe_layer_end_index": 27,
         "moe_layer_interval": 1, "vocab_size": 103424, "tie_word_embeddings": True,
         "max_position_embeddings": 131072},
        21_825_437_888, 4,
    ),
    "CohereForAI/c4ai-command-r-v01": (
        {"model_type": "cohere", "hidden_size": 8192, "num_hidden_layers": 40,
         "num_attention_heads": 64, "num_key_value_heads": 64, "intermediate_size": 22528,
         "vocab_size": 256000, "max_position_embeddings": 8192, "logit_scale": 0.0625},
        34_980_831_232, 64,
    ),
}  # fmt: skip
# THUDM/glm-4-9b-chat (ChatGLM's own config.json, remote code): 9.4B on its model card
GLM4_9B = {
    "model_type": "chatglm",
    "hidden_size": 4096,
    "num_layers": 40,
    "num_attention_heads": 32,
    "multi_query_attention": True,
    "multi_query_group_num": 2,
    "kv_channels": 128,
    "ffn_hidden_size": 13696,
    "padded_vocab_size": 151552,
    "seq_length": 131072,
    "torch_dtype": "bfloat16",
}


def arch(config: dict, model: str = "acme/m"):
    return architecture_from_config(model, config | {"torch_dtype": "bfloat16"}, source="test")


@pytest.mark.parametrize("model", sorted(PUBLISHED))
def test_each_family_is_sized_as_its_own_model_counts_it(model):
    config, parameters, kv_heads = PUBLISHED[model]
    assert estimated_parameters(config) == pytest.approx(parameters, rel=0.005)
    found = arch(config, model)
    assert found.kv_heads == kv_heads
    assert found.weight_bytes == pytest.approx(2 * parameters, rel=0.005)


def test_a_two_matrix_mlp_is_not_counted_as_a_gated_one():
    # StarCoder 2's MLP is c_fc and c_proj: as a gated MLP it would be 21.7B, not 15.7B
    config, parameters, _ = PUBLISHED["bigcode/starcoder2-15b"]
    gated = config | {"model_type": "mistral", "tie_word_embeddings": True}
    assert estimated_parameters(gated) / parameters == pytest.approx(1.39, abs=0.01)


def test_glm4_reads_chatglms_own_names():
    found = architecture_from_config("THUDM/glm-4-9b-chat", GLM4_9B, source="test")
    assert estimated_parameters(GLM4_9B) / 1e9 == pytest.approx(9.40, abs=0.01)
    assert (found.layers, found.kv_heads, found.head_dim) == (40, 2, 128)
    assert found.max_context == 131072
    # without multi_query_attention its groups are not KV heads: every head keeps its own
    alone = {k: v for k, v in GLM4_9B.items() if k != "multi_query_attention"}
    assert architecture_from_config("m", alone, source="test").kv_heads == 32


def test_mixtures_of_experts_in_their_own_words():
    dbrx = arch(PUBLISHED["databricks/dbrx-instruct"][0])
    assert (dbrx.experts, dbrx.experts_per_token) == (16, 4)
    assert dbrx.active_bytes / 2e9 == pytest.approx(36.5, abs=0.1)  # card: 132B, 36B active
    ernie = arch(PUBLISHED["baidu/ERNIE-4.5-21B-A3B-PT"][0])
    assert (ernie.experts, ernie.experts_per_token) == (64, 6)
    # card: 21B, 3B active (3.09B without the embeddings, 3.35B with them)
    assert ernie.active_bytes / 2e9 == pytest.approx(3.35, abs=0.01)


def test_a_standard_name_the_file_gives_wins_over_the_familys():
    config = {"n_layer": 7, "num_hidden_layers": 12, "d_model": 64, "hidden_size": 512}
    standard = standard_config(config)
    assert (standard["num_hidden_layers"], standard["hidden_size"]) == (12, 512)
    assert standard_config({"n_layers": 12})["num_hidden_layers"] == 12


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"n_layers": 0}, "n_layers"),
        ({"d_model": 1.5}, "d_model"),
        ({"n_inner": "wide"}, "n_inner"),
        ({"attn_config": {"kv_n_heads": -1}}, "kv_n_heads"),
    ],
)
def test_a_familys_name_out_of_range_is_refused_naming_it(extra, key):
    with pytest.raises(InputError) as error:
        standard_config({"model_type": "mpt"} | extra)
    assert error.value.field == key and key in error.value.reason


def test_a_recurrent_block_is_a_hybrid_refused_naming_the_key():
    config = PUBLISHED["tiiuae/falcon-7b"][0] | {"block_types": ["recurrent", "attention"]}
    with pytest.raises(InputError) as error:
        arch(config)
    assert error.value.field == "block_types" and "recurrent" in error.value.reason


@pytest.mark.slow  # imports torch and transformers, builds 15 models on the meta device
def test_transformers_counts_the_same():
    """The figures above, counted again from the same keys by the families' own model code."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    for model, (config, parameters, _) in PUBLISHED.items():
        built = transformers.AutoConfig.for_model(**config)
        with torch.device("meta"):
            counted = transformers.AutoModelForCausalLM.from_config(built)
        assert sum(p.numel() for p in counted.parameters()) == parameters, model


@pytest.mark.slow  # imports transformers
def test_the_family_tables_agree_with_transformers_defaults():
    transformers = pytest.importorskip("transformers")
    transformers.logging.set_verbosity_error()
    known = transformers.CONFIG_MAPPING
    families = {"llama", "mistral", "qwen2", "qwen3", "phi3", "gpt_neox", "gptj", "phi"}
    families |= TIED_BY_DEFAULT | TWO_MATRIX_MLP | {"gemma2", "gemma3_text", "cohere2"}
    checked = 0
    for name in sorted(families & set(known)):
        assert ties_by_default({"model_type": name}) == known[name]().tie_word_embeddings, name
        checked += 1
    assert checked >= 20


@pytest.mark.parametrize(
    ("extra", "window"),
    [
        ({"model_type": "gemma2", "sliding_window": 4096}, 4096),  # every other layer
        ({"sliding_window": 128, "layer_types": ["sliding_attention", "full_attention"]}, 128),
        ({"sliding_window": 4096, "use_sliding_window": False}, None),  # Qwen2's, turned off
        ({"sliding_window": 4096, "layer_types": ["full_attention"] * 2}, None),
        ({"sliding_window": 8192}, None),  # the whole context: no window at all
        ({"sliding_window": None}, None),  # Mistral 7B v0.2 on
    ],
)
def test_a_sliding_window_is_read_where_the_engine_keeps_one(extra, window):
    assert sliding_window(extra, 8192) == window
    config = PUBLISHED["bigcode/starcoder2-15b"][0] | {"max_position_embeddings": 8192} | extra
    found = arch(config)
    assert found.sliding_window == window
    # counted as whole attention (what the cache holds per token does not change), and said so
    assert found.kv_bytes_per_token == arch(config | {"sliding_window": None}).kv_bytes_per_token
    assert ("sliding-window" in found.source) == (window is not None)


@pytest.mark.parametrize(
    ("config", "key"),
    [
        ({"model_type": "mamba", "hidden_size": 2560, "num_hidden_layers": 64}, "state_size"),
        ({"model_type": "rwkv", "hidden_size": 4096, "num_hidden_layers": 32,
          "attention_hidden_size": 4096}, "attention_hidden_size"),
        ({"model_type": "xlstm", "embedding_dim": 4096, "num_blocks": 32}, "model_type"),
    ],
)  # fmt: skip
def test_a_model_without_attention_is_refused_as_recurrent_naming_the_key(config, key):
    with pytest.raises(InputError) as error:
        arch(config)
    assert error.value.field == key and "recurrent state" in error.value.reason
