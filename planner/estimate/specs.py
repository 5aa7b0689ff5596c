"""The GPU spec table the serving model reads (`sample_data/gpu_specs.toml`, as a mapping): per
GPU its architecture, dense BF16 TFLOPS, memory, memory bandwidth and interconnect, with a
source; and which measured GPU an unmeasured one borrows its fitted efficiencies from."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from fleetplan.core.errors import InputError

GIB = 2**30
INTERCONNECTS = ("pcie", "nvlink")


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One GPU's figures, as the table gives them, with their source."""

    gpu_id: str
    architecture: str
    tflops: float  # dense BF16/FP16 tensor TFLOPS
    memory_gb: float  # read as GiB
    bandwidth_gb_s: float  # decimal GB/s
    interconnect: str  # "pcie" or "nvlink"
    interconnect_gb_s: float
    source: str
    # whether the GPUs of one server reach each other's memory directly (NVLink, or PCIe
    # peer-to-peer); without it (GeForce cards) NCCL stages every transfer through host memory
    peer_to_peer: bool = True

    @property
    def flops(self) -> float:
        return self.tflops * 1e12

    @property
    def bandwidth(self) -> float:
        return self.bandwidth_gb_s * 1e9

    @property
    def memory_bytes(self) -> float:
        return self.memory_gb * GIB


def _figure(entry: Mapping, key: str, where: str) -> float:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{where} has no number {key}", field=f"{where}.{key}")
    if not math.isfinite(value) or value <= 0:
        raise InputError(f"{where}.{key} must be above 0, got {value!r}", field=f"{where}.{key}")
    return float(value)


def specs_from_table(table: Mapping) -> dict[str, GpuSpec]:
    """The table's GPUs by id; an InputError names an entry without a figure it needs."""
    found: dict[str, GpuSpec] = {}
    for position, entry in enumerate(table.get("gpu", [])):
        where = f"gpu[{position}]"
        gpu_id = entry.get("id")
        if not isinstance(gpu_id, str) or not gpu_id:
            raise InputError(f"{where} has no id", field=f"{where}.id")
        link = entry.get("interconnect")
        if link not in INTERCONNECTS:
            raise InputError(
                f"{where}.interconnect must be one of {', '.join(INTERCONNECTS)}, got {link!r}",
                field=f"{where}.interconnect",
            )
        peer = entry.get("peer_to_peer", True)
        if not isinstance(peer, bool) or (link == "nvlink" and not peer):
            raise InputError(
                f"{where}.peer_to_peer must be true or false (true over NVLink), got {peer!r}",
                field=f"{where}.peer_to_peer",
            )
        found[gpu_id] = GpuSpec(
            gpu_id=gpu_id,
            architecture=str(entry.get("architecture", "")),
            tflops=_figure(entry, "tflops_bf16_dense", where),
            memory_gb=_figure(entry, "memory_gb", where),
            bandwidth_gb_s=_figure(entry, "bandwidth_gb_s", where),
            interconnect=link,
            interconnect_gb_s=_figure(entry, "interconnect_gb_s", where),
            source=str(entry.get("source", "")),
            peer_to_peer=peer,
        )
    return found


@dataclass(frozen=True, slots=True)
class Borrowed:
    """The measured GPU whose efficiencies an unmeasured one uses, and why, in words."""

    gpu_id: str
    same_architecture: bool
    words: str


def nearest_measured(
    specs: Mapping[str, GpuSpec], gpu_id: str, measured: Iterable[str]
) -> Borrowed | None:
    """The measured GPU nearest to `gpu_id`: itself where measured; else of its architecture,
    the one closest in memory bandwidth (log ratio); else of any architecture, so closest.
    None where nothing measured is in the table."""
    pool = sorted({g for g in measured if g in specs})
    if gpu_id in pool:
        return Borrowed(gpu_id, True, f"fitted on {gpu_id}'s own runs")
    if not pool or gpu_id not in specs:
        return None
    mine = specs[gpu_id]

    def distance(other: str) -> float:
        return abs(math.log(specs[other].bandwidth_gb_s / mine.bandwidth_gb_s))

    same = [g for g in pool if specs[g].architecture == mine.architecture]
    if same:
        chosen = min(same, key=distance)
        return Borrowed(
            chosen,
            True,
            f"no run on {gpu_id}: efficiencies borrowed from {chosen}, the nearest measured "
            f"{mine.architecture} GPU",
        )
    chosen = min(pool, key=distance)
    return Borrowed(
        chosen,
        False,
        f"no run on {gpu_id} nor on any {mine.architecture} GPU: efficiencies borrowed from "
        f"{chosen} ({specs[chosen].architecture}), the measured GPU nearest in memory bandwidth",
    )
