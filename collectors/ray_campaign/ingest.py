"""A campaign's finished runs, loaded once at the end (the warehouse keeps one writer, so the
driver loads them, never the hosts)."""

from __future__ import annotations

from pathlib import Path

from fleetplan.collectors.options import IngestOptions
from fleetplan.collectors.ray_campaign import report
from fleetplan.collectors.ray_campaign.jobs import Job
from fleetplan.core.errors import WarehouseError


def ingest_finished(ingest: IngestOptions, out: Path, jobs: list[Job]) -> bool:
    """Loads the finished runs; False (saying how to load them later) when it cannot."""
    from fleetplan.warehouse.db import Warehouse  # DuckDB: loaded only when asked for
    from fleetplan.warehouse.ingest import ingest_paths
    from fleetplan.warehouse.preview import FileStatus

    paths = [out / job.run_file for job in jobs if job.run_file]
    if not paths:
        return True
    try:
        with Warehouse.open(ingest.warehouse, wait_s=ingest.wait_s) as warehouse:
            outcomes = list(ingest_paths(warehouse, paths))
    except WarehouseError as error:
        folders = " ".join(sorted({str(p.parent) for p in paths}))
        report.err(
            f"fleetplan collect: the runs were not ingested ({error}); they are kept: "
            f"`fleetplan ingest {folders}` later, or upload them in the dashboard"
        )
        return False
    for outcome in outcomes:
        report.out(f"{outcome.status.value}: {Path(outcome.file).name}: {outcome.message}")
    return all(outcome.status is not FileStatus.REJECTED for outcome in outcomes)
