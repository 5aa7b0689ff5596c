"""Multi-head latent attention (DeepSeek-V2/V3/R1, Kimi K2): what its config.json says of its
KV cache and its attention weights.

Latent attention caches, per layer and token, one compressed latent of `kv_lora_rank` values
and one rotary key of `qk_rope_head_dim` values, shared by all heads, instead of a key and a
value per KV head: kv_lora_rank + qk_rope_head_dim values a layer (576 for DeepSeek-V3: 70 KB a
token in 16 bits over 61 layers, where 128 heads of 128 would be 4 MB). Engines (vLLM, SGLang)
keep that latent whole on every GPU of a tensor-parallel group: it is replicated, not split, as
a cache of one KV head is.

The attention's weights (per layer): the query, through a low-rank `q_lora_rank` where given
(hidden x q_lora_rank + q_lora_rank x heads x (qk_nope_head_dim + qk_rope_head_dim), else
hidden x heads x that), the latent and rotary key (hidden x (kv_lora_rank + qk_rope_head_dim)),
their expansion to the heads' keys and values (kv_lora_rank x heads x (qk_nope_head_dim +
v_head_dim)), and the output (heads x v_head_dim x hidden). With DeepSeek-V3's figures and its
experts this counts 671 billion parameters, 37 billion a token: its model card's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.config_keys import shape_count

KEYS = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")


@dataclass(frozen=True, slots=True)
class Latent:
    """One layer's latent attention: the values cached a token (`cached`) and the attention's
    weights (`parameters`)."""

    cached: int
    parameters: float


def _count(config: Mapping, name: str) -> int:
    """A figure latent attention needs, checked as a shape's count (`shape_count`); an
    InputError names it where the config.json gives kv_lora_rank but not it."""
    value = shape_count(config, name)
    if value is None:
        raise InputError(
            f"kv_lora_rank is in the model's config.json (multi-head latent attention) but "
            f"{name} is not",
            field=name,
        )
    return int(value)


def config_latent(config: Mapping, hidden: float | None, heads: float) -> Latent | None:
    """The latent attention a config.json describes (None without `kv_lora_rank`); an
    InputError names a figure it lacks or gives out of range. `hidden` None: the weights are
    not counted (0)."""
    if config.get("kv_lora_rank") is None:
        return None
    rank, rope, nope, value = (_count(config, name) for name in KEYS)
    q_rank = shape_count(config, "q_lora_rank")
    if hidden is None:
        return Latent(cached=rank + rope, parameters=0.0)
    head = nope + rope
    query = hidden * q_rank + q_rank * heads * head if q_rank else hidden * heads * head
    latent = hidden * (rank + rope) + rank * heads * (nope + value)
    output = heads * value * hidden
    return Latent(cached=rank + rope, parameters=query + latent + output)
