"""One collection on one host, as `fleetplan collect` (without `--ray`) runs it: the options go
to their backend, the run file is written, summed up and, on request, ingested.

`execute` is the single measurement path: a host of a Ray campaign runs it too
(collectors.ray_campaign.task). A backend is a function `(CollectOptions, out: Path) ->
CollectResult` listed in `BACKENDS` (its name also in `options.BACKEND_NAMES`, which the command
line offers; tests/test_collect_options.py checks that the two lists agree).

With `--find-capacity` the command prints each shape's search (collectors.search) instead of
the summary table, and exits 2 (EXIT_INFEASIBLE) when a shape's lowest rate already misses the
targets.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from fleetplan.collectors.openai_backend import collect_openai
from fleetplan.collectors.options import CollectOptions, IngestOptions
from fleetplan.collectors.run_file import CollectResult, summary_table
from fleetplan.collectors.torch_backend import collect_torch
from fleetplan.collectors.vllm_server import collect_vllm
from fleetplan.core.exits import EXIT_INFEASIBLE, EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS
from fleetplan.core.text import printable

Backend = Callable[[CollectOptions, Path], CollectResult]
BACKENDS: dict[str, Backend] = {
    "openai": collect_openai,
    "vllm": collect_vllm,
    "torch": collect_torch,
}


def execute(options: CollectOptions, out: Path) -> CollectResult:
    """One collection as the options say, its run file written under `out`: the one path every
    host runs, alone or on Ray."""
    return BACKENDS[options.backend](options, out)


def exit_code(result: CollectResult) -> int:
    """130 interrupted; 1 an incomplete level or a search's problem; 2 a search that found no
    rate meeting the targets; else 0."""
    if result.interrupted and any("interrupted" in p for p in result.problems):
        return EXIT_INTERRUPTED
    incomplete = any(not p.complete or p.failed for r in result.run_file.runs for p in r.points)
    searched = [outcome for _, outcome in result.searches]
    if incomplete or result.interrupted or any(outcome.problems for outcome in searched):
        return EXIT_PROBLEMS
    return EXIT_INFEASIBLE if any(outcome.infeasible for outcome in searched) else EXIT_OK


def run_collect(options: CollectOptions, *, out: Path, ingest: IngestOptions | None) -> int:
    """Collect, print what was measured and its problems, ingest on request; the exit code.
    A collection that cannot start raises (CollectError, PromptError)."""
    result = execute(options, out)
    if result.searches:
        print("\n\n".join(outcome.table(shape) for shape, outcome in result.searches))
    else:
        print(summary_table(result.run_file))
    print(f"run file: {result.path}")
    for problem in result.problems:
        print(f"problem: {printable(problem)}", file=sys.stderr)
    code = exit_code(result)
    if ingest is not None:
        from fleetplan.warehouse.db import Warehouse  # DuckDB: loaded only when asked for
        from fleetplan.warehouse.ingest import ingest_paths
        from fleetplan.warehouse.preview import FileStatus

        with Warehouse.open(ingest.warehouse, wait_s=ingest.wait_s) as warehouse:
            for outcome in ingest_paths(warehouse, [result.path]):
                print(f"{outcome.status.value}: {outcome.message}")
                if outcome.status is FileStatus.REJECTED and code == EXIT_OK:
                    code = EXIT_PROBLEMS  # a rejected ingest is a problem, as on a campaign
    return code
