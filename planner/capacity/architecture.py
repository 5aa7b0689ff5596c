"""A model's architecture: what the physical bounds (`envelope`) and the serving model
(`planner.estimate`) need of it, read from its Hugging Face config.json
(`architecture_from_config`) or the bundled table (`architectures_from_table`,
`sample_data/models/architectures.toml`): layers, KV heads, head dimension, dtypes, the weights'
bytes and, of a mixture of experts, its experts (`config_experts`); with the tensor-parallel
sizes an engine splits it into (`tensor_parallel_problem`). A figure it lacks is unknown, and a
config.json it cannot size is refused naming the key.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.latent_attention import config_latent
from fleetplan.planner.capacity.quantization import kv_cache_bits, quantized_weights

# Bytes per element of the dtypes config.json files and run files name.
DTYPE_BYTES: dict[str, float] = {
    "float32": 4.0,
    "fp32": 4.0,
    "float16": 2.0,
    "fp16": 2.0,
    "half": 2.0,
    "bfloat16": 2.0,
    "bf16": 2.0,
    "auto": 2.0,  # vLLM's "auto": the checkpoint's 16-bit dtype
    "fp8": 1.0,
    "float8": 1.0,
    "float8_e4m3fn": 1.0,
    "float8_e5m2": 1.0,
    "int8": 1.0,
    "int4": 0.5,
}


@dataclass(frozen=True, slots=True)
class Architecture:
    """What the bounds need of a model, with where the figures come from."""

    model: str
    layers: int
    kv_heads: int
    head_dim: int
    kv_bytes: float  # bytes per KV element (the KV cache dtype)
    weight_bytes: float  # the weights' bytes in memory
    source: str
    # The attention (query) heads, where known (a config.json; the bundled table has none):
    # what tensor parallelism splits (`tensor_parallel_problem`).
    heads: int | None = None
    # The longest prompt and output together the model takes (its config.json's
    # max_position_embeddings, scaled as an engine scales it by rope_scaling); None: not given.
    max_context: int | None = None
    # A mixture of experts: the routed experts of each expert layer (None: a dense model), how
    # many of them each token uses, and the bytes of all routed experts of all layers (part of
    # `weight_bytes`; the rest, attention, embeddings, shared experts and the router, every
    # token reads).
    experts: int | None = None
    experts_per_token: int | None = None
    expert_bytes: float = 0.0
    # The parameters a token's matrix products cost at the GPU's 16-bit rate, where the weights'
    # bytes do not tell them (a quantized checkpoint: its active parameters, halved for 8-bit
    # float weights and activations); None: the active weights' bytes over the KV element's.
    compute_parameters: float | None = None
    # Multi-head latent attention (`latent_attention`): the values a layer caches a token (its
    # latent and rotary key, shared by all heads: one KV "head", replicated over tensor
    # parallelism); None: a key and a value per KV head.
    latent_kv: int | None = None

    @property
    def kv_bytes_per_token(self) -> float:
        if self.latent_kv:
            return self.layers * self.latent_kv * self.kv_bytes
        return 2.0 * self.layers * self.kv_heads * self.head_dim * self.kv_bytes

    @property
    def routed(self) -> bool:
        return bool(self.experts and self.experts > 1 and self.expert_bytes > 0)

    def read_bytes(self, tokens: float = 1.0) -> float:
        """The weight bytes a step over `tokens` tokens reads: all of a dense model's; of a
        mixture of experts, the shared part and, per expert layer, each expert some token of
        the step is routed to, E x (1 - (1 - k / E)^n) of the E experts for n tokens routed
        evenly and independently (the expected number of distinct experts k picks each of n
        tokens touch). One token reads its k experts' share, a large batch all of them."""
        if not self.routed:
            return self.weight_bytes
        assert self.experts is not None and self.experts_per_token is not None
        untouched = (1.0 - self.experts_per_token / self.experts) ** max(tokens, 1.0)
        return self.weight_bytes - self.expert_bytes * untouched

    @property
    def active_bytes(self) -> float:
        """The weight bytes one token computes with (its k experts'): all of a dense model's."""
        return self.read_bytes(1.0)


def _positive(config: Mapping, *names: str) -> float | None:
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


def _as_float(value: float) -> float:
    """A number as a float; inf for an int past a float's range (or nan)."""
    try:
        return float(value) if value == value else math.inf
    except OverflowError:
        return math.inf


# The most of each a real model has, with room to spare (the largest public dense models: about
# 130 layers, 128 heads, head dimension 256, width 16,384, MLP width 53,248, vocabularies of
# 262,144, contexts of 10 million tokens): beyond, a config.json is a mistake, not a model. Each
# is a whole number from 1 to its limit; the GPT-2 names (n_layer, n_head, n_embd) count as theirs.
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
}
_ALIASES = {
    "n_layer": "num_hidden_layers",
    "n_head": "num_attention_heads",
    "n_embd": "hidden_size",
}


def _check_whole(name: str, value: float) -> None:
    """A count of a shape (layers, heads, a head's dimension, a width) is a whole number from 1
    to its limit; an InputError names the key otherwise."""
    limit = SHAPE_LIMITS[_ALIASES.get(name, name)]
    if value != int(value) or not 1 <= value <= limit:
        raise InputError(
            f"{name} must be a whole number from 1 to {limit:,}, got {value:g}", field=name
        )


def _shape(config: Mapping, *names: str) -> float | None:
    """The first of `names` the config gives, checked as a shape's count (`_check_whole`);
    None where it gives none."""
    for name in names:
        if config.get(name) is not None:
            value = _positive(config, name)
            assert value is not None
            _check_whole(name, value)
            return value
    return None


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
    layers are dense, Qwen-MoE's every decoder_sparse_step-th layer routes unless it is in
    mlp_only_layers; all of them otherwise (Mixtral, OLMoE, gpt-oss)."""
    first_dense = config.get("first_k_dense_replace")
    step = config.get("decoder_sparse_step")
    only_mlp = config.get("mlp_only_layers")
    dense = set(only_mlp) if isinstance(only_mlp, list) else set()
    if isinstance(first_dense, int) and not isinstance(first_dense, bool) and first_dense > 0:
        dense |= set(range(min(first_dense, layers)))
    every = step if isinstance(step, int) and not isinstance(step, bool) and step > 1 else 1
    return sum(1 for i in range(layers) if (i + 1) % every == 0 and i not in dense)


def _unused_dense_width(config: Mapping) -> bool:
    """An intermediate_size of 0 beside an expert count: no dense MLP (some Qwen3-MoE copies)."""
    return config.get("intermediate_size") == 0 and any(
        config.get(name) is not None for name in EXPERT_KEYS
    )


def config_experts(config: Mapping) -> Experts | None:
    """The mixture of experts a config.json describes (`Experts`); None for a dense model (no
    expert count, or one expert). An InputError names the key where the config gives experts
    fleetplan cannot size: no count of experts per token, no expert MLP width, or DBRX's
    nested ffn_config (unless `fleetplan_weight_bytes` or `fleetplan_parameters` gives the
    weights: then the model is sized as dense, as before)."""
    given = (
        config.get("fleetplan_weight_bytes") is not None
        or config.get("fleetplan_parameters") is not None
    )
    nested = config.get("ffn_config")
    if isinstance(nested, Mapping) and not given:
        for key in ("moe_num_experts", "moe_top_k"):
            value = nested.get(key)
            counted = isinstance(value, int | float) and not isinstance(value, bool)
            if value is not None and not (counted and value in (0, 1)):
                raise InputError(
                    f"ffn_config.{key} is {value!r} in the model's config.json: a mixture of "
                    "experts in DBRX's nested layout, which fleetplan does not read; give the "
                    "weights to go on: fleetplan_weight_bytes (the checkpoint's bytes in "
                    "memory) or fleetplan_parameters (all experts' parameters) in the "
                    "config.json (the estimate then treats the model as dense)",
                    field=f"ffn_config.{key}",
                )
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
    count = _shape(config, key)
    layers = _shape(config, "num_hidden_layers", "n_layer")
    top = next((name for name in TOP_K_KEYS if config.get(name) is not None), None)
    top_k = _shape(config, top) if top else None
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
    width = None if _unused_dense_width(config) and not moe_width else _shape(config, width_key)
    if width is None:
        raise InputError(
            f"{key} is {int(count)} in the model's config.json but it gives no expert width "
            "(moe_intermediate_size or intermediate_size)",
            field="moe_intermediate_size",
        )
    dense_width = None if _unused_dense_width(config) else _shape(config, "intermediate_size")
    shared = _shape(config, "shared_expert_intermediate_size") or 0.0
    shared_count = config.get("n_shared_experts")
    if isinstance(shared_count, int) and not isinstance(shared_count, bool) and shared_count > 0:
        shared += shared_count * width
    return Experts(
        count=int(count),
        top_k=int(top_k),
        layers=_expert_layers(config, int(layers)),
        width=float(width),
        dense_width=dense_width,
        shared_width=float(shared),
    )


def context_length(config: Mapping) -> int | None:
    """The longest prompt and output together the model takes: max_position_embeddings, times a
    rope_scaling factor as vLLM derives a model's length (not for "llama3", "su" or "longrope"
    scaling, whose max_position_embeddings already counts it; YaRN's from its
    original_max_position_embeddings where given); None where not given."""
    base = _shape(config, "max_position_embeddings")
    if base is None:
        return None
    scaling = config.get("rope_scaling")
    if isinstance(scaling, Mapping):
        kind = scaling.get("rope_type", scaling.get("type"))
        factor = scaling.get("factor")
        original = scaling.get("original_max_position_embeddings")
        if (
            kind not in ("llama3", "su", "longrope")
            and isinstance(factor, int | float)
            and not isinstance(factor, bool)
            and math.isfinite(factor)
            and factor > 1
        ):
            if kind == "yarn" and isinstance(original, int) and not isinstance(original, bool):
                # vLLM derives YaRN's length from the original one (DeepSeek-V3: 4,096 x 40)
                base = original * min(float(factor), 1024.0)
            else:
                base = base * min(float(factor), 1024.0)
    return int(base)


def tensor_parallel_problem(
    architecture: Architecture, tp: int, *, strict: bool = True
) -> str | None:
    """Why an engine cannot split the model over `tp` GPUs by tensor parallelism, in words;
    None where it can. vLLM's rules: the attention heads divide by `tp`, and the KV heads do
    too or `tp` is a multiple of them (each then replicated, `tp` / KV heads times). Where the
    attention heads are unknown (the bundled table), `strict` refuses a `tp` above the KV heads
    too: nothing then says that it divides the attention heads."""
    heads, kv = architecture.heads, architecture.kv_heads
    if heads is not None and heads % tp:
        return (
            f"tensor parallel size {tp:,} does not divide the model's {heads} attention heads "
            "(vLLM refuses it)"
        )
    if kv % tp and tp % kv:
        return (
            f"tensor parallel size {tp:,} neither divides the model's {kv} KV heads nor is a "
            "multiple of them (vLLM refuses it)"
        )
    if heads is None and strict and tp > kv:
        return (
            f"tensor parallel size {tp:,} is more than the model's {kv} KV heads, and its "
            "attention heads are not known to check that it divides them (give its config.json)"
        )
    return None


def dtype_bytes(dtype: object) -> float | None:
    """Bytes per element of a dtype's name ("float16", "bfloat16", "fp8"); None if unknown."""
    if not isinstance(dtype, str):
        return None
    return DTYPE_BYTES.get(dtype.strip().lower().removeprefix("torch."))


def estimated_parameters(config: Mapping) -> float | None:
    """Parameters of a decoder (Llama, Qwen2, Mistral, Gemma, Phi-3 shapes; and mixtures of
    experts of Mixtral, Qwen-MoE, OLMoE, gpt-oss shapes) from its config.json: embeddings (twice
    unless tied), per layer the attention projections (query and output of the heads, key and
    value of the KV heads) and gated MLPs of three matrices (a dense layer's; an expert layer's
    routed experts, shared experts and router). Biases and norms are left out (under 0.1 %).
    None where a figure is missing."""
    sizes = _parameter_parts(config)
    return None if sizes is None else sizes[0]


def expert_parameters(config: Mapping) -> float:
    """The routed experts' parameters of all layers (0 for a dense model; `estimated_parameters`
    counts them in)."""
    sizes = _parameter_parts(config)
    return 0.0 if sizes is None else sizes[1]


def _parameter_parts(config: Mapping) -> tuple[float, float, float] | None:
    """(all parameters, the routed experts' among them, the embeddings' among them: input and
    output), None where a figure is missing."""
    hidden = _shape(config, "hidden_size", "n_embd")
    layers = _shape(config, "num_hidden_layers", "n_layer")
    heads = _shape(config, "num_attention_heads", "n_head")
    vocab = _shape(config, "vocab_size")
    experts = config_experts(config)
    inter = None if _unused_dense_width(config) else _shape(config, "intermediate_size")
    if None in (hidden, layers, heads, vocab) or (inter is None and experts is None):
        return None
    kv_heads = _shape(config, "num_key_value_heads") or heads
    head_dim = _shape(config, "head_dim") or hidden / heads
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    latent = config_latent(config, hidden, heads)
    if latent is not None:
        attention = latent.parameters
    tied = bool(config.get("tie_word_embeddings", _ties_by_default(config)))
    embeddings = vocab * hidden * (1 if tied else 2)
    if experts is None:
        return embeddings + layers * (attention + 3 * hidden * inter), 0.0, embeddings
    routed = experts.layers * experts.count * 3 * hidden * experts.width
    dense_layers = layers - experts.layers
    if dense_layers and experts.dense_width is None:
        return None
    dense = dense_layers * 3 * hidden * (experts.dense_width or 0.0)
    per_expert_layer = 3 * hidden * experts.shared_width + hidden * experts.count
    total = embeddings + layers * attention + dense + routed + experts.layers * per_expert_layer
    return total, routed, embeddings


# Model families whose transformers config class ties the input and output embeddings unless the
# config.json says otherwise (Gemma's configs omit the key); Llama, Qwen2, Mistral and Phi-3
# default to untied.
_TIED_BY_DEFAULT = ("gemma",)


def _ties_by_default(config: Mapping) -> bool:
    return str(config.get("model_type", "")).lower().startswith(_TIED_BY_DEFAULT)


def config_width(config: Mapping) -> float | None:
    """The model's width (d_model: hidden_size, or GPT-2's n_embd), checked as a shape's count;
    None where the config.json gives none."""
    return _shape(config, "hidden_size", "n_embd")


def architecture_from_config(
    model: str, config: Mapping, *, source: str, kv_dtype: str | None = None
) -> Architecture:
    """A model's architecture from its Hugging Face config.json (read as a mapping). The weights'
    bytes: `fleetplan_weight_bytes` where given, else `fleetplan_parameters` (or the estimate
    from the shape) x the bytes of `torch_dtype`; the KV cache's elements are `kv_dtype`'s (the
    run's dtype), else `torch_dtype`'s, and either stands for the other where one is missing.
    An InputError names a missing field or one out of its range (`SHAPE_LIMITS`), KV heads that
    do not divide the attention heads, an unknown torch_dtype, a quantized checkpoint whose
    bytes it is not given, and experts it cannot size (`config_experts`). A mixture of experts
    keeps its layout: the routed experts' share of the weights (from the shape's parameter
    counts, applied to given bytes too) is what a step reads only in part."""
    layers = _shape(config, "num_hidden_layers", "n_layer")
    heads = _shape(config, "num_attention_heads", "n_head")
    if layers is None or heads is None:
        missing = "num_hidden_layers" if layers is None else "num_attention_heads"
        raise InputError(f"the model's config.json has no {missing}", field=missing)
    kv_heads = _shape(config, "num_key_value_heads") or heads
    if kv_heads > heads or heads % kv_heads:
        raise InputError(
            f"num_key_value_heads ({int(kv_heads)}) must divide the {int(heads)} attention heads "
            "(num_attention_heads): each KV head serves a whole group of them",
            field="num_key_value_heads",
        )
    width = config_width(config)
    for name in ("intermediate_size", "vocab_size"):
        if not (name == "intermediate_size" and _unused_dense_width(config)):
            _shape(config, name)
    max_context = context_length(config)
    head_dim = _shape(config, "head_dim")
    if head_dim is None:
        if width is None:
            raise InputError(
                "the model's config.json has no head_dim or hidden_size", field="head_dim"
            )
        head_dim = width / heads
        _check_whole("head_dim", head_dim)
    experts = config_experts(config)
    latent = config_latent(config, width, heads)
    if latent is not None:  # one latent "head" a layer, replicated over tensor parallelism
        kv_heads = 1
    dtype_key = "torch_dtype" if config.get("torch_dtype") is not None else "dtype"
    weight_dtype = config.get(dtype_key)
    if weight_dtype is not None and dtype_bytes(weight_dtype) is None:
        raise InputError(
            f"{dtype_key} {weight_dtype!r} in the model's config.json is not a dtype fleetplan "
            f"knows ({', '.join(sorted(DTYPE_BYTES))})",
            field=dtype_key,
        )
    element = dtype_bytes(weight_dtype) or dtype_bytes(kv_dtype)
    kv_bits = kv_cache_bits(config.get("quantization_config"))
    kv_element = dtype_bytes(kv_dtype) or (kv_bits / 8 if kv_bits else None) or element
    if kv_element is None or element is None:
        raise InputError(
            f"the model's dtype ({weight_dtype!r} in its config.json, {kv_dtype!r} in the run) "
            f"is not one fleetplan knows ({', '.join(sorted(DTYPE_BYTES))})",
            field="torch_dtype",
        )
    weights = _weights(config, experts, element)
    return Architecture(
        model=model,
        layers=int(layers),
        kv_heads=int(kv_heads),
        head_dim=int(head_dim),
        kv_bytes=kv_element,
        weight_bytes=weights.weight_bytes,
        source=source + weights.words,
        heads=int(heads),
        max_context=max_context,
        experts=experts.count if experts is not None else None,
        experts_per_token=experts.top_k if experts is not None else None,
        expert_bytes=weights.expert_bytes,
        compute_parameters=weights.compute_parameters,
        latent_kv=latent.cached if latent is not None else None,
    )


@dataclass(frozen=True, slots=True)
class _Weights:
    weight_bytes: float
    expert_bytes: float
    compute_parameters: float | None
    words: str


def _weights(config: Mapping, experts: Experts | None, element: float) -> _Weights:
    """The weights' bytes (`architecture_from_config`): `fleetplan_weight_bytes`, else a
    quantized checkpoint's (`quantization.quantized_weights`), else the parameters (given, or
    counted from the shape) x `element`; a mixture's routed experts' share of them."""
    weight_bytes = _positive(config, "fleetplan_weight_bytes")
    parts = _parameter_parts(config)
    parameters = _positive(config, "fleetplan_parameters") or (parts[0] if parts else None)
    if weight_bytes is None and parameters is None:
        raise InputError(
            "the model's weights cannot be sized: its config.json lacks hidden_size, "
            "intermediate_size or vocab_size (or give fleetplan_parameters)",
            field="fleetplan_parameters",
        )
    routed_share = parts[1] / parts[0] if experts and parts and parts[0] > 0 else 0.0
    quantization = config.get("quantization_config")
    if weight_bytes is not None or quantization is None:
        weight_bytes = weight_bytes if weight_bytes is not None else parameters * element
        return _Weights(weight_bytes, weight_bytes * routed_share, None, "")
    if parts is None:
        raise InputError(
            "quantization_config in the model's config.json, but its shape lacks "
            "hidden_size, intermediate_size or vocab_size to size the quantized layers: give "
            "fleetplan_weight_bytes (the checkpoint's bytes in memory)",
            field="quantization_config",
        )
    scale = parameters / parts[0]  # a given parameter count, in the shape's proportions
    sized = quantized_weights(
        quantization if isinstance(quantization, Mapping) else {},
        parameters=parameters,
        routed=parts[1] * scale,
        embeddings=parts[2] * scale,
        element=element,
    )
    idle = 1 - experts.top_k / experts.count if experts else 0.0
    active = parameters - parts[1] * scale * idle
    return _Weights(
        sized.weight_bytes,
        sized.expert_bytes if experts else 0.0,
        active * sized.compute_factor,
        f"; {sized.words}",
    )


def architectures_from_table(table: Mapping) -> dict[str, Architecture]:
    """The bundled table (`sample_data/models/architectures.toml`, read as a mapping): one
    `[[model]]` per model id with its figures and `source`; by lower-case model id."""
    found = {}
    for position, entry in enumerate(table.get("model", [])):
        where = f"model[{position}]"
        try:
            model = str(entry["id"])
            config = {
                "num_hidden_layers": entry["layers"],
                "num_attention_heads": entry["kv_heads"],
                "num_key_value_heads": entry["kv_heads"],
                "head_dim": entry["head_dim"],
                "torch_dtype": entry["dtype"],
                "fleetplan_parameters": entry["parameters"],
            }
            if "weight_bytes" in entry:
                config["fleetplan_weight_bytes"] = entry["weight_bytes"]
            source = str(entry["source"])
        except KeyError as missing:
            raise InputError(f"{where} has no {missing.args[0]}", field=where) from None
        # the table gives no attention heads (it stands the KV heads in): unknown
        arch = replace(architecture_from_config(model, config, source=source), heads=None)
        if "experts" in entry:  # a mixture of experts: its routed experts' share of the weights
            try:
                counts = {name: int(entry[name]) for name in ("experts", "experts_per_token")}
                routed = float(entry["expert_parameters"]) / float(entry["parameters"])
            except (KeyError, TypeError, ValueError) as problem:
                raise InputError(
                    f"{where} has experts but no valid experts_per_token and expert_parameters "
                    f"({problem})",
                    field=where,
                ) from None
            if not (0 < routed < 1 and 1 <= counts["experts_per_token"] <= counts["experts"]):
                raise InputError(
                    f"{where}: expert_parameters must be part of parameters, and "
                    "experts_per_token from 1 to experts",
                    field=where,
                )
            arch = replace(arch, **counts, expert_bytes=arch.weight_bytes * routed)
        found[model.lower()] = arch
    return found


def find_architecture(architectures: Mapping[str, Architecture], model: str) -> Architecture | None:
    """The architecture of `model` (its full id, any case), or None where the table has none."""
    return architectures.get(str(model).lower())
