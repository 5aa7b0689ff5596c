"""How many requests per second one server of a configuration carries at given P99 targets:
`fleetplan capacity`, from the warehouse's levels.

A configuration is (model, GPU model, GPUs per server) and a traffic shape (a dataset, or input
and output token lengths), matched as the planner matches them (`planner.capacity`'s
`points_for_model` and `points_for_class`). Its levels give a latency-against-load curve
(`planner.load_model.fit_curve`); the report says what the curve predicts (the capacity, its basis,
the P99s there), today's measured-level rule beside it for comparison, the saturation rate, and
the levels it rests on, each with the judgement of whether the server kept up. A model, GPU,
GPU count or traffic the warehouse does not hold is an InputError naming what it does hold.
"""

from __future__ import annotations

from typing import Annotated, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from fleetplan.core.errors import InputError
from fleetplan.core.gpus import canonical_gpu
from fleetplan.planner.capacity import points_for_class, points_for_model
from fleetplan.planner.load_model import Basis, CurveLevel, LoadCurve, fit_curve, measured_rule
from fleetplan.planner.scenario import TrafficClass
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points, configurations

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
KeptUp = Literal["kept up", "fell behind", "cannot tell"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CapacityQuery(_Model):
    """One configuration and traffic shape, and the P99 targets (a missing target: none)."""

    model: str = Field(min_length=1)
    gpu: str = Field(min_length=1, description="GPU model, any common label (4090, h100-pcie)")
    gpu_count: Annotated[int, Field(ge=1)]
    dataset: str | None = None
    input_len: Annotated[int, Field(ge=1)] | None = None
    output_len: Annotated[int, Field(ge=1)] | None = None
    ttft_p99_ms: Positive | None = None
    tpot_p99_ms: Positive | None = None
    extrapolate: bool = False  # past the highest stable level, toward saturation


class Targets(_Model):
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None


class CapacityLevel(_Model):
    """A measured level of the configuration, as the curve judged it."""

    offered_rps: float
    sustained_rps: float | None  # the rate the server sustained, the drain left out
    kept_up: KeptUp
    in_curve: bool  # the curve runs through the levels the server kept up with
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    reason: str  # the judgement, in a sentence
    source_file: str
    run_id: str
    level_index: int


class CapacityReport(_Model):
    model: str
    gpu_model: str
    gpu_count: int
    traffic: str  # the traffic shape, in words
    targets: Targets
    extrapolate: bool
    capacity_rps: float  # 0.0 when no rate meets the targets (`reason` says why)
    basis: Literal["measured", "interpolated", "extrapolated", "none"]
    reason: str | None
    predicted_ttft_p99_ms: float | None  # at capacity_rps
    predicted_tpot_p99_ms: float | None
    measured_rule_rps: float  # today's rule: the best achieved throughput among passing levels
    saturation_rps: float | None  # None: no level fell behind (not reached in the data)
    levels: list[CapacityLevel]


def _kept_up(stable: bool | None) -> KeptUp:
    return {True: "kept up", False: "fell behind"}.get(stable, "cannot tell")


def describe_shape(points: pd.DataFrame) -> str:
    """The traffic shape of points of one shape, in words ("sharegpt", "512/128 tokens")."""
    if points.empty:
        return "no traffic"
    row = points.iloc[0]
    parts = [str(row["dataset"])] if pd.notna(row["dataset"]) else []
    if pd.notna(row["input_len"]) or pd.notna(row["output_len"]):
        parts.append(f"{_int(row['input_len'])}/{_int(row['output_len'])} tokens")
    return " ".join(parts) or "unlabelled"


def _int(value: object) -> str:
    return "?" if pd.isna(value) else str(int(value))


def _listed(values: object) -> str:
    return ", ".join(str(v) for v in sorted({str(v) for v in values})) or "none"


def configuration_points(points: pd.DataFrame, query: CapacityQuery) -> pd.DataFrame:
    """The levels of the query's configuration and traffic; an InputError says what there is."""
    mine = points_for_model(points, query.model)
    if mine.empty:
        raise InputError(
            f"no levels of model {query.model!r}; the warehouse has: {_listed(points['model'])}",
            field="model",
        )
    model = str(mine["model"].iloc[0])
    gpu = canonical_gpu(query.gpu)
    if not gpu.known:
        raise InputError(f"GPU {gpu.describe()}", field="gpu")
    configs = _listed(configurations(mine))
    chosen = mine[(mine["gpu_model"] == gpu.gpu_id) & (mine["gpu_count"] == query.gpu_count)]
    if chosen.empty:
        raise InputError(
            f"{model} was not measured on {query.gpu_count}x {gpu.gpu_id}; it was on: {configs}",
            field="gpu" if gpu.gpu_id not in set(mine["gpu_model"]) else "gpu_count",
        )
    traffic = TrafficClass(
        name="capacity",
        rate_rps=1.0,
        dataset=query.dataset,
        input_len=query.input_len,
        output_len=query.output_len,
    )
    shapes = chosen.groupby(["dataset", "input_len", "output_len"], dropna=False)
    measured = "; ".join(describe_shape(rows) for _, rows in shapes)
    try:
        matched = points_for_class(chosen, traffic)
    except InputError:
        raise InputError(
            f"{model} on {query.gpu_count}x {gpu.gpu_id} was measured with several kinds of "
            f"traffic ({measured}): say which with a dataset or input/output lengths",
            field="dataset",
        ) from None
    if matched.empty:
        raise InputError(
            f"{model} on {query.gpu_count}x {gpu.gpu_id} was not measured with that traffic; it "
            f"was with: {measured}",
            field="dataset",
        )
    return matched


def _level(level: CurveLevel) -> CapacityLevel:
    return CapacityLevel(
        offered_rps=level.offered_rps,
        sustained_rps=level.sustained_rps,
        kept_up=_kept_up(level.stable),
        in_curve=bool(level.stable),
        ttft_p99_ms=level.ttft_p99_ms,
        tpot_p99_ms=level.tpot_p99_ms,
        reason=level.load_reason,
        source_file=level.source_file,
        run_id=level.run_id,
        level_index=level.level_index,
    )


def report_of(rows: pd.DataFrame, query: CapacityQuery, curve: LoadCurve) -> CapacityReport:
    """The report of one configuration's levels (`configuration_points`) and their curve."""
    estimate = curve.capacity(
        ttft_p99_ms=query.ttft_p99_ms,
        tpot_p99_ms=query.tpot_p99_ms,
        extrapolate=query.extrapolate,
    )
    first = rows.iloc[0]
    return CapacityReport(
        model=str(first["model"]),
        gpu_model=str(first["gpu_model"]),
        gpu_count=int(first["gpu_count"]),
        traffic=describe_shape(rows),
        targets=Targets(ttft_p99_ms=query.ttft_p99_ms, tpot_p99_ms=query.tpot_p99_ms),
        extrapolate=query.extrapolate,
        capacity_rps=estimate.capacity_rps,
        basis=Basis(estimate.basis).value,
        reason=estimate.reason,
        predicted_ttft_p99_ms=estimate.ttft_p99_ms,
        predicted_tpot_p99_ms=estimate.tpot_p99_ms,
        measured_rule_rps=measured_rule(
            rows, ttft_p99_ms=query.ttft_p99_ms, tpot_p99_ms=query.tpot_p99_ms
        ),
        saturation_rps=curve.saturation_rps,
        levels=[_level(level) for level in curve.levels],
    )


def capacity_report(points: pd.DataFrame, query: CapacityQuery) -> CapacityReport:
    """The capacity of the query's configuration, from benchmark points (any models)."""
    rows = configuration_points(points, query)
    return report_of(rows, query, fit_curve(rows))


def capacity_from_warehouse(warehouse: Warehouse, query: CapacityQuery) -> CapacityReport:
    """`fleetplan capacity`: the same, from what the warehouse holds now."""
    return capacity_report(benchmark_points(warehouse), query)
