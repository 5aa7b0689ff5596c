"""The io.net paper's claims checked against the warehouse: its published runs only, and rated
powers from its GPU catalog (`fleetplan.planner.paper.check` does the recomputing).

One function builds the claims; the Paper check page and `fleetplan paper-check` both render
them, so the page and the command line show the same objects.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pandas as pd

from fleetplan.planner.paper.basis import PAPER_COMMIT, PAPER_REPOSITORY, Claim
from fleetplan.planner.paper.check import check_paper
from fleetplan.services.planning import facts_from_catalog

if TYPE_CHECKING:
    from fleetplan.warehouse.db import Warehouse

# Runs loaded from the bundled sample data; uploads and `fleetplan ingest` are the user's.
PUBLISHED_ORIGIN = "sample_data"
NO_PAPER_RUNS = (
    "The warehouse has none of the paper's published runs measured on both H100 PCIe and "
    f"RTX 4090 servers ({PAPER_REPOSITORY} at commit {PAPER_COMMIT[:12]}, loaded from the bundled "
    "sample data): build it from the bundled data (`fleetplan build`) to check the paper."
)


def rated_powers(catalog: pd.DataFrame) -> dict[str, float]:
    """Rated power per GPU model (W) where the catalog has a figure; no entry where it has none."""
    return {
        gpu: facts.rated_w
        for gpu, facts in facts_from_catalog(catalog).items()
        if facts.rated_w is not None
    }


def published_points(points: pd.DataFrame, origins: dict[str, str] | None) -> pd.DataFrame:
    """The points of runs loaded from the bundled sample data, where `origins` (origin by run id)
    is known: a user's copy of the paper's file, modified or not, keeps the paper's provenance
    fields but is the user's, and must not change the paper's verdicts."""
    if origins is None:
        return points
    return points[points["run_id"].map(origins).eq(PUBLISHED_ORIGIN)]


def paper_claims(
    points: pd.DataFrame, catalog: pd.DataFrame, origins: dict[str, str] | None = None
) -> list[Claim]:
    """Every headline claim of the paper, recomputed from its own published runs; none when the
    points hold no model of the paper's measured on both GPU types."""
    return check_paper(published_points(points, origins), rated_powers(catalog))


def claims_from_warehouse(warehouse: Warehouse) -> list[Claim]:
    from fleetplan.warehouse.queries import benchmark_points, gpu_catalog, run_origins

    return paper_claims(benchmark_points(warehouse), gpu_catalog(warehouse), run_origins(warehouse))


def claims_json(claims: list[Claim]) -> str:
    """The claims as a JSON document, stable for diffing."""
    return json.dumps(
        {
            "source": {"repository": PAPER_REPOSITORY, "commit": PAPER_COMMIT},
            "claims": [claim.as_dict() for claim in claims],
        },
        indent=2,
        ensure_ascii=False,
    )


def claims_text(claims: list[Claim]) -> str:
    """The claims for a terminal: per claim its id, the paper's words and value, the recomputed
    value, the verdict, how, and the rows behind it."""
    if not claims:
        return NO_PAPER_RUNS
    blocks = []
    for claim in claims:
        rows = claim.rows.to_string(index=False, float_format=lambda v: f"{v:,.4g}")
        blocks.append(
            f"[{claim.key}] {claim.claim}\n"
            f"  verdict:    {claim.verdict.value}\n"
            f"  paper:      {claim.paper}\n"
            f"  recomputed: {claim.recomputed}\n"
            f"  how:        {claim.how}\n" + "\n".join(f"    {line}" for line in rows.splitlines())
        )
    return "\n\n".join(blocks)
