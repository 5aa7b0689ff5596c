"""Any GPU label can be named: clouds' accelerator and machine names resolve, with their count;
a label fleetplan cannot resolve is named by --gpu (or the Upload page's GPU field) and kept as
written; only a label that resolves to another GPU, or a family the given GPU is not of, is
refused."""

from __future__ import annotations

import json

import pytest

from benchmarks.inputs.vllm_results import make_result
from fleetplan.core.errors import InputError
from fleetplan.core.gpus import canonical_gpu, family_of, gpu_count_in_label, machine_gpus
from fleetplan.services.upload_tables import UploadLabels
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.preview import FileStatus, preview_uploads


@pytest.mark.parametrize(
    ("label", "gpu"),
    [
        # GKE's accelerator names (cloud.google.com/kubernetes-engine/docs/concepts/gpus)
        ("nvidia-h100-80gb", "h100-sxm"),
        ("nvidia-h100-mega-80gb", "h100-sxm"),
        ("nvidia-h200-141gb", "h200"),
        ("nvidia-a100-80gb", "a100-80gb"),
        ("nvidia-l4", "l4"),
        ("nvidia-tesla-t4", "t4"),
        ("nvidia-b200", "b200"),
        ("NVIDIA-H100-80GB", "h100-sxm"),  # case aside
    ],
)
def test_gke_accelerator_names_resolve(label, gpu):
    identity = canonical_gpu(label)
    assert identity.known and identity.gpu_id == gpu and identity.label == label


def test_gkes_tesla_a100_stays_ambiguous_and_names_its_family():
    identity = canonical_gpu("nvidia-tesla-a100")
    assert not identity.known and "40 GB and 80 GB" in (identity.reason or "")
    assert family_of("nvidia-tesla-a100") == "a100" and family_of("H100") == "h100"
    assert family_of("nvidia-h100-80gb") is None


@pytest.mark.parametrize(
    ("machine", "gpu", "count"),
    [
        ("a2-highgpu-1g", "a100-40gb", 1),
        ("a2-highgpu-8g", "a100-40gb", 8),
        ("a2-megagpu-16g", "a100-40gb", 16),
        ("a2-ultragpu-4g", "a100-80gb", 4),
        ("a3-highgpu-1g", "h100-sxm", 1),
        ("a3-highgpu-8g", "h100-sxm", 8),
        ("a3-megagpu-8g", "h100-sxm", 8),
        ("a3-edgegpu-8g", "h100-sxm", 8),
        ("a3-ultragpu-8g", "h200", 8),
        ("g2-standard-8", "l4", 1),
        ("g2-standard-24", "l4", 2),
        ("g2-standard-48", "l4", 4),
        ("g2-standard-96", "l4", 8),
        ("p4d.24xlarge", "a100-40gb", 8),
        ("p4de.24xlarge", "a100-80gb", 8),
        ("p5.48xlarge", "h100-sxm", 8),
        ("p5e.48xlarge", "h200", 8),
        ("g5.xlarge", "a10g", 1),
        ("g5.12xlarge", "a10g", 4),
        ("g5.48xlarge", "a10g", 8),
        ("g6.2xlarge", "l4", 1),
        ("g6.24xlarge", "l4", 4),
        ("g6e.xlarge", "l40s", 1),
        ("g6e.12xlarge", "l40s", 4),
        ("g6e.48xlarge", "l40s", 8),
        ("Standard_NC40ads_H100_v5", "h100-nvl", 1),
        ("Standard_NC80adis_H100_v5", "h100-nvl", 2),
        ("Standard_ND96isr_H100_v5", "h100-sxm", 8),
    ],
)
def test_machine_types_fix_the_gpu_and_its_count(machine, gpu, count):
    assert machine_gpus(machine) == (gpu, count)
    assert canonical_gpu(machine).gpu_id == gpu
    assert gpu_count_in_label(machine) == (machine, count)


@pytest.mark.parametrize("other", ["g2-standard-5", "p5.2xlarge", "a3-highgpu-3g", "n1-standard-8"])
def test_other_machine_names_are_not_guessed(other):
    assert machine_gpus(other) is None and not canonical_gpu(other).known


def _result(label: str | None, count: str | None = "1") -> bytes:
    metadata = {} if label is None else {"gpu_name": label}
    if count is not None:
        metadata["gpu_count"] = count
    return json.dumps(make_result(detailed=False, metadata=metadata)).encode()


def _run(data: bytes, **options):
    (run,) = parse(FileInput.from_bytes("result.json", data), ImportOptions(**options)).runs
    return run


def test_a_gke_label_is_the_gpu_it_names_with_or_without_gpu():
    assert _run(_result("nvidia-h100-80gb")).gpu_model == "h100-sxm"
    run = _run(_result("nvidia-h100-80gb"), gpu="h100-sxm")
    assert (run.gpu_model, run.gpu_label) == ("h100-sxm", "nvidia-h100-80gb")


def test_a_machine_type_gives_the_count():
    run = _run(_result("a3-highgpu-8g", count=None))
    assert (run.gpu_model, run.gpu_count, run.gpu_label) == ("h100-sxm", 8, "a3-highgpu-8g")


def test_a_count_after_the_name_gives_the_count():
    """SkyPilot's and Modal's accelerator:count ("A100-80GB:4"), and "H100x8": the
    GPU from the name, its count from the label; a family's name still asks which GPU."""
    run = _run(_result("A100-80GB:4", count=None))
    assert (run.gpu_model, run.gpu_count, run.gpu_label) == ("a100-80gb", 4, "A100-80GB")
    run = _run(_result("nvidia-h100-80gb:8", count=None))
    assert (run.gpu_model, run.gpu_count) == ("h100-sxm", 8)
    run = _run(_result("H100x8", count=None), gpu="h100-sxm")
    assert (run.gpu_model, run.gpu_count, run.gpu_label) == ("h100-sxm", 8, "H100")


@pytest.mark.parametrize("label", ["Quantum Tensor X9", "H100", "nvidia-tesla-a100", "gpu-pool-7"])
def test_a_label_fleetplan_cannot_resolve_is_named_by_gpu_and_kept(label):
    assert not _run(_result(label)).gpu_known  # without --gpu: kept, flagged
    wanted = "a100-80gb" if "a100" in label else "h100-sxm"
    run = _run(_result(label), gpu=wanted)
    assert (run.gpu_model, run.gpu_label, run.gpu_known) == (wanted, label, True)


@pytest.mark.parametrize(
    ("label", "given", "words"),
    [
        ("NVIDIA GeForce RTX 4090", "h100-sxm", "the file says 'NVIDIA GeForce RTX 4090'"),
        ("nvidia-h100-80gb", "h100-pcie", "(h100-sxm) but --gpu says 'h100-pcie'"),
        ("a3-highgpu-8g", "a100-80gb", "(h100-sxm) but --gpu says 'a100-80gb'"),
        ("H100", "a100-80gb", "not a GPU of the H100 family"),
        ("nvidia-tesla-a100", "h100-sxm", "not a GPU of the A100 family"),
    ],
)
def test_a_label_that_resolves_to_another_gpu_is_refused(label, given, words):
    with pytest.raises(InputError) as caught:
        _run(_result(label), gpu=given)
    assert words in str(caught.value) and caught.value.field == "gpu_name", str(caught.value)


def test_the_upload_pages_gpu_field_names_an_unresolvable_label_too(warehouse):
    options = UploadLabels(gpu="h100-sxm", gpu_count=1).options()
    (preview,) = preview_uploads(warehouse, [("mine.json", _result("gpu-pool-7"))], options)
    assert preview.status is FileStatus.READY, preview.message
    (run,) = preview.parsed.runs
    assert (run.gpu_model, run.gpu_label) == ("h100-sxm", "gpu-pool-7")
    refused = UploadLabels(gpu="a100-80gb", gpu_count=1).options()
    (preview,) = preview_uploads(warehouse, [("mine.json", _result("H100"))], refused)
    assert preview.status is FileStatus.REJECTED
    assert "but the GPU given above says 'a100-80gb'" in preview.message
