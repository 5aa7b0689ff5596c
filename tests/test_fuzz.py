"""Fuzzing every import path with mutations of real files of every format: only project errors
come out, and a rejected file leaves the warehouse as it was. LLMPerf's files (and AIPerf's from
its repository) are fuzzed when ../shared/data/tool-outputs is there."""

from __future__ import annotations

import contextlib
import json
import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleetplan.core.errors import FleetplanError
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.importers import FileInput, ImportOptions, parse
from fleetplan.warehouse.ingest import Status, ingest_file
from tests.support.files import table_snapshot
from tests.support.fuzzing import PAIRS, SHARED, mutate, seed_files
from tests.support.paths import ROOT

SEEDS = seed_files()
OPTIONS = ImportOptions(gpu="rtx-4090", gpu_count=1)
CASES = {"count": 0, "rejected": 0, "imported": 0}
_WAREHOUSE = Warehouse.open(Path(tempfile.mkdtemp(prefix="fleetplan-fuzz-")) / "fuzz.duckdb")


@settings(
    max_examples=500,
    deadline=None,
    database=None,
    derandomize=True,  # the same cases on every run: a red CI means a bug, not bad luck
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(label=st.sampled_from(sorted(SEEDS)), seed=st.integers(0, 2**32 - 1))
def test_fuzzed_files_only_raise_project_errors_and_change_nothing(label, seed):
    name, data = SEEDS[label]
    check(FileInput.from_bytes(name, mutate(data, random.Random(seed))), OPTIONS)


@settings(max_examples=100, deadline=None, database=None, derandomize=True)
@given(label=st.sampled_from(sorted(PAIRS)), which=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_fuzzed_pairs_of_files_only_raise_project_errors(label, which, seed):
    summary, companion = (path.read_bytes() for path in PAIRS[label])
    if which:
        summary = mutate(summary, random.Random(seed))
    else:
        companion = mutate(companion, random.Random(seed))
    options = ImportOptions(
        gpu="rtx-4090", gpu_count=1, companions={PAIRS[label][1].name: companion}
    )
    check(FileInput.from_bytes(PAIRS[label][0].name, summary), options)


def check(file: FileInput, options: ImportOptions) -> None:
    with contextlib.suppress(FleetplanError):  # a clear, typed refusal; anything else fails
        parse(file, options)
    before = table_snapshot(_WAREHOUSE)
    outcome = ingest_file(_WAREHOUSE, file, options)
    assert "unexpected error" not in outcome.message, outcome.message
    CASES["count"] += 1
    if outcome.status is Status.IMPORTED:
        CASES["imported"] += 1
    else:  # refused, skipped or already there: the warehouse is as it was
        CASES["rejected"] += outcome.status is Status.REJECTED
        assert table_snapshot(_WAREHOUSE) == before


def test_every_format_was_fuzzed_and_the_count_is_recorded():
    formats = {
        "vllm",
        "vllm-bench-appended",
        "fleetplan-run",
        "csv-table",
        "aiperf",
        "genai-perf",
        "guidellm",
        "guidellm-yaml",
    }
    if SHARED is not None:  # LLMPerf's and InferenceX's real files are those of their repositories
        formats |= {"llmperf", "inferencex-trimmed", "inferencex-together"}
    if "inference-perf-pair" in PAIRS:
        formats.add("inference-perf")
    assert {label.split(":")[0] for label in SEEDS} >= formats
    assert CASES["count"] >= 600
    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    (artifacts / "fuzz.json").write_text(json.dumps({**CASES, "formats": sorted(SEEDS)}, indent=1))
