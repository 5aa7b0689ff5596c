"""A quantized checkpoint's weights in memory, from its config.json's `quantization_config`.

A quantized checkpoint stores its linear layers (attention projections, MLPs, experts) in fewer
bits, with a scale (and for integer formats a zero point) per group of weights, and keeps its
embeddings and output head in 16 bits. Bytes per linear parameter, by the checkpoint's own
figures (the bits and group size it names):

- FP8 (`fp8`, `fbgemm_fp8`, ModelOpt's FP8, compressed-tensors' 8-bit float): 1 byte (a scale
  per tensor or channel, a negligible share). Weights and activations in 8 bits (W8A8): a
  Hopper or Ada GPU multiplies them at twice its 16-bit rate.
- 4- and 8-bit integers (`awq`, `gptq`, `autoround`, compressed-tensors' int, `bitsandbytes`):
  bits / 8, plus per group of g weights a 16-bit scale and a zero point of the same bits:
  (2 + bits / 8) / g (AWQ and GPTQ: g = 128 unless named; -1, one group per channel: nothing
  to speak of). bitsandbytes' 4-bit: a 32-bit absmax per block of 64 (0.5625 bytes). Weights
  dequantised to 16 bits for the product (W4A16): the GPU's 16-bit rate.
- MXFP4 (`mxfp4`, gpt-oss): 4 bits and an 8-bit exponent per 32 weights (0.53125 bytes), of a
  mixture of experts' routed experts only (gpt-oss keeps attention, the router and the
  embeddings in 16 bits: its `modules_to_not_convert`); of a dense model, its linear layers.
  NVFP4 (ModelOpt's, compressed-tensors' 4-bit float): 4 bits and an 8-bit scale per 16
  (0.5625 bytes). Both multiplied at the 16-bit rate here (a Blackwell GPU's FP4 tensor cores
  are faster: such an estimate is pessimistic at prefill).

Checked against OpenAI's gpt-oss model card (checkpoints of 12.8 GiB and 60.8 GiB; this rule:
12.81 and 60.69). Any other method is refused naming it: give `fleetplan_weight_bytes` (the
checkpoint's bytes) instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fleetplan.core.errors import InputError

FP8_METHODS = ("fp8", "fbgemm_fp8")
INTEGER_METHODS = ("awq", "gptq", "autoround", "auto-round")
MXFP4_BYTES = 0.53125  # 4 bits + an 8-bit shared exponent per 32 weights
NVFP4_BYTES = 0.5625  # 4 bits + an 8-bit (FP8) scale per 16 weights
BNB_4BIT_BYTES = 0.5625  # 4 bits + a 32-bit absmax per block of 64
DEFAULT_GROUP = 128


@dataclass(frozen=True, slots=True)
class Quantized:
    """A quantized checkpoint's weights: all bytes, the routed experts' bytes among them, the
    share of the 16-bit compute rate its products cost (0.5 for W8A8: twice as fast), and what
    was read, in words."""

    weight_bytes: float
    expert_bytes: float
    compute_factor: float
    words: str


def _number(where: Mapping, *names: str) -> float | None:
    for name in names:
        value = where.get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _integer_bytes(bits: float, group: float | None) -> float:
    """Bytes per weight of a grouped integer format: the bits, and a 16-bit scale and a zero
    point per group (none to speak of for one group per channel, `group` -1 or None)."""
    per = bits / 8.0
    if group is not None and group > 0:
        per += (2.0 + bits / 8.0) / group
    return per


def _linear_bytes(quantization: Mapping) -> tuple[float, float, str]:
    """(bytes per quantized weight, compute factor, words) of a `quantization_config`; an
    InputError names what it cannot read."""
    method = str(quantization.get("quant_method", "")).strip().lower()
    if method in FP8_METHODS or (
        method == "modelopt" and "fp8" in str(quantization.get("quant_algo", "")).lower()
    ):
        return 1.0, 0.5, f"{method}: 8-bit float weights and activations"
    if method == "mxfp4":
        return MXFP4_BYTES, 1.0, "mxfp4: 4-bit weights, an 8-bit exponent per 32"
    if method == "modelopt" and "nvfp4" in str(quantization.get("quant_algo", "")).lower():
        return NVFP4_BYTES, 1.0, "modelopt nvfp4: 4-bit weights, an 8-bit scale per 16"
    if method in INTEGER_METHODS:
        bits = _number(quantization, "bits", "w_bit", "weight_bits")
        if bits is None or bits not in (2, 3, 4, 8):
            raise InputError(
                f"quantization_config ({method}) names no bits (2, 3, 4 or 8): give "
                "fleetplan_weight_bytes (the checkpoint's bytes in memory)",
                field="quantization_config.bits",
            )
        group = _number(quantization, "group_size", "q_group_size")
        group = DEFAULT_GROUP if group is None else group
        shown = "per channel" if group <= 0 else f"groups of {group:g}"
        return _integer_bytes(bits, group), 1.0, f"{method}: {bits:g}-bit weights, {shown}"
    if method == "bitsandbytes":
        if quantization.get("load_in_4bit"):
            return BNB_4BIT_BYTES, 1.0, "bitsandbytes: 4-bit weights"
        if quantization.get("load_in_8bit"):
            return 1.0, 1.0, "bitsandbytes: 8-bit weights"
    if method == "compressed-tensors":
        groups = quantization.get("config_groups")
        first = next(iter(groups.values()), None) if isinstance(groups, Mapping) else None
        weights = first.get("weights") if isinstance(first, Mapping) else None
        if isinstance(weights, Mapping):
            bits = _number(weights, "num_bits")
            if bits in (4, 8):
                activations = first.get("input_activations")
                w8a8 = bits == 8 and isinstance(activations, Mapping)
                kind = str(weights.get("type", "int"))
                group = (
                    _number(weights, "group_size") if weights.get("strategy") == "group" else None
                )
                if kind == "float":  # FP8: a scale per channel; FP4: an 8-bit one per group
                    per = 1.0 if bits == 8 else bits / 8 + 1 / (group or 16)
                else:
                    per = _integer_bytes(bits, group)
                words = f"compressed-tensors: {bits:g}-bit {kind} weights"
                return per, 0.5 if w8a8 else 1.0, words + (" and activations" if w8a8 else "")
    shown = f" ({method})" if method else ""
    raise InputError(
        f"quantization_config{shown} in the model's config.json: a quantized checkpoint whose "
        "format fleetplan does not size (it sizes fp8, awq, gptq, autoround, bitsandbytes, "
        "mxfp4 and compressed-tensors); give fleetplan_weight_bytes (the checkpoint's bytes in "
        "memory, e.g. the sum of its safetensors files) in the config.json",
        field="quantization_config",
    )


def quantized_weights(
    quantization: Mapping,
    *,
    parameters: float,
    routed: float,
    embeddings: float,
    element: float,
) -> Quantized:
    """The weights of a checkpoint of `parameters` (of which `routed` are a mixture's routed
    experts and `embeddings` its input and output embeddings) quantized as `quantization` says,
    the rest in `element` bytes (module docstring)."""
    per, compute, words = _linear_bytes(quantization)
    method = str(quantization.get("quant_method", "")).strip().lower()
    # MXFP4 of a mixture of experts: the experts only (gpt-oss's modules_to_not_convert)
    experts_only = method == "mxfp4" and routed > 0
    quantized = routed if experts_only else max(parameters - embeddings, 0.0)
    weight_bytes = quantized * per + (parameters - quantized) * element
    expert_bytes = routed * per
    return Quantized(
        weight_bytes=weight_bytes,
        expert_bytes=expert_bytes,
        compute_factor=compute,
        words=f"weights sized from its quantization_config ({words}): {weight_bytes / 1e9:.2f} GB",
    )


def kv_cache_bits(quantization: object) -> float | None:
    """The KV cache's bits a `quantization_config` names (compressed-tensors' kv_cache_scheme);
    None where it names none."""
    if not isinstance(quantization, Mapping):
        return None
    scheme = quantization.get("kv_cache_scheme")
    return _number(scheme, "num_bits") if isinstance(scheme, Mapping) else None
