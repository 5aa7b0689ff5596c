"""Fuzzing every import path with mutations of real files of every format: only project errors
come out, and a rejected file leaves the warehouse as it was. LLMPerf's files (and AIPerf's from
its repository) are fuzzed when ../shared/data/tool-outputs is there. Each test opens its own
warehouse and counts its own cases: it passes or fails alone, with -k or in any order."""

from __future__ import annotations

import contextlib
import json
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.inputs.fuzzing import SHARED, mutate, seed_files, seed_pairs
from fleetplan.core.errors import FleetplanError
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.ingest import ingest_file
from fleetplan.warehouse.preview import FileStatus
from tests.support.files import table_snapshot
from tests.support.paths import ROOT

SEEDS = seed_files()
OPTIONS = ImportOptions(gpu="rtx-4090", gpu_count=1)
FORMATS = {
    "vllm",
    "vllm-bench-appended",
    "fleetplan-run",
    "csv-table",
    "aiperf",
    "genai-perf",
    "guidellm",
    "guidellm-yaml",
}
FILE_CASES, PAIR_CASES = 500, 100
SETTINGS = {
    "deadline": None,
    "database": None,
    "derandomize": True,  # the same cases on every run: a red CI means a bug, not bad luck
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


def test_every_format_has_a_seed_file():
    formats = set(FORMATS)
    if SHARED is not None:  # LLMPerf's and InferenceX's real files are those of their repositories
        formats |= {"llmperf", "inferencex-trimmed", "inferencex-together"}
    if "inference-perf-pair" in seed_pairs():  # fleetplan's own run of inference-perf
        formats.add("inference-perf")
    assert {label.split(":")[0] for label in SEEDS} >= formats


@pytest.mark.slow  # 500 fuzzed imports: over a minute
def test_fuzzed_files_only_raise_project_errors_and_change_nothing(tmp_path):
    counts: Counter[str] = Counter()
    with Warehouse.open(tmp_path / "fuzz.duckdb") as warehouse:

        @settings(max_examples=FILE_CASES, **SETTINGS)
        @given(label=st.sampled_from(sorted(SEEDS)), seed=st.integers(0, 2**32 - 1))
        def fuzz(label, seed):
            name, data = SEEDS[label]
            file = FileInput.from_bytes(name, mutate(data, random.Random(seed)))
            counts[check(warehouse, file, OPTIONS)] += 1
            counts[f"format:{label.split(':')[0]}"] += 1

        fuzz()
    fuzzed = {key.removeprefix("format:") for key in counts if key.startswith("format:")}
    assert fuzzed == {label.split(":")[0] for label in SEEDS}, fuzzed  # every format, mutated
    cases = counts["imported"] + counts["rejected"] + counts["unchanged"]
    assert cases >= FILE_CASES * 0.9, counts  # (hypothesis skips a duplicate now and then)
    record("fuzz.json", counts, cases)


@pytest.mark.slow  # 100 fuzzed pairs of files: several seconds
def test_fuzzed_pairs_of_files_only_raise_project_errors(tmp_path):
    counts: Counter[str] = Counter()
    pairs = seed_pairs()
    with Warehouse.open(tmp_path / "fuzz.duckdb") as warehouse:

        @settings(max_examples=PAIR_CASES, **SETTINGS)
        @given(
            label=st.sampled_from(sorted(pairs)), which=st.booleans(), seed=st.integers(0, 2**32)
        )
        def fuzz(label, which, seed):
            (name, summary), (companion_name, companion) = pairs[label]
            if which:
                summary = mutate(summary, random.Random(seed))
            else:
                companion = mutate(companion, random.Random(seed))
            options = ImportOptions(
                gpu="rtx-4090", gpu_count=1, companions={companion_name: companion}
            )
            counts[check(warehouse, FileInput.from_bytes(name, summary), options)] += 1

        fuzz()
    cases = sum(counts.values())
    assert cases >= PAIR_CASES * 0.9, counts
    record("fuzz-pairs.json", counts, cases)


def check(warehouse: Warehouse, file: FileInput, options: ImportOptions) -> str:
    """Parse and ingest one file: 'imported', 'rejected' or 'unchanged' (skipped, already there),
    the warehouse as it was unless imported."""
    with contextlib.suppress(FleetplanError):  # a clear, typed refusal; anything else fails
        parse(file, options)
    before = table_snapshot(warehouse)
    outcome = ingest_file(warehouse, file, options)
    assert "unexpected error" not in outcome.message, outcome.message
    if outcome.status is FileStatus.IMPORTED:
        return "imported"
    assert table_snapshot(warehouse) == before  # refused, skipped or already there
    return "rejected" if outcome.status is FileStatus.REJECTED else "unchanged"


def record(name: str, counts: Counter[str], cases: int) -> None:
    artifacts = ROOT / "test-artifacts"
    artifacts.mkdir(exist_ok=True)
    summary = {"count": cases, **{k: v for k, v in counts.items() if ":" not in k}}
    Path(artifacts / name).write_text(json.dumps({**summary, "formats": sorted(SEEDS)}, indent=1))
