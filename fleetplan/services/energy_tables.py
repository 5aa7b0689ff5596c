"""Energy per token for the Benchmarks page's Energy tab: measured where the level measured GPU
energy, else modelled from the catalog's power figures, else unknown (never zero).

Modelled, per the carbon model of docs/sources.md and the planner (`planner.peak.economics`): a
server of n GPUs draws n x (idle + u x (rated - idle)) W at utilisation u. A benchmark level has
no utilisation of its own, so u is the level's total tokens/s over the highest total tokens/s the
same configuration reached on the same traffic (one kind of source) in the data: its busiest level
counts as fully used. Energy per token = that power / total tokens/s. Every modelled row says so,
with the figures and where they come from.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from fleetplan.core.stats import finite_number
from fleetplan.planner.paper.unit_costs import tokens_per_kwh
from fleetplan.services.outliers import GROUP_COLUMNS

MEASURED = "measured"
MODELLED = "modelled"
UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class PowerFigures:
    """One GPU model's power figures from the catalog, with their basis and source."""

    gpu_model: str
    idle_w: float | None
    rated_w: float | None
    idle_basis: str | None  # "measured (third party)", "assumed", ...
    idle_source: str | None
    rated_source: str | None

    @property
    def known(self) -> bool:
        return self.idle_w is not None and self.rated_w is not None

    def describe(self) -> str:
        """One line: the figures and where they come from, shortened."""
        if not self.known:
            missing = [n for n, v in (("idle", self.idle_w), ("rated", self.rated_w)) if v is None]
            return f"{self.gpu_model}: no {' or '.join(missing)} power in the catalog"
        basis = f", {self.idle_basis}" if self.idle_basis else ""
        return (
            f"{self.gpu_model}: idle {self.idle_w:g} W{basis} ({_short(self.idle_source)}); "
            f"rated {self.rated_w:g} W ({_short(self.rated_source)})"
        )


def _short(text: str | None, limit: int = 140) -> str:
    text = (text or "no source").strip()
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


def power_figures(catalog: pd.DataFrame) -> dict[str, PowerFigures]:
    """Each catalog GPU's idle and rated power, with basis and sources (None where unknown)."""
    return {
        str(row["gpu_id"]): PowerFigures(
            gpu_model=str(row["gpu_id"]),
            idle_w=finite_number(row.get("idle_power_w")),
            rated_w=finite_number(row.get("rated_power_w")),
            idle_basis=_text(row.get("idle_power_basis")),
            idle_source=_text(row.get("idle_power_source")),
            rated_source=_text(row.get("rated_power_source")),
        )
        for row in catalog.to_dict("records")
    }


def assumed_idle_notes(gpus: pd.DataFrame, catalog: pd.DataFrame) -> list[str]:
    """For the Plan page's GPU table (`gpu_model`, `idle_w` columns): one line per GPU whose
    Idle W is the catalog's figure where the catalog marks that figure as assumed, saying so and
    how to replace it. A figure the user typed over it is theirs: no line."""
    figures = power_figures(catalog)
    notes = []
    for gpu, idle in zip(gpus.get("gpu_model", []), gpus.get("idle_w", []), strict=True):
        known = figures.get(str(gpu))
        if known is None or known.idle_basis != "assumed" or finite_number(idle) != known.idle_w:
            continue
        notes.append(
            f"{gpu}: Idle W {known.idle_w:g} is assumed, not measured "
            f"({_short(known.idle_source)}). Put your own reading "
            "(nvidia-smi --query-gpu=power.draw) in Idle W."
        )
    return notes


def _utilisation(points: pd.DataFrame) -> pd.Series:
    """Each level's total tokens/s over the highest of its configuration and traffic."""
    keys = [*GROUP_COLUMNS, *(["source_kind"] if "source_kind" in points.columns else [])]
    throughput = points["total_throughput_tps"].astype(float)
    busiest = throughput.groupby([points[k] for k in keys], dropna=False).transform("max")
    return (throughput / busiest.where(busiest > 0)).clip(upper=1.0)


def energy_per_token(points: pd.DataFrame, figures: dict[str, PowerFigures]) -> pd.DataFrame:
    """Per level (finite offered rate or not): `j_per_token` (GPU joules per input + output
    token), `tokens_per_kwh`, `energy_basis` (measured / modelled / unknown), the modelled
    `utilisation` and `power_w`, and `energy_how` in words."""
    measured = tokens_per_kwh(points)
    utilisation = _utilisation(points)
    rows = []
    for index, row in points.iterrows():
        tps = finite_number(row["total_throughput_tps"])
        known = figures.get(str(row["gpu_model"]))
        n = int(row["gpu_count"])
        if pd.notna(measured[index]) and measured[index] > 0:
            j = 3.6e6 / measured[index]
            how = f"measured: {row['energy_method']}"
            rows.append(
                (j, measured[index], MEASURED, None, finite_number(row.get("avg_power_w")), how)
            )
        elif known is not None and known.known and tps and pd.notna(utilisation[index]):
            u = float(utilisation[index])
            watts = n * (known.idle_w + u * (known.rated_w - known.idle_w))
            how = (
                f"modelled: {n} x ({known.idle_w:g} W idle + {u:.0%} x ({known.rated_w:g} - "
                f"{known.idle_w:g}) W) = {watts:,.0f} W at {tps:,.0f} tokens/s"
            )
            rows.append((watts / tps, tps * 3.6e6 / watts, MODELLED, u, watts, how))
        else:
            why = known.describe() if known is not None else f"{row['gpu_model']} not in catalog"
            rows.append((None, None, UNKNOWN, None, None, f"not measured, and {why}"))
    columns = ["j_per_token", "tokens_per_kwh", "energy_basis", "utilisation", "power_w"]
    frame = pd.DataFrame(rows, index=points.index, columns=[*columns, "energy_how"])
    return points.drop(columns=["tokens_per_kwh"], errors="ignore").join(frame)


def figures_used(points: pd.DataFrame, figures: dict[str, PowerFigures]) -> list[str]:
    """One line per GPU model of these points: the power figures a model would use."""
    return [
        figures[g].describe() if g in figures else f"{g}: not in the GPU catalog"
        for g in sorted(points["gpu_model"].unique())
    ]
