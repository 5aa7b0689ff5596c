"""The bundled sample data: derived from public benchmark results by fleetplan's own importer.

`rebuild_ionet` reads the io.net AIBC 2025 raw results (vLLM 0.8.5 `benchmark_serving.py` files)
with the same vLLM importer `fleetplan ingest` uses, adds the provenance and the facts the files
do not carry (stated in the dataset's NOTICE.md), and writes one compact fleetplan run file.
`build` loads the reference tables and every run file of `sample_data/benchmarks/`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

from fleetplan.core.contract import RUN_FILE_FORMAT, Provenance, RunFile
from fleetplan.core.paths import sample_data_dir
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.ingest import Outcome, ingest_paths
from fleetplan.warehouse.reference import load_reference

log = logging.getLogger(__name__)

IONET_FILE = "ionet-aibc2025.json"
# From the dataset's NOTICE.md: where the files come from, and what they do not say themselves.
IONET_REPOSITORY = "github.com/IOG-Foundation/llm-inference-benchmarks"
IONET_COMMIT = "4990a807c6f1971edda635c18d98550059782eb8"
IONET_LICENCE = "Apache-2.0"
IONET_ENGINE_VERSION = "0.8.5"
IONET_DTYPE = "float16"
IONET_NOTES = (
    "io.net AIBC 2025 paper results. Engine version, dtype and tensor parallelism (one vLLM "
    "server over all GPUs of the host) are stated by the dataset's NOTICE, not by the file. "
    "No power or energy was measured."
)


def sample_dir() -> Path:
    return sample_data_dir()


def rebuild_ionet(source: Path, out: Path) -> int:
    """Derive the compact sample run file from the raw io.net results; returns the run count."""
    files = sorted(p for p in source.rglob("*.json") if p.is_file())
    if not files:
        raise FileNotFoundError(f"no result files under {source}")
    runs = []
    for path in files:
        parsed = parse(FileInput.from_bytes(path.name, path.read_bytes()), ImportOptions())
        for run in parsed.runs:
            runs.append(
                run.model_copy(
                    update={
                        "tool_version": IONET_ENGINE_VERSION,
                        "engine_version": IONET_ENGINE_VERSION,
                        "dtype": IONET_DTYPE,
                        "tensor_parallel_size": run.gpu_count,
                        "provenance": Provenance(
                            repository=IONET_REPOSITORY,
                            commit=IONET_COMMIT,
                            path=f"results/{path.name}",
                            licence=IONET_LICENCE,
                            notes=IONET_NOTES,
                        ),
                    }
                )
            )
    run_file = RunFile(
        format=RUN_FILE_FORMAT,
        format_version=1,
        generator="fleetplan sample-data (warehouse.sample_data.rebuild_ionet)",
        description=(
            f"Derived from {len(files)} raw result files of {IONET_REPOSITORY} at commit "
            f"{IONET_COMMIT} ({IONET_LICENCE}); each run names its original file and sha256."
        ),
        runs=tuple(runs),
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(_compact(run_file), encoding="utf-8")
    return len(runs)


def _compact(run_file: RunFile) -> str:
    """One run per line: small, and diffs stay readable when the importer changes."""
    head = run_file.model_dump(mode="json", exclude={"runs"}, exclude_none=True)
    lines = [json.dumps(_plain_run(run), ensure_ascii=False) for run in run_file.runs]
    opening = json.dumps(head, ensure_ascii=False)[:-1] + ', "runs": [\n'
    return opening + ",\n".join(lines) + "\n]}\n"


def _plain_run(run) -> dict:
    """A run as JSON, without empty values (no notes is no `notes` key)."""
    dumped = run.model_dump(mode="json", exclude_none=True)
    for point in dumped.get("points", []):
        if not point.get("notes"):
            point.pop("notes", None)
    return dumped


def benchmark_files(folder: Path) -> list[Path]:
    return sorted((folder / "benchmarks").glob("*.json"))


def build(warehouse: Warehouse, folder: Path | None = None) -> Iterator[Outcome | dict[str, int]]:
    """Load reference data, then ingest the bundled run files (already present ones are skipped)."""
    folder = folder or sample_dir()
    yield load_reference(warehouse, folder)
    yield from ingest_paths(warehouse, benchmark_files(folder), origin="sample_data")
