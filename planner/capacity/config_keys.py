"""Reading a Hugging Face config.json's numbers: a figure above 0 (`positive`), a shape's count
(`shape_count`: a whole number within what a real model has, `SHAPE_LIMITS`), each refusal an
InputError naming the key; a JSON number as a finite float or nothing (`finite_number`); the
longest context the model takes (`context_length`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from fleetplan.core.errors import InputError


def positive(config: Mapping, *names: str) -> float | None:
    """The first of `names` the config gives (None where it gives none): a finite number above
    0; an InputError names the key otherwise (a bool too: JSON's true is not a count)."""
    for name in names:
        value = config.get(name)
        if value is None:
            continue
        if isinstance(value, bool):
            raise InputError(
                f"{name} must be a number above 0, got {value!r} (a bool, not a number)", field=name
            )
        if isinstance(value, int | float) and value > 0 and _as_float(value) < math.inf:
            return float(value)
        shown = repr(value) if len(repr(value)) <= 40 else f"{repr(value)[:37]}..."
        raise InputError(f"{name} must be a number above 0, got {shown}", field=name)
    return None


def finite_number(value: object) -> float | None:
    """A JSON number as a finite float; None for anything else (a bool, text, an int past a
    float's range, inf or nan)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    number = _as_float(value)
    return number if math.isfinite(number) else None


def _as_float(value: float) -> float:
    """A number as a float; inf for an int past a float's range (or nan)."""
    try:
        return float(value) if value == value else math.inf
    except OverflowError:
        return math.inf


# The most of each a real model has, with room to spare (the largest public dense models: about
# 130 layers, 128 heads, head dimension 256, width 16,384, MLP width 53,248, vocabularies of
# 262,144, contexts of 10 million tokens): beyond, a config.json is a mistake, not a model. Each
# is a whole number from 1 to its limit; another family's name for one (`ALIASES`) counts as it.
SHAPE_LIMITS = {
    "num_hidden_layers": 10_000,
    "num_attention_heads": 100_000,
    "num_key_value_heads": 100_000,
    "head_dim": 65_536,
    "hidden_size": 1_048_576,
    "intermediate_size": 4_194_304,
    "vocab_size": 16_777_216,
    "max_position_embeddings": 1_000_000_000,
    # a mixture of experts (the largest public ones: 384 routed experts, 8 to 16 per token)
    "num_local_experts": 65_536,
    "num_experts": 65_536,
    "n_routed_experts": 65_536,
    "num_experts_per_tok": 65_536,
    "experts_per_token": 65_536,
    "moe_intermediate_size": 4_194_304,
    "shared_expert_intermediate_size": 4_194_304,
    "n_shared_experts": 65_536,  # DeepSeek's (1 or 2)
    "intermediate_size_mlp": 4_194_304,  # Llama 4's dense layers
    # latent attention (DeepSeek-V2/V3: ranks 512 and 1,536, head parts 64 to 128)
    "kv_lora_rank": 65_536,
    "q_lora_rank": 65_536,
    "qk_rope_head_dim": 65_536,
    "qk_nope_head_dim": 65_536,
    "v_head_dim": 65_536,
}
# The names other families give a standard figure (transformers' configuration classes: their
# `attribute_map`s, GPT-2's n_inner, OPT's ffn_dim, ChatGLM's own; `config_families` reads them),
# each checked against the standard figure's limit.
ALIASES = {
    "num_hidden_layers": ("n_layer", "n_layers", "num_layers"),
    "num_attention_heads": ("n_head", "n_heads", "num_heads"),
    "hidden_size": ("n_embd", "d_model", "n_embed"),
    "intermediate_size": ("ffn_hidden_size", "n_inner", "ffn_dim"),
    "vocab_size": ("padded_vocab_size",),
    "max_position_embeddings": ("n_positions", "max_seq_len", "seq_length", "max_sequence_length"),
    "head_dim": ("kv_channels",),
    "num_experts": ("moe_num_experts",),
    "num_experts_per_tok": ("moe_k", "moe_topk", "moe_top_k", "top_k_experts"),
    "moe_intermediate_size": ("expert_ffn_hidden_size",),
}
# Names of KV heads that count only beside another key (Falcon's num_kv_heads: with its new
# decoder; ChatGLM's groups: with multi_query_attention): `config_families._kv_heads` reads them.
KV_HEAD_NAMES = ("num_kv_heads", "n_head_kv", "multi_query_group_num", "kv_n_heads")
_ALIASES = {name: standard for standard, names in ALIASES.items() for name in names} | {
    **dict.fromkeys(KV_HEAD_NAMES, "num_key_value_heads"),
    "expansion_ratio x d_model": "intermediate_size",  # MPT's MLP width
}


def check_whole(name: str, value: float) -> None:
    """A count of a shape (layers, heads, a head's dimension, a width) is a whole number from 1
    to its limit; an InputError names the key otherwise."""
    limit = SHAPE_LIMITS[_ALIASES.get(name, name)]
    if value != int(value) or not 1 <= value <= limit:
        raise InputError(
            f"{name} must be a whole number from 1 to {limit:,}, got {value:g}", field=name
        )


def shape_count(config: Mapping, *names: str) -> float | None:
    """The first of `names` the config gives, checked as a shape's count (`check_whole`);
    None where it gives none."""
    for name in names:
        if config.get(name) is not None:
            value = positive(config, name)
            assert value is not None
            check_whole(name, value)
            return value
    return None


MAX_CONTEXT = SHAPE_LIMITS["max_position_embeddings"]


def context_length(config: Mapping) -> int | None:
    """The longest prompt and output together the model takes: max_position_embeddings, times a
    rope_scaling factor as vLLM derives a model's length (not for "llama3", "su" or "longrope"
    scaling, whose max_position_embeddings already counts it; YaRN's from its
    original_max_position_embeddings where given); None where not given."""
    base = shape_count(config, "max_position_embeddings")
    if base is None:
        return None
    scaling = config.get("rope_scaling")
    # Gemma 3's max_position_embeddings already counts its linear scaling (vLLM leaves it so)
    if isinstance(scaling, Mapping) and not str(config.get("model_type", "")).startswith("gemma3"):
        kind = scaling.get("rope_type", scaling.get("type"))
        factor = finite_number(scaling.get("factor"))
        original = finite_number(scaling.get("original_max_position_embeddings"))
        if kind not in ("llama3", "su", "longrope") and factor is not None and factor > 1:
            if kind == "yarn" and original is not None and 1 <= original <= MAX_CONTEXT:
                # vLLM derives YaRN's length from the original one (DeepSeek-V3: 4,096 x 40)
                base = int(original) * min(factor, 1024.0)
            else:
                base = base * min(factor, 1024.0)
    return int(base)
