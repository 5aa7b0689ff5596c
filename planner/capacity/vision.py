"""A multimodal model's vision encoder (its config.json's `vision_config`), sized: its weights
are in memory beside the language model's, where they take room from the KV cache, though no
text request runs them (`Architecture.resident_bytes`).

Per layer, attention's four width x width matrices and the MLP's two (GELU: SigLIP, Qwen's
ViTs) or three (gated, SiLU: Pixtral) width x MLP-width ones; the patch embedding; where the
encoder projects to the language model (`out_hidden_size`, Qwen's merger of `spatial_merge_size`
squared patches), the merger's two matrices, once more for each layer it also feeds the
language model from (`deepstack_visual_indexes`, Qwen3-VL). Biases, norms and position
tables are left out: transformers 5.19, building the models on the meta device, counts 0.576
billion for Qwen3-VL-8B's encoder and merger (here 0.573) and 0.421 for gemma-3-12b-it's SigLIP
and projector (here 0.412); Pixtral's (Ministral 3) comes to 0.40 here.
"""

from __future__ import annotations

from collections.abc import Mapping

_LAYERS = ("depth", "num_hidden_layers", "num_layers")
_WIDTH = ("hidden_size", "embed_dim", "width")
_MLP = ("intermediate_size", "mlp_dim")
_GATED = ("silu", "swiglu")


def vision_parameters(config: Mapping) -> float:
    """The vision encoder's parameters (0 where the config.json has no `vision_config`, or
    one fleetplan cannot size: then the language model alone is counted)."""
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        return 0.0
    layers = _first(vision, _LAYERS)
    width = _first(vision, _WIDTH)
    if not layers or not width:
        return 0.0
    mlp = _first(vision, _MLP) or 4 * width
    gated = str(vision.get("hidden_act", "")).lower() in _GATED
    per_layer = 4 * width * width + (3 if gated else 2) * width * mlp
    channels = _first(vision, ("in_channels", "num_channels")) or 3
    patch = _first(vision, ("patch_size",)) or 0
    temporal = _first(vision, ("temporal_patch_size",)) or 1
    total = layers * per_layer + channels * temporal * patch * patch * width
    out = _first(vision, ("out_hidden_size",))
    if out:
        merged = width * (_first(vision, ("spatial_merge_size",)) or 1) ** 2
        deep = vision.get("deepstack_visual_indexes")
        mergers = 1 + (len(deep) if isinstance(deep, list) else 0)
        total += mergers * (merged * merged + merged * out)
    return float(total)


# A vision encoder's counts above this are no encoder's (the largest, InternViT-6B: 48 layers of
# width 3,200): such a config.json is not sized (the language model still is).
_LIMIT = 1_000_000


def _first(config: Mapping, names: tuple[str, ...]) -> float | None:
    for name in names:
        value = config.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= _LIMIT:
            return float(value)
    return None
