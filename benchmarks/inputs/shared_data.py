"""Where the shared data beside the checkout is (../shared/data: the io.net results, other tools'
output files, request traces): never committed to fleetplan, read from there or from the folder an
environment variable names."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IONET_ENV = "FLEETPLAN_IONET_RESULTS"
TOOL_OUTPUTS_ENV = "FLEETPLAN_TOOL_OUTPUTS"


def _shared(relative: str, env: str) -> Path | None:
    candidates = [os.environ.get(env)]
    candidates += [folder / relative for folder in ROOT.parents]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir() and any(Path(candidate).iterdir()):
            return Path(candidate)
    return None


def ionet_results_dir() -> Path | None:
    """The raw io.net results: $FLEETPLAN_IONET_RESULTS, else shared/data/ionet-aibc2025/results
    beside the checkout or beside one of its parent folders."""
    found = _shared("shared/data/ionet-aibc2025/results", IONET_ENV)
    return found if found and any(found.glob("*.json")) else None


def tool_outputs_dir() -> Path | None:
    """Other tools' real output files (shared/data/tool-outputs, see its NOTICE.md): never
    committed to fleetplan, read from beside the checkout ($FLEETPLAN_TOOL_OUTPUTS)."""
    return _shared("shared/data/tool-outputs", TOOL_OUTPUTS_ENV)


def azure_traces_dir() -> Path | None:
    """The Azure LLM inference traces (2023: code and conversation), read from
    shared/data/traces/azure-llm-inference-2023 beside the checkout, never copied."""
    found = _shared("shared/data/traces/azure-llm-inference-2023", "FLEETPLAN_AZURE_TRACES")
    return found if found and any(found.glob("*.csv")) else None
