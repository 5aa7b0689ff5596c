"""A level over a physical bound never counts as stable for capacity.

`fleetplan.services.envelope.with_envelope_flags` adds the column `envelope_flag` to the points the
planner plans on: for each level, what it claims beyond its server's physical bounds
(`planner.capacity.envelope.level_flags`: the KV-cache rate bound by Little's law, the
decode-bandwidth bound on output tokens/s, weights that do not fit), in words, or None. Such a level
measured something else (a forged usage count, a mislabelled GPU count or model, cached prompts), so
wherever the planner judges levels it is "cannot tell", the bound named: never stable, never
evidence of a sustained rate (`beyond_envelope`), and never a level the measured rule takes
(`flagged`).
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from fleetplan.core.load import LevelLoad

ENVELOPE_FLAG = "envelope_flag"


def envelope_flag(row: Mapping) -> str | None:
    """What the row's level claims beyond its server's bounds; None: nothing (or not checked)."""
    value = row.get(ENVELOPE_FLAG)
    return value if isinstance(value, str) and value else None


def beyond_envelope(row: Mapping, load: LevelLoad) -> LevelLoad:
    """The level's judgement, or "cannot tell" with the bound named where it claims more than
    its server can carry (its sustained rate is not evidence either)."""
    flag = envelope_flag(row)
    if flag is None:
        return load
    return LevelLoad(None, None, load.basis, f"cannot tell: over a physical bound: {flag}")


def flagged(points: pd.DataFrame) -> pd.Series:
    """Which rows claim more than their server can carry (False where the column is absent)."""
    if ENVELOPE_FLAG not in points:
        return pd.Series(False, index=points.index)
    return points[ENVELOPE_FLAG].map(lambda value: isinstance(value, str) and bool(value))
