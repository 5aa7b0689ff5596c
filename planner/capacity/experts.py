"""A mixture of experts' layout from its config.json (`config_experts`): how many routed experts,
how many a token uses, which layers route and how wide each expert is (Mixtral, gpt-oss, Qwen-MoE,
OLMoE, DeepSeek-V2/V3, Llama 4 shapes)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.config_keys import shape_count

# config.json keys that count a mixture of experts' routed experts (Mixtral, gpt-oss: num_local_
# experts; Qwen-MoE, OLMoE: num_experts; DeepSeek-V2/V3: n_routed_experts) and the experts each
# token is routed to; above 1 expert, the model is a mixture of experts.
EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")
TOP_K_KEYS = ("num_experts_per_tok", "experts_per_token")


@dataclass(frozen=True, slots=True)
class Experts:
    """A mixture of experts' layout from its config.json: `count` routed experts in each of
    `layers` expert layers, `top_k` of them per token, each a gated MLP of width `width`; the
    other layers' MLP is dense (`dense_width`), and `shared_width` is the width of the experts
    every token also goes through (Qwen2-MoE's shared expert, DeepSeek's n_shared_experts)."""

    count: int
    top_k: int
    layers: int
    width: float
    dense_width: float | None
    shared_width: float


def _expert_layers(config: Mapping, layers: int) -> int:
    """How many of the `layers` layers route to experts: DeepSeek's first_k_dense_replace
    layers are dense, Qwen-MoE's every decoder_sparse_step-th layer (Llama 4's
    interleave_moe_layer_step-th) routes unless it is in mlp_only_layers; all of them otherwise
    (Mixtral, OLMoE, gpt-oss)."""
    first_dense = config.get("first_k_dense_replace")
    step = config.get("decoder_sparse_step", config.get("interleave_moe_layer_step"))
    only_mlp = config.get("mlp_only_layers")
    listed_dense = only_mlp if isinstance(only_mlp, list) else []
    dense = {i for i in listed_dense if isinstance(i, int) and not isinstance(i, bool)}
    if isinstance(first_dense, int) and not isinstance(first_dense, bool) and first_dense > 0:
        dense |= set(range(min(first_dense, layers)))
    every = step if isinstance(step, int) and not isinstance(step, bool) and step > 1 else 1
    listed = config.get("moe_layers")  # Llama 4's explicit list of expert layers
    if isinstance(listed, list) and listed and not dense:
        return len({i for i in listed if isinstance(i, int) and 0 <= i < layers})
    return sum(1 for i in range(layers) if (i + 1) % every == 0 and i not in dense)


def unused_dense_width(config: Mapping) -> bool:
    """An intermediate_size of 0 beside an expert count: no dense MLP (some Qwen3-MoE copies)."""
    return config.get("intermediate_size") == 0 and any(
        config.get(name) is not None for name in EXPERT_KEYS
    )


def config_experts(config: Mapping) -> Experts | None:
    """The mixture of experts a config.json describes (`Experts`); None for a dense model (no
    expert count, or one expert). An InputError names the key where the config gives experts
    fleetplan cannot size: no count of experts per token or no expert MLP width. Other
    families' names for them (DBRX's ffn_config, ERNIE's moe_k) are read as these
    (`config_families.standard_config`)."""
    key = next((name for name in EXPERT_KEYS if config.get(name) is not None), None)
    if key is None:
        moe_width = config.get("moe_intermediate_size")
        if moe_width is not None and moe_width != 0:
            raise InputError(
                f"moe_intermediate_size is {moe_width!r} in the model's config.json but no "
                f"count of experts ({', '.join(EXPERT_KEYS)}): a mixture of experts fleetplan "
                "cannot size",
                field="moe_intermediate_size",
            )
        return None
    count = config.get(key)
    if isinstance(count, int | float) and not isinstance(count, bool) and count in (0, 1):
        return None  # one expert (or none) is a dense MLP
    count = shape_count(config, key)
    layers = shape_count(config, "num_hidden_layers", "n_layer")
    top = next((name for name in TOP_K_KEYS if config.get(name) is not None), None)
    top_k = shape_count(config, top) if top else None
    if top_k is None or layers is None:
        raise InputError(
            f"{key} is {int(count)} in the model's config.json (a mixture of experts) but it "
            "gives no num_experts_per_tok: how many experts each token is routed to",
            field="num_experts_per_tok",
        )
    if top_k > count:
        raise InputError(
            f"num_experts_per_tok ({int(top_k)}) is more than the {int(count)} experts ({key})",
            field="num_experts_per_tok",
        )
    moe_width = config.get("moe_intermediate_size")
    width_key = "moe_intermediate_size" if moe_width else "intermediate_size"
    width = None if unused_dense_width(config) and not moe_width else shape_count(config, width_key)
    if width is None:
        raise InputError(
            f"{key} is {int(count)} in the model's config.json but it gives no expert width "
            "(moe_intermediate_size or intermediate_size)",
            field="moe_intermediate_size",
        )
    dense_key = (
        "intermediate_size_mlp" if config.get("intermediate_size_mlp") else "intermediate_size"
    )
    dense_width = None if unused_dense_width(config) else shape_count(config, dense_key)
    # 0: no shared expert (Qwen3-Coder-480B-A35B's config.json says so)
    no_shared = config.get("shared_expert_intermediate_size") == 0
    shared = 0.0 if no_shared else shape_count(config, "shared_expert_intermediate_size") or 0.0
    if str(config.get("model_type", "")).startswith("llama4"):
        shared += width  # Llama 4: one shared expert beside the routed ones in each expert layer
    if config.get("n_shared_experts") not in (None, 0):  # DeepSeek's shared experts
        shared += (shape_count(config, "n_shared_experts") or 0.0) * width
    return Experts(
        count=int(count),
        top_k=int(top_k),
        layers=_expert_layers(config, int(layers)),
        width=float(width),
        dense_width=dense_width,
        shared_width=float(shared),
    )
