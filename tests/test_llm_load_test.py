"""llm-load-test (openshift-psap) output, in its 2023 layout (a real file of
openshift-psap/llm-load-test@262e682, output/output.json, was "not a format"; not committed) and
its current one (src/llm_load_test/result.py's fields), with figures of our own."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks.inputs.tool_reports import LLM_LOAD_TEST_CONFIG as CONFIG
from benchmarks.inputs.tool_reports import llm_load_test_requests as _requests
from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse


@pytest.mark.parametrize("layout", ["2023", "current"])
def test_an_output_is_a_closed_loop_level_timed_from_its_own_requests(layout):
    rows, ttfts = _requests(layout, failed=2 if layout == "current" else 0)
    data = json.dumps({"results": rows, "config": CONFIG, "summary": {}}).encode()
    parsed = parse(
        FileInput.from_bytes("output.json", data), ImportOptions(gpu="h100-sxm", gpu_count=1)
    )
    assert parsed.importer == "llm-load-test"
    (run,) = parsed.runs
    assert (run.model, run.dataset) == ("acme/Model-8B", "openorca_subset")
    (point,) = run.points
    assert (point.max_concurrency, point.completed) == (4, 30)
    assert point.failed == (2 if layout == "current" else 0)
    assert point.ttft_p99_ms == pytest.approx(1000 * np.percentile(ttfts, 99))
    assert point.tpot_p50_ms == pytest.approx(20.0)  # ours, not the tool's 21 ms
    assert point.requests is not None and len(point.requests.start_s) == len(rows)


def test_a_load_it_does_not_describe_is_refused_naming_it():
    rows, _ = _requests("current")
    config = CONFIG | {"load_options": {"type": "poisson", "rate": 4}}
    data = json.dumps({"results": rows, "config": config}).encode()
    with pytest.raises(InputError, match="poisson"):
        parse(FileInput.from_bytes("output.json", data), ImportOptions(gpu="h100-sxm", gpu_count=1))
