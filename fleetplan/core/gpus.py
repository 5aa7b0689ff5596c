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

from fleetplan.core.text import printable

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


# Letters of other scripts drawn like Latin ones (Unicode's confusables, the ones GPU names use).
_LOOKALIKES = str.maketrans(
    "АВЕНІЈКМОРСТХЅаеіјорсхѕԁһӏΑΒΕΗΙΚΜΝΟΡΤΧΥΖαερτυνοιᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢ",
    "ABEHIJKMOPCTXSaeijopcxsdhlABEHIKMNOPTXYZaeptuvoiABCDEFGHIJKLMNOPRSTUVWYZ",
)


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


def gpu_count_in_label(label: str) -> tuple[str, int] | None:
    """("NVIDIA_L40S", 4) from a label that states its count ("4xNVIDIA_L40S", "8x H100",
    "2 x RTX 4090"), else None."""
    match = _COUNT_IN_LABEL.match(label)
    if match is None or int(match[1]) < 1:
        return None
    return match[2].strip(" _-"), int(match[1])


def plain_gpu_label(label: str) -> str:
    """A GPU label as it comes in (a campaign's GPU types, `--gpu`): one written with look-alike
    letters of a known GPU (a Cyrillic "Н100 PCIe") is refused, never taken as a GPU of its own
    (pydantic validator; `core.text.plain_name` refuses hidden characters before it)."""
    identity = canonical_gpu(label)
    if identity.lookalike_of:
        raise ValueError(f"the GPU {printable(label)!r} {identity.reason}")
    return label
