"""Model families whose config.json names its shape in words of its own (`standard_config`: GPT-2,
GPT-J, GPT-NeoX, StarCoder, Falcon, BLOOM, OPT, MPT, DBRX, ChatGLM/GLM-4, ERNIE 4.5, EXAONE,
AFMoE), whose MLP has two matrices rather than a gated three (`mlp_matrices`), and whose input and
output embeddings are one matrix unless the config.json says otherwise (`ties_by_default`).

Each name here is the one transformers' configuration class of the family reads (its
`attribute_map`, or its `__init__` where the map has none; the remote-code ChatGLM reads its own
config.json), and tests/test_estimate_families.py counts the parameters of each family's model,
built by transformers on the meta device, against fleetplan's count from the same config.json.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from fleetplan.planner.capacity.config_keys import ALIASES, check_whole, shape_count

# MLPs of two matrices (up and down, no gate): GPT-2 and its kin (GPT-J, CodeGen, GPT-Neo,
# GPT-NeoX, StarCoder 1 and 2), Falcon, BLOOM, OPT, MPT, Phi-1/2, Persimmon, Nemotron (squared
# ReLU) and Arcee's AFM. Every other family fleetplan sizes is gated: gate, up and down (SwiGLU,
# GeGLU), as Llama is.
TWO_MATRIX_MLP = frozenset(
    {
        "gpt2",
        "gptj",
        "codegen",
        "gpt_neo",
        "gpt_neox",
        "gpt_bigcode",
        "starcoder2",
        "falcon",
        "refinedweb",
        "refinedwebmodel",
        "bloom",
        "opt",
        "mpt",
        "phi",
        "persimmon",
        "nemotron",
        "nemotron_h",  # its MLP blocks and its experts alike (squared ReLU)
        "arcee",
    }
)

# Families whose configuration class ties the embeddings unless the config.json says otherwise
# (transformers' `save_pretrained` then leaves the key out of the file: Gemma's and Cohere's
# configs do); Llama, Qwen2, Mistral, Phi-3 and the rest default to untied. Every version of
# Gemma, Cohere and ERNIE 4.5 (a prefix), and these families by name.
TIED_PREFIXES = ("gemma", "cohere", "ernie4_5")
TIED_BY_DEFAULT = frozenset(
    {
        "gpt2",
        "gpt_bigcode",
        "gpt_neo",
        "starcoder2",
        "falcon",
        "refinedweb",
        "refinedwebmodel",
        "bloom",
        "opt",
        "mpt",
        "jetmoe",
        "smollm3",
    }
)

# Families whose MLP is 4 x the width where the config.json gives none (GPT-2's n_inner null).
FOUR_X_MLP = frozenset(
    {
        "gpt2",
        "gptj",
        "codegen",
        "gpt_neo",
        "gpt_bigcode",
        "falcon",
        "refinedweb",
        "refinedwebmodel",
        "bloom",
    }
)


# Counts that may be 0, under another family's name: shared experts (EXAONE, AFMoE, ERNIE 4.5) and
# the dense layers before the first expert layer (AFMoE), as DeepSeek names them.
COUNTS_FROM_ZERO = {
    "n_shared_experts": ("num_shared_experts", "moe_num_shared_experts", "num_shared_expert"),
    "first_k_dense_replace": ("num_dense_layers",),
}


# What a family's configuration class gives where its config.json is silent (transformers 5.19's
# defaults): Gemma's published multimodal configs leave out the text model's vocabulary and head
# dimension, which Gemma fixes at 256 rather than width / heads (gemma-3-12b-it: 3,840 / 16 = 240).
FAMILY_DEFAULTS = {
    "gemma": {"vocab_size": 256_000, "head_dim": 256},
    "gemma2": {"vocab_size": 256_000, "head_dim": 256},
    "gemma3_text": {"vocab_size": 262_208, "head_dim": 256},
    "gemma3n_text": {"vocab_size": 262_400, "head_dim": 256},
}


def _uniform(value: object) -> object:
    """A per-layer list of one number (Hunyuan's `moe_topk: [8, 8, ...]`) as that number; any
    other value as it is."""
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        return value[0] if all(v == value[0] for v in value) else value
    return value


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def family(config: Mapping) -> str:
    """The config.json's `model_type`, lower case ("" where it gives none)."""
    return str(config.get("model_type", "") or "").lower()


def mlp_matrices(config: Mapping) -> int:
    """The matrices of width hidden x intermediate in one dense MLP: 2 for the families of
    `TWO_MATRIX_MLP`, 3 (gate, up, down) for every other."""
    return 2 if family(config) in TWO_MATRIX_MLP else 3


def ties_by_default(config: Mapping) -> bool:
    name = family(config)
    return name in TIED_BY_DEFAULT or name.startswith(TIED_PREFIXES)


def standard_config(config: Mapping) -> Mapping:
    """`config` with the shape's standard names (Llama's: num_hidden_layers, hidden_size,
    num_key_value_heads, intermediate_size, ...) filled in from the family's own names where the
    standard ones are missing; never over a standard name the config.json gives. Each name read
    is checked as a shape's count, an InputError naming it."""
    config = {key: _uniform(value) for key, value in config.items()}
    out = dict(config)
    for key, value in FAMILY_DEFAULTS.get(family(config), {}).items():
        out.setdefault(key, value)
    attention, ffn = (_nested(config, key) for key in ("attn_config", "ffn_config"))
    for standard, names in ALIASES.items():
        given = [(where, n) for where in (config, ffn) for n in names if where.get(n) is not None]
        if out.get(standard) is None and given:
            out[standard] = int(shape_count(*given[0]) or 0)  # given: never None
    for standard, names in COUNTS_FROM_ZERO.items():
        given = [config.get(name) for name in names if config.get(name) is not None]
        if out.get(standard) is None and given and _whole(given[0]):
            out[standard] = given[0]
    kv_heads = _kv_heads(config, attention)
    if out.get("num_key_value_heads") is None and kv_heads is not None:
        out["num_key_value_heads"] = int(kv_heads)
    hidden = shape_count(out, "hidden_size")
    if out.get("intermediate_size") is None and hidden is not None:
        width = _default_mlp_width(config, hidden)
        if width is not None:
            out["intermediate_size"] = int(width)
    out.update(_ernie_expert_layers(config, out))
    out.update(_shared_mlp(config))
    out.pop("ffn_config", None)  # read above: DBRX's experts are now the standard keys
    return out


def _nested(config: Mapping, key: str) -> Mapping:
    """DBRX's and MPT's nested attn_config / ffn_config ({} where the config has none)."""
    value = config.get(key)
    return value if isinstance(value, Mapping) else {}


def _kv_heads(config: Mapping, attention: Mapping) -> float | None:
    """The KV heads of a family that counts them in its own words: Falcon's num_kv_heads (its
    new decoder, else one KV head where multi_query, as StarCoder 1's), ChatGLM's
    multi_query_group_num, DBRX's and MPT's attn_config.kv_n_heads."""
    if config.get("new_decoder_architecture") or family(config) == "refinedweb":
        for name in ("num_kv_heads", "n_head_kv"):
            if config.get(name) is not None:
                return shape_count(config, name)
    if config.get("multi_query") is True:
        return 1.0
    if config.get("multi_query_attention") is True:
        return shape_count(config, "multi_query_group_num")
    if attention.get("kv_n_heads") is not None:
        kind = attention.get("attn_type")
        if kind in (None, "grouped_query_attention") or family(config) == "dbrx":
            return shape_count(attention, "kv_n_heads")
    if attention.get("attn_type") == "multiquery_attention":
        return 1.0
    return None


def _default_mlp_width(config: Mapping, hidden: float) -> float | None:
    """The MLP's width where the config.json names none: MPT's expansion_ratio x d_model, 4 x
    the width for the `FOUR_X_MLP` families (their configuration classes' default)."""
    if family(config) == "mpt":
        ratio = config.get("expansion_ratio", 4)
        if isinstance(ratio, int | float) and not isinstance(ratio, bool) and ratio > 0:
            width = float(math.floor(ratio * hidden))
            check_whole("expansion_ratio x d_model", width)
            return width
        return None
    return 4.0 * hidden if family(config) in FOUR_X_MLP else None


def _shared_mlp(config: Mapping) -> dict:
    """A shared expert named otherwise (Nemotron 3's moe_shared_expert_intermediate_size,
    Granite 4.0-H's and MiniMax's shared_intermediate_size) as Qwen-MoE names it; Granite's
    shared MLP without routed experts is its dense MLP."""
    for name in ("moe_shared_expert_intermediate_size", "shared_intermediate_size"):
        width = config.get(name)
        if width is None or config.get("shared_expert_intermediate_size") is not None:
            continue
        routed = config.get("num_local_experts", config.get("n_routed_experts"))
        if family(config) == "granitemoehybrid" and routed in (None, 0):
            return {"intermediate_size": width}
        return {"shared_expert_intermediate_size": width, "n_shared_experts": None}
    return {}


def _ernie_expert_layers(config: Mapping, standard: Mapping) -> dict:
    """ERNIE 4.5's expert layers (moe_layer_start_index to moe_layer_end_index, every
    moe_layer_interval-th) as Qwen-MoE names them: the dense layers in mlp_only_layers and the
    step in decoder_sparse_step."""
    start, end = config.get("moe_layer_start_index"), config.get("moe_layer_end_index")
    layers = standard.get("num_hidden_layers")
    if not isinstance(layers, int | float) or (start is None and end is None):
        return {}
    first = start if isinstance(start, int) and not isinstance(start, bool) else 0
    last = end if isinstance(end, int) and not isinstance(end, bool) else int(layers) - 1
    dense = [i for i in range(int(layers)) if i < first or i > last]
    found = {"mlp_only_layers": dense, "first_k_dense_replace": None}
    interval = config.get("moe_layer_interval")
    if isinstance(interval, int) and not isinstance(interval, bool) and interval > 1:
        found["decoder_sparse_step"] = interval
    return found
