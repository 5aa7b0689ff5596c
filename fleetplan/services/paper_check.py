"""The io.net paper's claims checked against the warehouse: its benchmark points, and rated powers
from its GPU catalog (`fleetplan.planner.paper_check` does the recomputing)."""

from __future__ import annotations

import pandas as pd

from fleetplan.planner.paper_check import Claim, check_paper
from fleetplan.services.planning import facts_from_catalog


def rated_powers(catalog: pd.DataFrame) -> dict[str, float]:
    """Rated power per GPU model (W) where the catalog has a figure; no entry where it has none."""
    return {
        gpu: facts.rated_w
        for gpu, facts in facts_from_catalog(catalog).items()
        if facts.rated_w is not None
    }


def paper_claims(points: pd.DataFrame, catalog: pd.DataFrame) -> list[Claim]:
    """Every headline claim of the paper, recomputed; none when no model was measured on both
    GPU types."""
    return check_paper(points, rated_powers(catalog))
