"""Canonical GPU ids.

Benchmark tools label hardware in many ways (`NVIDIA-GeForce-RTX-4090`, `NVIDIA GeForce RTX 4090`,
`4090`, NVML's `NVIDIA H100 80GB HBM3`). fleetplan stores one canonical id per GPU model so that
results from different tools line up. Variants that perform differently stay distinct (H100 PCIe,
SXM and NVL; A100 40 GB and 80 GB). A label that is ambiguous or unknown is never guessed: it is
kept verbatim and flagged as unknown, with the reason.

To add a GPU: add its canonical id and a pattern over normalised labels to `_PATTERNS` (specific
before general: "rtx 4090 d" before "rtx 4090"), a test case in tests/test_gpus.py for each label
tools print for it, and its specifications, power and prices, each with source, year and basis,
to sample_data/gpu_catalog.toml (the planner reads them from the warehouse after `fleetplan build`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from fleetplan.core.text import LOOKALIKE_LETTERS, printable

# (canonical id, pattern over the normalised label). Order matters: specific before general.
_PATTERNS: tuple[tuple[str, str], ...] = (
    ("rtx-4090d", r"\brtx ?4090 ?d\b"),
    ("rtx-4090", r"^(rtx ?)?4090$|\brtx ?4090\b(?! ?(laptop|mobile|ti))"),
    ("rtx-4080-super", r"\brtx ?4080 ?super\b"),
    ("rtx-4080", r"^(rtx ?)?4080$|\brtx ?4080\b(?! ?(laptop|mobile|super))"),
    ("rtx-5090", r"^(rtx ?)?5090$|\brtx ?5090\b(?! ?(laptop|mobile|d))"),
    ("rtx-3090-ti", r"\brtx ?3090 ?ti\b"),
    ("rtx-3090", r"^(rtx ?)?3090$|\brtx ?3090\b(?! ?(laptop|mobile|ti))"),
    ("rtx-6000-ada", r"\brtx ?6000 ?ada\b"),
    ("h100-nvl", r"\bh100 ?nvl\b"),
    ("h100-pcie", r"\bh100 ?(80 ?gb ?)?pcie\b|\bh100 ?pci ?e\b"),
    ("h100-sxm", r"\bh100 ?(80 ?gb ?)?(sxm5?|hbm3)\b|\bh100 ?sxm\b"),
    ("h200-nvl", r"\bh200 ?nvl\b"),
    ("h200", r"\bh200( ?(sxm5?|141 ?gb|hbm3e))*$"),
    ("gh200", r"\bgh200\b"),
    ("b200", r"\bb200\b"),
    ("a100-80gb", r"\ba100\b.*\b80 ?gb\b"),
    ("a100-40gb", r"\ba100\b.*\b40 ?gb\b"),
    ("l40s", r"\bl40 ?s\b"),
    ("l40", r"\bl40$"),
    ("l4", r"\bl4$"),
    ("a10g", r"\ba10g\b"),
    ("a10", r"\ba10$"),
    ("t4", r"\bt4$"),
    ("mi300x", r"\bmi300x\b"),
    # No GPU: a server that runs the model on its CPUs (vLLM's CPU backend records "cpu").
    ("cpu", r"^cpu$"),
)

# Labels that name a family with variants of different speed, power or memory.
_AMBIGUOUS: tuple[tuple[str, str], ...] = (
    (r"^h100$", "H100 comes as PCIe (350 W), SXM (700 W) and NVL: say which"),
    (r"^a100$", "A100 comes with 40 GB and 80 GB, PCIe and SXM: say which"),
)
_FAMILY = re.compile(r"^(h100|a100)$")

# Cloud accelerator names, matched whole (case aside). GKE's accelerator names (the node label
# `cloud.google.com/gke-accelerator`, the `--accelerator type=` of `gcloud`; cloud.google.com/
# kubernetes-engine/docs/concepts/gpus, "GPU models", 2025): "nvidia-h100-80gb" is A3 High's and
# A3 Edge's H100 80GB SXM5, "nvidia-h100-mega-80gb" A3 Mega's (the same SXM5 GPU, more network).
# "nvidia-tesla-a100" (A2 Standard) stays ambiguous; the others are read by the patterns below.
_CLOUD_NAMES: dict[str, str] = {
    "nvidia-h100-80gb": "h100-sxm",
    "nvidia-h100-mega-80gb": "h100-sxm",
    "nvidia-h200-141gb": "h200",
    "nvidia-b200": "b200",
    "nvidia-a100-80gb": "a100-80gb",
    "nvidia-l4": "l4",
    "nvidia-tesla-t4": "t4",
}

# Machine and instance types that fix the GPU and how many (matched whole, case aside):
# (pattern, GPU id, count; None: the count is the pattern's group 1). Sources: Google Cloud's
# accelerator-optimized machine family (cloud.google.com/compute/docs/accelerator-optimized-
# machines: A2 Standard a2-highgpu-Ng / a2-megagpu-16g A100 40GB, A2 Ultra a2-ultragpu-Ng A100
# 80GB, A3 a3-highgpu-Ng / a3-megagpu-8g / a3-edgegpu-8g H100 SXM5, a3-ultragpu-8g H200, a4-
# highgpu-8g B200, G2 g2-standard-N L4); AWS's accelerated computing instances (aws.amazon.com/
# ec2/instance-types: p4d A100 40GB, p4de A100 80GB, p5 H100, p5e/p5en H200, g5 A10G, g6 L4,
# g6e L40S); Azure's NC H100 v5 (H100 NVL 94GB) and ND H100 v5 / ND H200 v5 series
# (learn.microsoft.com/azure/virtual-machines/sizes).
_G2_L4S = {"4": 1, "8": 1, "12": 1, "16": 1, "24": 2, "32": 1, "48": 4, "96": 8}
_AWS_G_GPUS = {"": 1, "2": 1, "4": 1, "8": 1, "16": 1, "12": 4, "24": 4, "48": 8}
_AWS_G_SIZES = r"(|2|4|8|12|16|24|48)xlarge"
_MACHINES: tuple[tuple[str, str, int | None], ...] = (
    (r"a2-highgpu-(1|2|4|8)g", "a100-40gb", None),
    (r"a2-ultragpu-(1|2|4|8)g", "a100-80gb", None),
    (r"a2-megagpu-16g", "a100-40gb", 16),
    (r"a3-highgpu-(1|2|4|8)g", "h100-sxm", None),
    (r"a3-(?:mega|edge)gpu-8g", "h100-sxm", 8),
    (r"a3-ultragpu-8g", "h200", 8),
    (r"a4-highgpu-8g", "b200", 8),
    (r"p4d\.24xlarge", "a100-40gb", 8),
    (r"p4de\.24xlarge", "a100-80gb", 8),
    (r"p5\.48xlarge", "h100-sxm", 8),
    (r"p5\.4xlarge", "h100-sxm", 1),
    (r"p5en?\.48xlarge", "h200", 8),
    (r"p6-b200\.48xlarge", "b200", 8),
    (rf"g5\.{_AWS_G_SIZES}", "a10g", 0),  # 0: the size says how many (`_AWS_G_GPUS`)
    (rf"g6\.{_AWS_G_SIZES}", "l4", 0),
    (rf"g6e\.{_AWS_G_SIZES}", "l40s", 0),
    (r"g2-standard-(4|8|12|16|24|32|48|96)", "l4", -1),  # -1: `_G2_L4S`
    (r"standard_ncc?40ads_h100_v5", "h100-nvl", 1),
    (r"standard_nc80adis_h100_v5", "h100-nvl", 2),
    (r"standard_nd96isr_h100_v5", "h100-sxm", 8),
    (r"standard_nd96isr_h200_v5", "h200", 8),
)


def machine_gpus(label: str) -> tuple[str, int] | None:
    """(GPU id, GPUs) of a cloud machine or instance type ("a3-highgpu-8g": 8 h100-sxm,
    "g6e.12xlarge": 4 l40s, "Standard_ND96isr_H100_v5": 8 h100-sxm), else None."""
    text = label.strip().lower()
    for pattern, gpu_id, count in _MACHINES:
        match = re.fullmatch(pattern, text)
        if match is not None:
            table = {0: _AWS_G_GPUS, -1: _G2_L4S}.get(count)  # type: ignore[arg-type]
            return gpu_id, table[match[1]] if table else count or int(match[1])
    return None


_NOISE = re.compile(r"\b(nvidia|geforce|tesla)\b")
_SEPARATORS = re.compile(r"[\s_\-/]+")

KNOWN_GPU_IDS: frozenset[str] = frozenset(gpu_id for gpu_id, _ in _PATTERNS)


@dataclass(frozen=True, slots=True)
class GpuIdentity:
    """A GPU label as a tool wrote it, and what fleetplan understood of it."""

    label: str
    gpu_id: str  # the canonical id, or the label verbatim when not recognised
    known: bool
    reason: str | None = None  # why an unknown label was not mapped
    # the GPU an unknown label imitates with look-alike letters (Cyrillic "Н100 PCIe"): refused
    # where labels come in (core.contract.Run), never stored as a GPU of its own
    lookalike_of: str | None = None

    def describe(self) -> str:
        if self.known:
            return self.gpu_id
        return f"{self.label!r} (unrecognised GPU: {self.reason})"


_LOOKALIKES = LOOKALIKE_LETTERS  # other scripts' letters drawn like Latin ones


def _plain(label: str) -> str:
    """NFKC (full-width `ＲＴＸ ４０９０` is `RTX 4090`), every dash (U+2010 hyphen, U+2011,
    the en dash, the minus sign) as `-`, no-break spaces as spaces."""
    text = unicodedata.normalize("NFKC", label)
    if text.isascii():
        return text
    return "".join(
        "-"
        if unicodedata.category(c) == "Pd" or c == "\u2212"
        else str(unicodedata.decimal(c))  # a digit of any script (Arabic-Indic ٤) is a digit
        if unicodedata.category(c) == "Nd"
        else c
        for c in text
    )


def _normalise(label: str) -> str:
    text = _SEPARATORS.sub(" ", _plain(label).lower())
    text = _NOISE.sub(" ", text)
    return " ".join(text.split())


def canonical_gpu(label: str) -> GpuIdentity:
    """Map a GPU label to its canonical id; unknown or ambiguous labels are kept and flagged."""
    raw = label.strip()
    if raw in KNOWN_GPU_IDS:
        return GpuIdentity(label=raw, gpu_id=raw, known=True)
    if (cloud := _CLOUD_NAMES.get(raw.lower())) is not None:
        return GpuIdentity(label=raw, gpu_id=cloud, known=True)
    if (machine := machine_gpus(raw)) is not None:
        return GpuIdentity(label=raw, gpu_id=machine[0], known=True)
    text = _normalise(raw)
    for pattern, why in _AMBIGUOUS:
        if re.search(pattern, text):
            return GpuIdentity(label=raw, gpu_id=raw, known=False, reason=why)
    for gpu_id, pattern in _PATTERNS:
        if re.search(pattern, text):
            return GpuIdentity(label=raw, gpu_id=gpu_id, known=True)
    imitating = raw.translate(_LOOKALIKES)
    if imitating != raw:
        imitated = canonical_gpu(imitating)
        # a known GPU, or a family fleetplan asks the variant of (a Cyrillic "Н100")
        if imitated.known or any(imitated.reason == why for _, why in _AMBIGUOUS):
            odd = ", ".join(f"U+{ord(c):04X}" for c in dict.fromkeys(raw) if ord(c) > 127)
            return GpuIdentity(
                label=raw,
                gpu_id=raw,
                known=False,
                reason=f"looks like {imitated.gpu_id} but is written with other letters "
                f"({odd}): type the name in plain letters",
                lookalike_of=imitated.gpu_id,
            )
    return GpuIdentity(label=raw, gpu_id=raw, known=False, reason="not a GPU model fleetplan knows")


_COUNT_IN_LABEL = re.compile(r"^\s*(\d{1,4})\s*[xX×]\s*(?=\S)(.+)$")
# After the name: "H100:8" (SkyPilot's and Modal's accelerator:count), "H100x8" (the x
# against the name and the count), "A10G x 4" (the x a word of its own) or "H100 x8" (a small x);
# never "MI300X 8", "Radeon RX 580" nor a name's last word such as "X9": a count of one or two
# digits (three after a colon), the name holding a letter.
_COUNT_AFTER_LABEL = (
    re.compile(r"^\s*(?=.*[A-Za-z])(.*?\S)\s*:\s*(\d{1,3})\s*$"),
    re.compile(r"^\s*(?=.*[A-Za-z])(.*?\S)(?:\s+[xX×]\s+|\s+[x×]|(?<=\S)[xX×])(\d{1,2})\s*$"),
)


def gpu_count_in_label(label: str) -> tuple[str, int] | None:
    """("NVIDIA_L40S", 4) from a label that states its count ("4xNVIDIA_L40S", "8x H100",
    "2 x RTX 4090", "H100:8", "H100x8", "A10G x 4"; a machine type: ("a3-highgpu-8g", 8)), else
    None."""
    if (machine := machine_gpus(label)) is not None:
        return label.strip(), machine[1]
    match = _COUNT_IN_LABEL.match(label)
    if match is not None and int(match[1]) >= 1:
        return match[2].strip(" _-"), int(match[1])
    for pattern in _COUNT_AFTER_LABEL:
        after = pattern.match(label)
        if after is not None and int(after[2]) >= 1:
            return after[1].strip(" _-"), int(after[2])
    return None


def family_of(label: str) -> str | None:
    """The family an ambiguous label names ("H100", GKE's "nvidia-tesla-a100": "a100"), else
    None: a GPU of it (h100-sxm) names the variant, another GPU contradicts it."""
    match = _FAMILY.match(_normalise(label))
    return match[1] if match else None


def plain_gpu_label(label: str) -> str:
    """A GPU label as it comes in (a campaign's GPU types, `--gpu`): one written with look-alike
    letters of a known GPU (a Cyrillic "Н100 PCIe") is refused, never taken as a GPU of its own
    (pydantic validator; `core.text.plain_name` refuses hidden characters before it)."""
    identity = canonical_gpu(label)
    if identity.lookalike_of:
        raise ValueError(f"the GPU {printable(label)!r} {identity.reason}")
    return label
