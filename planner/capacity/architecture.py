"""A model's architecture: what the physical bounds (`envelope`) and the serving model
(`planner.estimate`) need of it, read from its Hugging Face config.json
(`architecture_from_config`) or the bundled table (`architectures_from_table`,
`sample_data/models/architectures.toml`): layers, KV heads, head dimension, dtypes, the weights'
bytes and, of a mixture of experts, its experts (`config_experts`), of a hybrid or recurrent
model its layers that keep a state per sequence and the state's bytes (`recurrent`: Mamba,
Mamba 2, Gated DeltaNet, lightning attention), of a NAS model each layer's blocks (`nas`:
Llama-Nemotron's `block_configs`), in any family's names of
them (`config_families`); with the tensor-parallel
sizes an engine splits it into (`tensor_parallel_problem`). A figure it lacks is unknown, and a
config.json it cannot size is refused naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.config_families import (
    mlp_matrices,
    standard_config,
    ties_by_default,
)
from fleetplan.planner.capacity.config_keys import (
    ALIASES,
    check_whole,
    context_length,
    positive,
    shape_count,
)
from fleetplan.planner.capacity.experts import Experts, config_experts, unused_dense_width
from fleetplan.planner.capacity.latent_attention import config_latent
from fleetplan.planner.capacity.nas import Blocks, config_blocks, kv_replicas
from fleetplan.planner.capacity.quantization import kv_cache_bits, quantized_weights
from fleetplan.planner.capacity.recurrent import Recurrent, config_recurrent
from fleetplan.planner.capacity.vision import vision_parameters

FLOAT32_BYTES = 4.0
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
    # Sliding-window attention (`sliding_window`): the window, in tokens, of the layers that
    # attend only to it. Counted here as whole attention (every token of the context cached);
    # vLLM caches only the window for them, so past it the cache here is understated.
    sliding_window: int | None = None
    # Bytes in memory that no step reads (a multimodal model's vision encoder, which text
    # requests never run: `vision`): they take room from the KV cache, not time from a step.
    resident_bytes: float = 0.0
    # A hybrid or recurrent model (`recurrent`): the layers that cache KV (None: all `layers`),
    # the bytes of the state each sequence keeps in its other layers (all of them together),
    # how many layers keep it, and what they are, in words.
    attention_layers: int | None = None
    state_bytes: float = 0.0
    recurrent_layers: int = 0
    recurrent: str | None = None
    # A NAS model (`nas`: Llama-Nemotron's block_configs): each layer's attention (its own KV
    # heads, none, or a linear layer) and MLP; None: all layers alike. Its attending layers
    # are `attention_layers`, and `kv_heads` the most KV heads of any.
    blocks: Blocks | None = None

    @property
    def kv_bytes_per_token(self) -> float:
        """A token's keys and values, over the layers that cache them (0: no attention), each
        layer with its own KV heads where they differ (a NAS model)."""
        layers = self.layers if self.attention_layers is None else self.attention_layers
        if self.latent_kv:
            return layers * self.latent_kv * self.kv_bytes
        heads = layers * self.kv_heads if self.blocks is None else sum(self.blocks.kv_heads)
        return 2.0 * heads * self.head_dim * self.kv_bytes

    def kv_replicas(self, tp: int) -> float:
        """How many times over `tp` GPUs hold a token's KV (`nas.kv_replicas`)."""
        return kv_replicas(self.blocks.kv_heads if self.blocks else (self.kv_heads,), tp)

    @property
    def sublayers(self) -> int:
        """The attention and MLP blocks a step runs (an all-reduce each, split over GPUs): two
        a layer, less a NAS model's no-op blocks."""
        return 2 * self.layers if self.blocks is None else self.blocks.sublayers

    @property
    def cache_unit_bytes(self) -> float:
        """The bytes a unit of the cache counts (`serving.kv_cache_tokens`): a token's KV; of a
        model with no attention layer, one sequence's state (its cache counts sequences)."""
        return self.kv_bytes_per_token or self.state_bytes or 1.0

    @property
    def token_units(self) -> float:
        """Units of the cache a token of context takes: 1, or 0 without attention layers."""
        return 1.0 if self.kv_bytes_per_token > 0 else 0.0

    @property
    def state_units(self) -> float:
        """Units of the cache a sequence's recurrent state takes beside its context's tokens
        (the state in tokens of KV; 1 without attention layers; 0 for attention only)."""
        return self.state_bytes / self.cache_unit_bytes

    def sequence_units(self, context: float) -> float:
        """Units of the cache a sequence holding `context` tokens takes: its tokens' KV and
        its state."""
        return context * self.token_units + self.state_units

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


def sliding_window(config: Mapping, max_context: int | None) -> int | None:
    """The attention window of a model whose layers (some or all) attend only to the last
    `sliding_window` tokens (Mistral 7B v0.1, StarCoder 2, Gemma 2 and 3, gpt-oss, Cohere 2):
    None where it has none, where the config turns it off (Qwen2's use_sliding_window false, a
    layer_types of full attention only), or where the window spans the whole context. Llama 4's
    chunked attention (`attention_chunk_size`: a token attends within its chunk, 3 layers of 4)
    is such a window too: vLLM caches at most a chunk for those layers."""
    window, chunk = config.get("sliding_window"), config.get("attention_chunk_size")
    if _count(window) is None:
        window = _count(chunk)  # a chunk: no use_sliding_window or layer_types turns it off
    elif config.get("use_sliding_window") is False or (
        isinstance(kinds := config.get("layer_types"), list) and "sliding_attention" not in kinds
    ):
        return None
    if window is None:
        return None
    if max_context is not None and window >= max_context:
        return None
    return window


def _count(value: object) -> int | None:
    """A positive whole number of tokens, else None (a bool is not one)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return value if ok else None


def window_words(architecture: Architecture) -> str:
    """What a KV cache figure of `architecture` leaves out ("; ..."): its sliding-window layers'
    saving past their window; "" for a model without one."""
    window = architecture.sliding_window
    if window is None:
        return ""
    return (
        f"; its sliding-window (or chunked) layers counted whole: vLLM caches only their last "
        f"{window:,} tokens, so for longer contexts it holds more than this"
    )


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
    for kv_layer in sorted(set(architecture.blocks.kv_heads if architecture.blocks else (kv,))):
        if kv_layer % tp and tp % kv_layer:
            of = " of a layer" if architecture.blocks else ""
            return (
                f"tensor parallel size {tp:,} neither divides the model's {kv_layer} KV "
                f"heads{of} nor is a multiple of them (vLLM refuses it)"
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
    sizes = _parameter_parts(model_config(config))
    return None if sizes is None else sizes[0]


def expert_parameters(config: Mapping) -> float:
    """The routed experts' parameters of all layers (0 for a dense model; `estimated_parameters`
    counts them in)."""
    sizes = _parameter_parts(model_config(config))
    return 0.0 if sizes is None else sizes[1]


def _parameter_parts(config: Mapping) -> tuple[float, float, float] | None:
    """(all parameters, the routed experts' among them, the embeddings' among them: input and
    output), None where a figure is missing. A hybrid's (`recurrent`) attention layers count
    attention, its recurrent layers their mixers, and the layers with an MLP theirs."""
    hidden = shape_count(config, "hidden_size", "n_embd")
    layers = shape_count(config, "num_hidden_layers", "n_layer")
    heads = shape_count(config, "num_attention_heads", "n_head")
    vocab = shape_count(config, "vocab_size")
    rec = config_recurrent(config, layers=layers and int(layers), hidden=hidden, heads=heads)
    blocks = config_blocks(config, layers=layers, hidden=hidden, heads=heads)
    if blocks is not None and vocab is not None:  # a NAS model: each layer's blocks (`nas`)
        tied = bool(config.get("tie_word_embeddings", ties_by_default(config)))
        embeddings = vocab * hidden * (1 if tied else 2)
        return embeddings + blocks.parameters(mlp_matrices(config)), 0.0, embeddings
    experts = config_experts(config)
    mlp_layers = layers if rec is None or rec.mlp_layers is None else rec.mlp_layers
    inter = None if unused_dense_width(config) else shape_count(config, "intermediate_size")
    if rec is not None and rec.mlp_layers == 0:
        inter, experts = 0.0, None
    if rec is not None and not rec.attention_layers:
        heads = heads or 1.0  # no attention: its heads count nothing
    if None in (hidden, layers, heads, vocab) or (inter is None and experts is None):
        return None
    attention_layers = layers if rec is None else rec.attention_layers
    kv_heads = shape_count(config, "num_key_value_heads") or heads
    head_dim = shape_count(config, "head_dim") or hidden / heads
    attention = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    if rec is not None and rec.gated_attention:  # the query projection also makes the gate
        attention += hidden * heads * head_dim
    latent = config_latent(config, hidden, heads)
    if latent is not None:
        attention = latent.parameters
    tied = bool(config.get("tie_word_embeddings", ties_by_default(config)))
    embeddings = vocab * hidden * (1 if tied else 2)
    mixers = attention_layers * attention + (rec.layers * rec.mixer_parameters if rec else 0.0)
    matrices = mlp_matrices(config)
    if experts is None:
        mlp = matrices * hidden * inter
        return embeddings + mixers + mlp_layers * mlp, 0.0, embeddings
    if rec is not None and rec.expert_layers is not None:
        experts = replace(experts, layers=rec.expert_layers)
    routed = experts.layers * experts.count * matrices * hidden * experts.width
    dense_layers = mlp_layers - experts.layers
    if dense_layers and experts.dense_width is None:
        return None
    dense = dense_layers * matrices * hidden * (experts.dense_width or 0.0)
    per_expert_layer = matrices * hidden * experts.shared_width + hidden * experts.count
    total = embeddings + mixers + dense + routed + experts.layers * per_expert_layer
    return total, routed, embeddings


def text_config(config: Mapping) -> Mapping:
    """The language model's config of a multimodal config.json (Gemma 3, Llama 4, Mistral
    Small 3.1, LLaVA: its `text_config`), over the top level's other keys (its torch_dtype,
    quantization_config, fleetplan_* keys); the config itself where it is no such file. The
    vision encoder's weights are not counted (well under 1 % of these models' memory)."""
    nested = config.get("text_config")
    if not isinstance(nested, Mapping) or config.get("num_hidden_layers") is not None:
        return config
    outer = {k: v for k, v in config.items() if k not in ("text_config", "vision_config")}
    return outer | dict(nested)


def model_config(config: Mapping) -> Mapping:
    """A config.json as fleetplan reads it: a multimodal one's language model (`text_config`),
    its family's names of the shape made the standard ones (`config_families.standard_config`)."""
    return standard_config(text_config(config))


def config_width(config: Mapping) -> float | None:
    """The model's width (d_model: hidden_size, GPT-2's n_embd, MPT's d_model), checked as a
    shape's count; None where the config.json gives none."""
    return shape_count(model_config(config), "hidden_size")


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
    vision = vision_parameters(config)
    config = model_config(config)
    layers, heads, rec = _layers_and_heads(config)
    if layers is None or heads is None:
        missing = "num_hidden_layers" if layers is None else "num_attention_heads"
        others = " or ".join(ALIASES[missing])
        raise InputError(f"the model's config.json has no {missing} (nor {others})", field=missing)
    kv_heads = shape_count(config, "num_key_value_heads") or heads
    if kv_heads > heads or heads % kv_heads:
        raise InputError(
            f"num_key_value_heads ({int(kv_heads)}) must divide the {int(heads)} attention heads "
            "(num_attention_heads): each KV head serves a whole group of them",
            field="num_key_value_heads",
        )
    width = config_width(config)
    for name in ("intermediate_size", "vocab_size"):
        if not (name == "intermediate_size" and unused_dense_width(config)):
            shape_count(config, name)
    max_context = context_length(config)
    head_dim = shape_count(config, "head_dim")
    if head_dim is None:
        if width is None:
            raise InputError(
                "the model's config.json has no head_dim or hidden_size", field="head_dim"
            )
        head_dim = width / heads
        check_whole("head_dim", head_dim)
    experts = config_experts(config)
    latent = config_latent(config, width, heads)
    if latent is not None:  # one latent "head" a layer, replicated over tensor parallelism
        kv_heads = 1
    blocks = config_blocks(config, layers=layers, hidden=width, heads=heads)
    if blocks is not None:  # each layer's own KV heads, or none (`nas`)
        kv_heads = max(blocks.kv_heads)
    dtype_key = "torch_dtype" if config.get("torch_dtype") is not None else "dtype"
    weight_dtype = config.get(dtype_key)
    if weight_dtype is not None and dtype_bytes(weight_dtype) is None:
        raise InputError(
            f"{dtype_key} {weight_dtype!r} in the model's config.json is not a dtype fleetplan "
            f"knows ({', '.join(sorted(DTYPE_BYTES))})",
            field=dtype_key,
        )
    element = dtype_bytes(weight_dtype) or dtype_bytes(kv_dtype)
    served = ""
    if element == FLOAT32_BYTES and dtype_bytes(kv_dtype) != FLOAT32_BYTES:
        # vLLM's --dtype auto serves a float32 checkpoint in float16 (its engine arguments)
        element, served = 2.0, "; a float32 checkpoint, served in 16 bits (vLLM's dtype auto)"
    kv_bits = kv_cache_bits(config.get("quantization_config"))
    kv_element = dtype_bytes(kv_dtype) or (kv_bits / 8 if kv_bits else None) or element
    if kv_element is None or element is None:
        raise InputError(
            f"the model's dtype ({weight_dtype!r} in its config.json, {kv_dtype!r} in the run) "
            f"is not one fleetplan knows ({', '.join(sorted(DTYPE_BYTES))})",
            field="torch_dtype",
        )
    weights = _weights(config, experts, element)
    if vision:
        served += (
            f"; its vision encoder ({vision / 1e9:.2f} billion parameters) in memory beside "
            "it, not run by text requests"
        )
    window = sliding_window(config, max_context)
    if window is not None:
        served += (
            f"; its sliding-window (or chunked) layers (a window of {window:,} tokens) counted "
            "as whole "
            "attention (vLLM caches only the window: past it, the cache here is understated)"
        )
    hybrid = _hybrid_fields(rec, element, blocks)
    return Architecture(
        model=model,
        layers=int(layers),
        kv_heads=int(kv_heads),
        head_dim=int(head_dim),
        kv_bytes=kv_element,
        weight_bytes=weights.weight_bytes,
        source=source + served + hybrid.pop("words") + weights.words,
        heads=int(heads),
        max_context=max_context,
        experts=experts.count if experts is not None else None,
        experts_per_token=experts.top_k if experts is not None else None,
        expert_bytes=weights.expert_bytes,
        compute_parameters=weights.compute_parameters,
        latent_kv=latent.cached if latent is not None else None,
        sliding_window=window,
        resident_bytes=vision * element,
        **hybrid,
    )


def _layers_and_heads(config: Mapping) -> tuple[float | None, float | None, Recurrent | None]:
    """The layers, the attention heads and the recurrent layers (`recurrent`) of a config.json
    read as the standard names. A model without attention layers splits over GPUs by its
    state's heads (Mamba 2's, as `num_heads`), else by none (Mamba 1: one GPU)."""
    layers = shape_count(config, "num_hidden_layers", "n_layer")
    heads = shape_count(config, "num_attention_heads", "n_head")
    hidden = config_width(config)
    rec = config_recurrent(config, layers=layers and int(layers), hidden=hidden, heads=heads)
    if rec is not None and not rec.attention_layers:
        heads = heads or 1.0
        layers = layers or float(rec.total_layers)
    return layers, heads, rec


def _hybrid_fields(rec: Recurrent | None, element: float, blocks: Blocks | None) -> dict:
    """`Architecture`'s fields of a hybrid's recurrent layers or a NAS model's blocks (none
    for attention alike in every layer), with the words of its source ("words"): the
    convolution state at the model's `element` bytes, the SSM state at its own dtype's where
    the config.json names one."""
    if blocks is not None:
        words = f"; {blocks.words}"
        return {"words": words, "attention_layers": blocks.attention_layers, "blocks": blocks}
    if rec is None:
        return {"words": ""}
    state = rec.state_bytes(element, dtype_bytes(rec.ssm_dtype))
    return {
        "words": f"; {rec.words}: {state / 2**20:,.1f} MiB of state per sequence",
        "attention_layers": rec.attention_layers,
        "state_bytes": state,
        "recurrent_layers": rec.layers,
        "recurrent": rec.words,
    }


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
    weight_bytes = positive(config, "fleetplan_weight_bytes")
    parts = _parameter_parts(config)
    parameters = positive(config, "fleetplan_parameters") or (parts[0] if parts else None)
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
