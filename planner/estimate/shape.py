"""An identical architecture: a measured model whose shape equals another's, so that its
measured curve stands for the other's (DeepSeek-R1-Distill-Llama-8B is Llama-3.1-8B's shape).

Equal shape: the same layers, KV heads, head dimension, latent (of latent attention) and KV
element bytes, the same experts (count and per token, their weights within 1 %; none for a
dense model), the same recurrent layers and state (a hybrid's, within 1 %), the same blocks
layer by layer (a NAS model's: each layer's attention, KV heads and MLP width), and weights
within 1 % (a parameter count rounded on a model card, a tied or untied embedding of a small
vocabulary difference). What the step model reads is all there;
names, RoPE scaling and vocabularies that do not change a step's time are not compared.
"""

from __future__ import annotations

from collections.abc import Iterable

from fleetplan.planner.capacity.architecture import Architecture

WEIGHT_TOLERANCE = 0.01


def same_shape(a: Architecture, b: Architecture) -> bool:
    return (
        a.layers == b.layers
        and a.kv_heads == b.kv_heads
        and a.head_dim == b.head_dim
        and a.kv_bytes == b.kv_bytes
        and abs(a.weight_bytes - b.weight_bytes) <= WEIGHT_TOLERANCE * max(a.weight_bytes, 1.0)
        and (a.experts, a.experts_per_token) == (b.experts, b.experts_per_token)
        and a.latent_kv == b.latent_kv
        and a.blocks == b.blocks
        and (a.attention_layers, a.recurrent_layers) == (b.attention_layers, b.recurrent_layers)
        and abs(a.state_bytes - b.state_bytes) <= WEIGHT_TOLERANCE * max(a.state_bytes, 1.0)
        and abs(a.expert_bytes - b.expert_bytes) <= WEIGHT_TOLERANCE * max(a.weight_bytes, 1.0)
    )


def identical_architectures(
    wanted: Architecture, measured: Iterable[tuple[str, Architecture]]
) -> list[str]:
    """The measured models (their ids, sorted) of `wanted`'s shape, `wanted` itself left out."""
    return sorted(
        {
            model
            for model, arch in measured
            if model.lower() != wanted.model.lower() and same_shape(wanted, arch)
        }
    )
