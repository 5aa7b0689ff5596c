"""Hybrid and recurrent models (`config_recurrent`): the layers of a config.json that keep a
state per sequence instead of a KV cache, which layers still cache keys and values, the bytes of
a sequence's state and the parameters of the recurrent layers.

The state of one layer for one sequence, as vLLM sizes it (`MambaStateShapeCalculator` in
vllm/model_executor/layers/mamba/mamba_utils.py; its dtypes in `MambaStateDtypeCalculator`):

- Mamba (Mamba 1: Falcon Mamba, Jamba): a convolution state of (d_conv - 1) x d_inner and an SSM
  state of d_inner x d_state, d_inner = expand x d_model;
- Mamba 2 (Nemotron-H, Nemotron 3, Falcon-H1, Granite 4.0-H, Bamba, Zamba 2's Mamba layers):
  (d_conv - 1) x (d_inner + 2 x n_groups x d_state) of convolution and heads x head_dim x
  d_state of SSM state, d_inner = heads x head_dim;
- Gated DeltaNet (Qwen3-Next, Qwen3.5): (kernel - 1) x (2 x key heads x key dim + value heads x
  value dim) of convolution and value heads x key dim x value dim of recurrent state;
- lightning attention (MiniMax-M1 and Text-01's linear layers): heads x head_dim x head_dim.

The convolution state is in the model's dtype, the SSM (temporal) state in
`mamba_ssm_cache_dtype` (or Qwen3.5's `mamba_ssm_dtype`) where the config.json names one, as
vLLM's config hooks read them, else in the model's dtype too (vLLM's `--mamba-ssm-cache-dtype`
auto). Speculative decoding's extra convolution rows are not counted.

Which layer is which: `layer_types` ("linear_attention", "mamba" beside the attention kinds),
Nemotron-H's `hybrid_override_pattern` (M Mamba 2, * attention, - MLP, E experts: one block
each), MiniMax's `attn_type_list` (0 lightning, 1 softmax), Jamba's `attn_layer_period` /
`attn_layer_offset` (and its `expert_layer_period` / `expert_layer_offset`), Bamba's
`attn_layer_indices`, Qwen3-Next's `full_attention_interval`; Falcon-H1 runs attention and
Mamba 2 side by side in every layer; Mamba, Mamba 2 and Falcon Mamba have no attention.

What it cannot size it refuses naming the key: RWKV, xLSTM, RecurrentGemma's `block_types`, a
layer kind it does not know (LFM2's short convolutions), Kimi Linear's delta attention, and a
recurrent layer whose shape the config.json does not give.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.config_keys import positive

SHAPE_LIMIT = 1_048_576  # the most of any recurrent layer's figure (a width's limit)

# Layer kinds whose cache is a key and a value per token (a sliding window's or a chunk's is
# counted whole: more than the engine keeps, so the bounds stay bounds and the cache smaller)
ATTENTION_LAYERS = ("full_attention", "sliding_attention", "chunked_attention", "attention")
# Layer kinds of `layer_types` that keep a state: Qwen3-Next / Qwen3.5's Gated DeltaNet,
# Granite 4.0-H's Mamba 2
RECURRENT_KINDS = {"linear_attention": "gated_deltanet", "mamba": "mamba2"}
# Keys that say a layer keeps a recurrent state; a config.json with one and no family
# `config_recurrent` knows is refused naming it.
HYBRID_KEYS = (
    "linear_num_value_heads",
    "mamba_d_state",
    "mamba_expand",
    "ssm_cfg",
    "attn_layer_period",
    "hybrid_override_pattern",
    "state_size",  # Mamba, Mamba 2, Falcon Mamba: no attention at all
    "ssm_state_size",
    "mamba_n_heads",
    "attention_hidden_size",  # RWKV
    "linear_attn_config",  # Kimi Linear's delta attention
)
# Families whose layers keep a state that fleetplan cannot size, known by name (xLSTM names no
# key), and those without attention it can.
UNSIZED_FAMILIES = frozenset({"rwkv", "rwkv5", "rwkv6", "rwkv7", "xlstm", "kimi_linear"})
MAMBA1_FAMILIES = frozenset({"mamba", "falcon_mamba"})
# Names of a Mamba layer's figures, the first given read (Nemotron-H, Falcon-H1 / Granite /
# Bamba, Jamba, Mamba 2)
NAMES = {
    "heads": ("mamba_num_heads", "mamba_n_heads"),
    "head_dim": ("mamba_head_dim", "mamba_d_head"),
    "groups": ("n_groups", "mamba_n_groups"),
    "state": ("ssm_state_size", "mamba_d_state", "state_size"),
    "conv": ("conv_kernel", "mamba_d_conv", "d_conv"),
    "expand": ("mamba_expand", "expand"),
    "inner": ("mamba_d_ssm",),
    "dt_rank": ("mamba_dt_rank", "time_step_rank"),
}
SSM_DTYPE_KEYS = ("mamba_ssm_cache_dtype", "mamba_ssm_dtype")
KIND_WORDS = {
    "mamba": "Mamba",
    "mamba2": "Mamba 2",
    "gated_deltanet": "Gated DeltaNet",
    "lightning": "lightning (linear) attention",
}


@dataclass(frozen=True, slots=True)
class Recurrent:
    """The recurrent layers of a hybrid (or attention-free) model: `layers` of `kind`, each
    keeping `conv_elements` + `ssm_elements` per sequence (the latter in `ssm_dtype` where
    the config.json names it), beside `attention_layers` caching KV; `mixer_parameters` of
    each recurrent layer's mixer; attention with an output gate (`gated_attention`: Qwen3-Next's
    query projection twice as wide); the layers with an MLP and those with experts where
    not every layer has one (Nemotron-H's blocks, Jamba's expert period; None: every layer)."""

    kind: str
    layers: int
    attention_layers: int
    conv_elements: float
    ssm_elements: float
    ssm_dtype: str | None
    mixer_parameters: float
    total_layers: int = 0
    gated_attention: bool = False
    mlp_layers: int | None = None
    expert_layers: int | None = None

    def state_bytes(self, element: float, ssm_element: float | None) -> float:
        """A sequence's state over all recurrent layers: convolution at `element` bytes, the
        SSM state at `ssm_element` (its dtype's bytes) or `element`."""
        ssm = ssm_element or element
        return self.layers * (self.conv_elements * element + self.ssm_elements * ssm)

    @property
    def words(self) -> str:
        """ "a hybrid: 36 Gated DeltaNet layers ..., 12 of 48 layers attention"."""
        attention = (
            f"{self.attention_layers} of {self.total_layers} layers attention (caching KV)"
            if self.attention_layers
            else "no attention layer (no KV cache)"
        )
        kind = KIND_WORDS[self.kind]
        what = "a hybrid" if self.attention_layers else "a recurrent model"
        return f"{what}: {self.layers} {kind} layers keep a state per sequence, {attention}"


def _number(config: Mapping, names: Sequence[str]) -> float | None:
    """The first of `names` the config gives, a whole count from 1 ("auto": None)."""
    for name in names:
        value = config.get(name)
        if value is None or value == "auto":
            continue
        found = positive(config, name)
        assert found is not None
        if found != int(found) or found > SHAPE_LIMIT:
            raise InputError(
                f"{name} must be a whole number from 1 to {SHAPE_LIMIT:,}, got {found:g}",
                field=name,
            )
        return found
    return None


def _need(config: Mapping, key: str, value: float | None, family: str) -> float:
    if value is None:
        raise InputError(
            f"the model's config.json has no {key}: a {family} layer's recurrent state cannot be "
            "sized without it",
            field=key,
        )
    return value


def _refuse_unsized(config: Mapping) -> None:
    """Refuse, naming the key, recurrent layers `config_recurrent` cannot size."""
    name = str(config.get("model_type", "") or "").lower()
    if name in UNSIZED_FAMILIES:
        key = "linear_attn_config" if "linear_attn_config" in config else "model_type"
        key = "attention_hidden_size" if "attention_hidden_size" in config else key
        _refuse(key, [name])
    kinds = config.get("block_types")
    if isinstance(kinds, list) and set(map(str, kinds)) - set(ATTENTION_LAYERS):
        _refuse("block_types", sorted(set(map(str, kinds)) - set(ATTENTION_LAYERS)))
    kinds = config.get("layer_types")
    if isinstance(kinds, list):
        other = set(map(str, kinds)) - set(ATTENTION_LAYERS) - set(RECURRENT_KINDS)
        if other:
            _refuse("layer_types", sorted(other))
    if "ssm_cfg" in config:
        _refuse("ssm_cfg", ["mamba_ssm's own config.json"])


def _refuse(key: str, other: list[str]) -> None:
    shown = f" ({', '.join(other)})" if other else ""
    raise InputError(
        f"{key}{shown} in the model's config.json: layers that keep a recurrent state fleetplan "
        "cannot size (it sizes Mamba, Mamba 2, Gated DeltaNet and lightning attention layers "
        "beside attention); give fleetplan_weight_bytes for its weights, and its state is "
        "still unknown",
        field=key,
    )


def _layout(config: Mapping, layers: int) -> tuple[str, list[str], str] | None:
    """(the recurrent kind, each layer's kind: "attention", "recurrent" or "both", the key that
    said so); None for a model of attention layers only."""
    name = str(config.get("model_type", "") or "").lower()
    kinds = config.get("layer_types")
    if isinstance(kinds, list) and set(map(str, kinds)) & set(RECURRENT_KINDS):
        found = [str(k) for k in kinds][:layers]
        kind = next(RECURRENT_KINDS[k] for k in found if k in RECURRENT_KINDS)
        return (
            kind,
            ["recurrent" if k in RECURRENT_KINDS else "attention" for k in found],
            ("layer_types"),
        )
    pattern = config.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        return "mamba2", [_block(c) for c in pattern], "hybrid_override_pattern"
    linear = config.get("attn_type_list")
    if isinstance(linear, list) and 0 in linear:
        return (
            "lightning",
            ["recurrent" if k == 0 else "attention" for k in linear],
            "attn_type_list",
        )
    if "linear_num_value_heads" in config:
        every = _number(config, ("full_attention_interval",)) or 4
        return (
            "gated_deltanet",
            ["attention" if (i + 1) % int(every) == 0 else "recurrent" for i in range(layers)],
            "linear_num_value_heads",
        )
    period = config.get("attn_layer_period")
    if period is not None:
        step = int(_number(config, ("attn_layer_period",)) or 1)
        offset = config.get("attn_layer_offset", 0)
        offset = offset if isinstance(offset, int) and not isinstance(offset, bool) else 0
        return (
            "mamba",
            ["attention" if i % step == offset else "recurrent" for i in range(layers)],
            "attn_layer_period",
        )
    listed = config.get("attn_layer_indices")
    if isinstance(listed, list) and any(k in config for k in NAMES["heads"]):
        return (
            "mamba2",
            ["attention" if i in listed else "recurrent" for i in range(layers)],
            "attn_layer_indices",
        )
    if name == "falcon_h1":
        return "mamba2", ["both"] * layers, "model_type"
    if name in MAMBA1_FAMILIES:
        return "mamba", ["recurrent"] * layers, "model_type"
    if name == "mamba2":
        return "mamba2", ["recurrent"] * layers, "model_type"
    return None


def _state_key(config: Mapping) -> str:
    """The family's name of a Mamba layer's state size: Mamba's and Mamba 2's state_size,
    Jamba's, Falcon-H1's, Granite's and Bamba's mamba_d_state, Nemotron-H's ssm_state_size."""
    if str(config.get("model_type", "")) in (*MAMBA1_FAMILIES, "mamba2"):
        return "state_size"
    jamba_like = "attn_layer_period" in config or any(k.startswith("mamba_d_") for k in config)
    return "mamba_d_state" if jamba_like or "mamba_n_heads" in config else "ssm_state_size"


def _block(char: str) -> str:
    """A Nemotron-H block: M Mamba 2, * attention, - an MLP, E experts (no mixer)."""
    return {"M": "recurrent", "*": "attention"}.get(char, "mlp" if char == "-" else "experts")


def config_recurrent(
    config: Mapping, *, layers: int | None, hidden: float | None, heads: float | None
) -> Recurrent | None:
    """The recurrent layers of a config.json read as the standard names (`Recurrent`); None for
    a model of attention layers only. An InputError names the key of what it cannot size."""
    _refuse_unsized(config)
    pattern = config.get("hybrid_override_pattern")
    count = len(pattern) if isinstance(pattern, str) and pattern else layers
    if count is None:
        return None
    layout = _layout(config, int(count))
    if layout is None:
        key = next((k for k in HYBRID_KEYS if k in config), None)
        if key is not None:
            _refuse(key, [])
        return None
    kind, per_layer, key = layout
    hidden = _need(config, "hidden_size", hidden, KIND_WORDS[kind])
    recurrent = sum(1 for k in per_layer if k in ("recurrent", "both"))
    attention = sum(1 for k in per_layer if k in ("attention", "both"))
    conv, ssm, mixer = _shape(config, kind, hidden, heads)
    mlp_layers = expert_layers = None
    if key == "hybrid_override_pattern":
        mlp_layers = sum(1 for k in per_layer if k in ("mlp", "experts"))
        expert_layers = sum(1 for k in per_layer if k == "experts")
    elif key == "model_type" and kind in ("mamba", "mamba2") and "both" not in per_layer:
        mlp_layers = expert_layers = 0  # Mamba blocks only: no MLP
    elif config.get("expert_layer_period") is not None:
        step = int(_number(config, ("expert_layer_period",)) or 1)
        offset = config.get("expert_layer_offset", 0)
        offset = offset if isinstance(offset, int) and not isinstance(offset, bool) else 0
        expert_layers = sum(1 for i in range(len(per_layer)) if i % step == offset)
    dtype = next((config[k] for k in SSM_DTYPE_KEYS if isinstance(config.get(k), str)), None)
    gated = kind == "gated_deltanet" and config.get("attn_output_gate", True) is not False
    return Recurrent(
        kind=kind,
        layers=recurrent,
        attention_layers=attention,
        conv_elements=conv,
        ssm_elements=ssm,
        ssm_dtype=dtype,
        mixer_parameters=mixer,
        total_layers=len(per_layer),
        gated_attention=gated,
        mlp_layers=mlp_layers,
        expert_layers=expert_layers,
    )


def _shape(
    config: Mapping, kind: str, hidden: float, heads: float | None
) -> tuple[float, float, float]:
    """(convolution elements, SSM state elements, mixer parameters) of one recurrent layer."""
    family = KIND_WORDS[kind]
    if kind == "gated_deltanet":
        v_heads = _need(
            config, "linear_num_value_heads", _number(config, ("linear_num_value_heads",)), family
        )
        k_heads = _need(
            config, "linear_num_key_heads", _number(config, ("linear_num_key_heads",)), family
        )
        k_dim = _need(
            config, "linear_key_head_dim", _number(config, ("linear_key_head_dim",)), family
        )
        v_dim = _need(
            config, "linear_value_head_dim", _number(config, ("linear_value_head_dim",)), family
        )
        kernel = _number(config, ("linear_conv_kernel_dim",)) or 4
        keys, values = k_heads * k_dim, v_heads * v_dim
        channels = 2 * keys + values
        # q, k, v and the output gate z; the decay and beta (b, a) per value head; the
        # convolution; A and dt per value head; a norm of the value dimension; the output
        mixer = hidden * (2 * keys + 2 * values + 2 * v_heads) + channels * kernel
        mixer += 2 * v_heads + v_dim + values * hidden
        return (kernel - 1) * channels, v_heads * k_dim * v_dim, mixer
    if kind == "lightning":
        heads = _need(config, "num_attention_heads", heads, family)
        head_dim = _number(config, ("head_dim",)) or hidden / heads
        # q, k, v, the output gate and the output projection, a norm
        return 0.0, heads * head_dim * head_dim, 5 * hidden * heads * head_dim + heads * head_dim
    state = _need(config, _state_key(config), _number(config, NAMES["state"]), family)
    kernel = _number(config, NAMES["conv"]) or 4
    expand = _number(config, NAMES["expand"]) or 2
    if kind == "mamba":
        inner = (
            _number(config, ("intermediate_size",))
            if config.get("model_type") in MAMBA1_FAMILIES
            else None
        )
        inner = inner or expand * hidden
        rank = _number(config, NAMES["dt_rank"]) or math.ceil(hidden / 16)
        # in (x and z), the convolution (and its bias), x to dt, B and C, dt up (and its bias),
        # A, D, the output
        mixer = hidden * 2 * inner + inner * (kernel + 1) + inner * (rank + 2 * state)
        mixer += rank * inner + inner + inner * state + inner + inner * hidden
        return (kernel - 1) * inner, inner * state, mixer
    heads_n = _number(config, NAMES["heads"])
    if heads_n is None and str(config.get("model_type")) == "mamba2":
        heads_n = _number(config, ("num_heads",))
    head_dim = _number(config, NAMES["head_dim"])
    if head_dim is None and str(config.get("model_type")) == "mamba2":
        head_dim = _number(config, ("head_dim",))
    inner = _number(config, NAMES["inner"])
    if heads_n is None:
        raise InputError(
            "the model's config.json has no mamba_num_heads (nor mamba_n_heads): a Mamba 2 "
            "layer's state cannot be sized without its heads",
            field="mamba_num_heads",
        )
    inner = inner or (heads_n * head_dim if head_dim else expand * hidden)
    head_dim = head_dim or inner / heads_n
    groups = _number(config, NAMES["groups"]) or 1
    channels = inner + 2 * groups * state
    # in (x, z, B, C, dt), the convolution (and its bias), A, D and dt's bias, a norm, the output
    mixer = hidden * (2 * inner + 2 * groups * state + heads_n) + channels * (kernel + 1)
    mixer += 3 * heads_n + inner + inner * hidden
    return (kernel - 1) * channels, heads_n * head_dim * state, mixer
