"""What the io.net AIBC 2025 paper check rests on: the paper's published runs, its prices and power
figures, the verdicts and the claim record that the page and `fleetplan paper-check` both show.

Only the paper's own runs are judged: points from its results repository at the published commit.
A user's runs for the same models (uploaded, or ingested from a modified copy) are left out, so
they cannot change the paper's verdicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import pandas as pd

PAPER_REPOSITORY = "github.com/IOG-Foundation/llm-inference-benchmarks"
PAPER_COMMIT = "4990a807c6f1971edda635c18d98550059782eb8"
PAPER_PRICES = {"h100-pcie": 2.00, "rtx-4090": 0.25}
PAPER_POWER_W = {"h100-pcie": 700.0, "rtx-4090": 450.0}
# The paper's carbon figure: an EU grid average (docs/sources.md, "EU average (the paper's
# assumption)").
PAPER_GRID_G_PER_KWH = 242.0
# The server shape the paper sets against one H100 PCIe: four RTX 4090s cost $1.00/h, "about half".
PAPER_CONSUMER_GPUS = 4
RUN_COLUMNS = [
    "model",
    "gpu_model",
    "gpu_count",
    "offered_rate_rps",
    "source_index",
    "request_throughput_rps",
    "total_throughput_tps",
    "ttft_p99_ms",
    "source_file",
]


class Verdict(StrEnum):
    HOLDS = "holds"
    CONDITIONS = "holds with conditions"
    FAILS = "does not hold"
    NOT_REPRODUCIBLE = "not reproducible"
    UNKNOWN = "cannot be checked"


@dataclass(frozen=True)
class Claim:
    """One headline claim: the paper's words and value, the recomputed value, the verdict, how it
    was computed and the rows it rests on (each naming its source file where it is one run)."""

    key: str
    claim: str
    paper: str
    recomputed: str
    verdict: Verdict
    how: str
    rows: pd.DataFrame = field(repr=False)

    def as_dict(self) -> dict[str, Any]:
        """The claim as plain JSON values (no NaN: unknown is null)."""
        records = [
            {k: _plain(v) for k, v in row.items()} for row in self.rows.to_dict(orient="records")
        ]
        return {
            "id": self.key,
            "claim": self.claim,
            "paper": self.paper,
            "recomputed": self.recomputed,
            "verdict": self.verdict.value,
            "how": self.how,
            "rows": records,
        }


def _plain(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):  # numpy scalars
        return _plain(value.item())
    return value


def paper_runs(points: pd.DataFrame) -> pd.DataFrame:
    """The paper's own runs: points whose provenance is its results repository at the published
    commit; model ids shortened to the name after '/'."""
    if "source_repository" not in points or "source_commit" not in points:
        return points.iloc[0:0]
    own = points[
        (points["source_repository"] == PAPER_REPOSITORY)
        & (points["source_commit"] == PAPER_COMMIT)
    ].copy()
    own["model"] = own["model"].astype(str).str.split("/").str[-1]
    return own


def pairs(points: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """1x H100 PCIe runs and multi-GPU RTX 4090 runs of the models measured on both."""
    h100 = points[(points["gpu_model"] == "h100-pcie") & (points["gpu_count"] == 1)]
    consumer = points[(points["gpu_model"] == "rtx-4090") & (points["gpu_count"] >= 2)]
    both = set(h100["model"]) & set(consumer["model"])
    return h100[h100["model"].isin(both)], consumer[consumer["model"].isin(both)]


def level_means(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per (model, GPU, GPU count, offered rate): the mean over the runs of that level
    (the paper ran some levels twice), with how many runs there were."""
    keys = ["model", "gpu_model", "gpu_count", "offered_rate_rps"]
    return (
        runs.groupby(keys, as_index=False)
        .agg(
            runs=("total_throughput_tps", "size"),
            request_throughput_rps=("request_throughput_rps", "mean"),
            total_throughput_tps=("total_throughput_tps", "mean"),
            ttft_p99_ms=("ttft_p99_ms", "mean"),
        )
        .sort_values(keys, kind="stable")
        .reset_index(drop=True)
    )


def usd_per_million(gpu_model: pd.Series, gpu_count: pd.Series, tps: pd.Series) -> pd.Series:
    """$ per million total tokens of one fully loaded server at the paper's prices."""
    hourly = gpu_model.map(PAPER_PRICES) * gpu_count
    return hourly / (tps.where(tps > 0) * 3600) * 1e6


def pct_list(values: pd.Series) -> str:
    return "/".join(f"{v:.0%}".rstrip("%") for v in values) + " %"


def span(values: pd.Series, fmt: str) -> str:
    low, high = values.min(), values.max()
    return (
        format(low, fmt) if format(low, fmt) == format(high, fmt) else f"{low:{fmt}}–{high:{fmt}}"
    )
