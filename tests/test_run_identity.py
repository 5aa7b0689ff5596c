"""What identity a run has: its content (the canonical points and the setup they were measured
on), never the file's bytes nor a checksum the file states; and a vLLM result's numeric
`gpu_count` is read, not reported as ignored."""

from __future__ import annotations

import json

from fleetplan.warehouse.importers import FileInput, ImportOptions, parse
from tests.support.vllm_results import make_result


def test_an_integer_gpu_count_is_read_and_not_reported_as_ignored():
    result = make_result(metadata={"gpu_name": "NVIDIA GeForce RTX 4090"}) | {
        "gpu_count": 2,
        "tensor_parallel_size": 2,
    }
    parsed = parse(FileInput.from_bytes("r.json", json.dumps(result).encode()), ImportOptions())
    (run,) = parsed.runs
    assert run.gpu_count == 2 and run.tensor_parallel_size == 2
    assert not any("ignored keys" in warning for warning in parsed.warnings), parsed.warnings
    # a key fleetplan does not read is still reported
    odd = result | {"frobnicate": 3}
    parsed = parse(FileInput.from_bytes("r.json", json.dumps(odd).encode()), ImportOptions())
    assert any(w.endswith("ignored keys frobnicate") for w in parsed.warnings), parsed.warnings
