from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fleetplan.core.gpus import KNOWN_GPU_IDS, canonical_gpu


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("NVIDIA-GeForce-RTX-4090", "rtx-4090"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("4090", "rtx-4090"),
        ("RTX4090", "rtx-4090"),
        ("rtx-4090", "rtx-4090"),
        ("NVIDIA-H100-PCIe", "h100-pcie"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),  # NVML's name for the SXM5 part
        ("H100 SXM5", "h100-sxm"),
        ("NVIDIA H100 NVL", "h100-nvl"),
        ("NVIDIA H200", "h200"),
        ("NVIDIA H200 NVL", "h200-nvl"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA A100-PCIE-40GB", "a100-40gb"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA L40", "l40"),
        ("NVIDIA L4", "l4"),
        ("Tesla T4", "t4"),
        ("NVIDIA GeForce RTX 4080 SUPER", "rtx-4080-super"),
        ("RTX 4090 D", "rtx-4090d"),
    ],
)
def test_labels_map_to_canonical_ids(label, expected):
    identity = canonical_gpu(label)
    assert identity.known and identity.gpu_id == expected and identity.label == label


@pytest.mark.parametrize(
    ("label", "reason"),
    [
        ("H100", "PCIe"),
        ("A100", "40 GB"),
        ("NVIDIA GeForce RTX 4090 Laptop GPU", "not a GPU model"),
        ("Quantum GPU 9000", "not a GPU model"),
    ],
)
def test_ambiguous_or_unknown_labels_are_kept_and_flagged(label, reason):
    identity = canonical_gpu(label)
    assert not identity.known and identity.gpu_id == label and reason in identity.reason


@given(st.text(max_size=60))
def test_any_label_gives_an_answer_and_canonical_ids_are_fixed_points(label):
    identity = canonical_gpu(label)
    if identity.known:
        assert identity.gpu_id in KNOWN_GPU_IDS
        assert canonical_gpu(identity.gpu_id).gpu_id == identity.gpu_id
    else:
        assert identity.gpu_id == label.strip()
