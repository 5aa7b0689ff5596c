"""A model whose layers each have a shape of their own, found by neural architecture search:
NVIDIA's Llama-Nemotron NAS models (Llama-3.3-Nemotron-Super-49B, Llama-3.1-Nemotron-51B,
Llama-3.1-Nemotron-Ultra-253B; `model_type` "nemotron-nas", DeciLMForCausalLM), whose
config.json gives one `block_configs` entry per layer (`config_blocks`).

Each entry has an `attention` and an `ffn`, as vLLM's `nemotron_nas.py` and the checkpoints'
own `modeling_decilm.py` build them:

- attention: `no_op` (none: no weights, no KV cache), `replace_with_linear` (one hidden x hidden
  matrix: no KV cache either), else grouped-query attention of all the model's query heads and
  num_attention_heads / `n_heads_in_group` KV heads, which may differ from layer to layer
  (Nemotron-51B's do);
- ffn: `no_op`, `replace_with_linear` (one hidden x hidden matrix), else Llama's gated MLP of
  width `ffn_mult` x 2/3 x hidden, rounded up to a multiple of 256 (vLLM's
  `_ffn_mult_to_intermediate_size`), or the entry's own `intermediate_size`.

The KV cache counts a token's keys and values over the layers that attend, each with its own KV
heads; the parameters count each layer's blocks. What fleetplan does not size is refused naming
its key: an attention window or sink tokens (`window_length`, `num_sink_tokens`: fleetplan
counts whole attention) and experts in a layer (`moe`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.config_keys import finite_number, shape_count

ATTENTION, MLP, LINEAR, NONE = "attention", "mlp", "linear", "none"
MLP_ROUNDING = 256  # vLLM's _find_multiple(intermediate_size, 256)


@dataclass(frozen=True, slots=True)
class Block:
    """One layer: its attention (`ATTENTION` with `kv_heads` KV heads, `LINEAR`, `NONE`) and its
    MLP (`MLP`: a gated one of `mlp_width`; `LINEAR` or `NONE`, of width 0)."""

    attention: str
    kv_heads: int
    mlp: str
    mlp_width: int


@dataclass(frozen=True, slots=True)
class Blocks:
    """A NAS model's layers, in order, with the model's width, query heads and head dimension."""

    blocks: tuple[Block, ...]
    hidden: int
    heads: int
    head_dim: int

    @property
    def attention_layers(self) -> int:
        """The layers that attend (and cache KV)."""
        return sum(1 for block in self.blocks if block.attention == ATTENTION)

    @property
    def kv_heads(self) -> tuple[int, ...]:
        """The KV heads of each layer that attends, in order."""
        return tuple(block.kv_heads for block in self.blocks if block.attention == ATTENTION)

    @property
    def sublayers(self) -> int:
        """The attention and MLP blocks that run: two a layer, less the no-ops."""
        return sum((b.attention != NONE) + (b.mlp != NONE) for b in self.blocks)

    def parameters(self, matrices: int = 3) -> float:
        """The layers' parameters: per attending layer its query and output projections (all
        heads) and key and value projections (its KV heads), per linear block a hidden x
        hidden matrix, per MLP `matrices` x hidden x its width. Norms and biases left out."""
        hidden, width = self.hidden, self.heads * self.head_dim
        total = 0.0
        for block in self.blocks:
            if block.attention == ATTENTION:
                total += 2 * hidden * width + 2 * hidden * block.kv_heads * self.head_dim
            elif block.attention == LINEAR:
                total += hidden * hidden
            if block.mlp == MLP:
                total += matrices * hidden * block.mlp_width
            elif block.mlp == LINEAR:
                total += hidden * hidden
        return total

    @property
    def words(self) -> str:
        """What the layers are, in words (for an architecture's source)."""
        kv = sorted(set(self.kv_heads))
        heads = (
            f"{kv[0]} KV heads each"
            if len(kv) == 1
            else f"{', '.join(map(str, kv))} KV heads by layer"
        )
        linear = sum(1 for b in self.blocks if b.attention == LINEAR)
        skipped = sum(1 for b in self.blocks if b.attention == NONE)
        widths = [b.mlp_width for b in self.blocks if b.mlp == MLP]
        others = [
            f"{linear} with a linear layer for attention" if linear else "",
            f"{skipped} without attention" if skipped else "",
        ]
        mlp = (
            f"MLP widths {min(widths):,} to {max(widths):,}"
            if widths and min(widths) != max(widths)
            else (f"MLP width {widths[0]:,}" if widths else "no MLP")
        )
        mlp_others = [
            f"{n} {what}"
            for n, what in (
                (sum(1 for b in self.blocks if b.mlp == LINEAR), "linear MLPs"),
                (sum(1 for b in self.blocks if b.mlp == NONE), "layers without MLP"),
            )
            if n
        ]
        return (
            f"a NAS model (block_configs): {self.attention_layers} of {len(self.blocks)} layers "
            f"attend ({heads}; {', '.join(o for o in others if o) or 'every layer attends'}), "
            f"{mlp}{''.join(f', {m}' for m in mlp_others)}"
        )


def kv_replicas(kv_heads: tuple[int, ...], tp: int) -> float:
    """How many times over `tp` GPUs hold a token's KV, of layers with `kv_heads` KV heads each:
    1 where every layer's KV heads divide over them; more where a layer has fewer KV heads
    than GPUs (vLLM then gives each GPU a whole head: tp / heads copies of each; a latent's
    one "head" too)."""
    return sum(max(k, tp) for k in kv_heads) / sum(kv_heads)


def mlp_width(ffn_mult: float, hidden: int) -> int:
    """vLLM's `_ffn_mult_to_intermediate_size`: int(2 x ffn_mult x hidden / 3), rounded up to
    a multiple of 256."""
    width = int(2 * ffn_mult * hidden / 3)
    return width if width % MLP_ROUNDING == 0 else width + MLP_ROUNDING - width % MLP_ROUNDING


def config_blocks(
    config: Mapping,
    *,
    layers: float | None,
    hidden: float | None,
    heads: float | None,
) -> Blocks | None:
    """The `block_configs` of a config.json read as the standard names (None where it gives
    none), of a model `hidden` wide with `heads` query heads (of its head_dim, else hidden /
    heads); an InputError names the first key it cannot read (its path in the list)."""
    entries = config.get("block_configs")
    if entries is None:
        return None
    if not isinstance(entries, list) or not entries:
        raise InputError(
            "block_configs must be a list of one entry per layer", field="block_configs"
        )
    if layers is not None and len(entries) != layers:
        raise InputError(
            f"block_configs has {len(entries)} entries for the {int(layers)} layers of "
            "num_hidden_layers: it must have one per layer",
            field="block_configs",
        )
    if hidden is None or heads is None:
        missing = "hidden_size" if hidden is None else "num_attention_heads"
        raise InputError(
            f"the model's config.json has block_configs but no {missing} to size them",
            field=missing,
        )
    dim = shape_count(config, "head_dim") or hidden / heads
    blocks = tuple(_block(entry, i, int(hidden), int(heads)) for i, entry in enumerate(entries))
    found = Blocks(blocks, int(hidden), int(heads), int(dim))
    if not found.attention_layers:
        raise InputError(
            "block_configs: no layer attends (every attention is no_op or replace_with_linear), "
            "and fleetplan counts the cache in tokens of KV",
            field="block_configs",
        )
    return found


def _block(entry: object, index: int, hidden: int, heads: int) -> Block:
    where = f"block_configs[{index}]"
    if not isinstance(entry, Mapping):
        raise InputError(f"{where} must be an object with attention and ffn", field=where)
    attention, ffn = entry.get("attention"), entry.get("ffn")
    for name, part in (("attention", attention), ("ffn", ffn)):
        if not isinstance(part, Mapping):
            raise InputError(f"{where}.{name} must be an object", field=f"{where}.{name}")
    assert isinstance(attention, Mapping) and isinstance(ffn, Mapping)
    kind, kv = _attention(attention, f"{where}.attention", heads)
    mlp, width = _ffn(ffn, f"{where}.ffn", hidden)
    return Block(kind, kv, mlp, width)


def _flag(part: Mapping, name: str, where: str) -> bool:
    value = part.get(name, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise InputError(
            f"{where}.{name} must be true or false, got {value!r}", field=f"{where}.{name}"
        )
    return value


def _attention(part: Mapping, where: str, heads: int) -> tuple[str, int]:
    if _flag(part, "no_op", where):
        return NONE, 0
    if _flag(part, "replace_with_linear", where):
        return LINEAR, 0
    for name in ("window_length", "num_sink_tokens"):
        if part.get(name) not in (None, 0):
            raise InputError(
                f"{where}.{name} is {part[name]!r}: a layer attending to a window or to sink "
                "tokens, and fleetplan sizes whole attention only",
                field=f"{where}.{name}",
            )
    group = part.get("n_heads_in_group")
    if not isinstance(group, int) or isinstance(group, bool) or group < 1 or heads % group:
        raise InputError(
            f"{where}.n_heads_in_group must be a whole number dividing the {heads} attention "
            f"heads (the queries sharing a KV head), got {group!r}",
            field=f"{where}.n_heads_in_group",
        )
    return ATTENTION, heads // group


def _ffn(part: Mapping, where: str, hidden: int) -> tuple[str, int]:
    if _flag(part, "no_op", where):
        return NONE, 0
    if _flag(part, "replace_with_linear", where):
        return LINEAR, 0
    if part.get("moe") is not None:
        raise InputError(
            f"{where}.moe: a layer of experts, which fleetplan does not size in block_configs",
            field=f"{where}.moe",
        )
    mult, width = part.get("ffn_mult"), part.get("intermediate_size")
    if (number := finite_number(mult)) is not None and number > 0:
        return MLP, mlp_width(number, hidden)
    if isinstance(width, int) and not isinstance(width, bool) and width > 0:
        return MLP, width
    raise InputError(
        f"{where}.ffn_mult must be a number above 0 (the MLP's width over the model's, x 3/2), "
        f"got {mult!r}",
        field=f"{where}.ffn_mult",
    )
