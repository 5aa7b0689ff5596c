"""Capacity of one server of a configuration for one traffic class, from measured load levels.

The rule (the default, so that plans are reproducible): the highest achieved request throughput
among the configuration's measured levels whose P99 TTFT and P99 TPOT meet the class's targets (a
missing target is no constraint; a missing measurement never passes a target), times the
scenario's utilisation ceiling. No extrapolation beyond measured levels; 0 when no level passes.
Levels marked incomplete (cut short, or with failed requests) are not used.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from fleetplan.core.errors import InputError
from fleetplan.planner.scenario import Scenario, TrafficClass

BEHIND_FRACTION = 0.9  # achieved below this share of the offered rate: the server fell behind


@dataclass(frozen=True, slots=True, order=True)
class Configuration:
    gpu_model: str
    gpus_per_server: int

    @property
    def label(self) -> str:
        return f"{self.gpus_per_server}x {self.gpu_model}"


@dataclass(frozen=True, slots=True)
class Level:
    """The measured load level a capacity rests on."""

    run_id: str
    offered_rate_rps: float | None
    max_concurrency: int | None
    request_throughput_rps: float
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    input_tokens_mean: float | None
    output_tokens_mean: float | None
    avg_power_w: float | None  # all GPUs of the server together; None when not measured
    source_file: str

    @property
    def behind(self) -> bool:
        """The server did not keep up with the offered load (a burst at inf never does)."""
        if self.offered_rate_rps is None:
            return False
        if math.isinf(self.offered_rate_rps):
            return True
        return self.request_throughput_rps < BEHIND_FRACTION * self.offered_rate_rps

    def describe(self) -> str:
        load = (
            "all requests at once"
            if self.offered_rate_rps is not None and math.isinf(self.offered_rate_rps)
            else f"{self.offered_rate_rps:g} req/s offered"
            if self.offered_rate_rps is not None
            else f"concurrency {self.max_concurrency}"
        )
        return f"{load}, {self.request_throughput_rps:.2f} req/s achieved"


@dataclass(frozen=True, slots=True)
class Capacity:
    traffic_class: str
    configuration: Configuration
    capacity_rps: float  # per server, after the utilisation ceiling; 0 when no level passes
    level: Level | None
    reason: str | None = None  # why no level passes
    best_ttft_p99_ms: float | None = None
    best_tpot_p99_ms: float | None = None


def points_for_model(points: pd.DataFrame, model: str) -> pd.DataFrame:
    """Points of `model`, named by its full id or by the name after the '/'."""
    full = points["model"].astype(str)
    short = full.str.split("/").str[-1]
    chosen = points[(full.str.lower() == model.lower()) | (short.str.lower() == model.lower())]
    ids = sorted(chosen["model"].unique())
    if len(ids) > 1:
        raise InputError(
            f"{model!r} matches several models ({', '.join(ids)}): give the full id", field="model"
        )
    return chosen


def points_for_class(points: pd.DataFrame, traffic: TrafficClass) -> pd.DataFrame:
    """The points measured with this class's traffic (dataset or token shape)."""
    chosen = points
    if traffic.dataset is not None:
        chosen = chosen[chosen["dataset"] == traffic.dataset]
    if traffic.input_len is not None:
        chosen = chosen[chosen["input_len"] == traffic.input_len]
    if traffic.output_len is not None:
        chosen = chosen[chosen["output_len"] == traffic.output_len]
    shapes = chosen[["dataset", "input_len", "output_len"]].drop_duplicates()
    if len(shapes) > 1:
        described = "; ".join(
            _shape(d, i, o) for d, i, o in shapes.itertuples(index=False, name=None)
        )
        raise InputError(
            f"the model was measured with several kinds of traffic ({described}): say which one "
            f"class {traffic.name!r} is with `dataset` or `input_len`/`output_len`",
            field=f"classes.{traffic.name}.dataset",
        )
    return chosen


def _shape(dataset: object, input_len: object, output_len: object) -> str:
    parts = [str(dataset)] if pd.notna(dataset) else []
    if pd.notna(input_len) or pd.notna(output_len):
        parts.append(f"{input_len}/{output_len} tokens")
    return " ".join(parts) or "unlabelled"


def _passes(value: float | None, target: float | None) -> bool:
    return target is None or (value is not None and not math.isnan(value) and value <= target)


def _level(row: dict) -> Level:
    def opt(name: str) -> float | None:
        value = row.get(name)
        return None if value is None or pd.isna(value) else float(value)

    concurrency = opt("max_concurrency")
    return Level(
        run_id=str(row["run_id"]),
        offered_rate_rps=opt("offered_rate_rps"),
        max_concurrency=int(concurrency) if concurrency is not None else None,
        request_throughput_rps=float(row["request_throughput_rps"]),
        ttft_p99_ms=opt("ttft_p99_ms"),
        tpot_p99_ms=opt("tpot_p99_ms"),
        input_tokens_mean=opt("input_tokens_mean"),
        output_tokens_mean=opt("output_tokens_mean"),
        avg_power_w=opt("avg_power_w"),
        source_file=str(row.get("source_file", "")),
    )


def capacity_of(
    points: pd.DataFrame,
    traffic: TrafficClass,
    configuration: Configuration,
    max_utilization: float,
) -> Capacity:
    """Capacity of one configuration, from its points, for one class."""
    return _class_capacities(points, traffic, [configuration], max_utilization)[0]


def _numeric(frame: pd.DataFrame, column: str) -> pd.Series:
    return (
        pd.to_numeric(frame[column], errors="coerce")
        if column in frame
        else pd.Series(float("nan"), index=frame.index)
    )


def _class_capacities(
    points: pd.DataFrame,
    traffic: TrafficClass,
    configs: list[Configuration],
    max_utilization: float,
) -> list[Capacity]:
    """Capacities of many configurations for one class, in one vectorised pass."""
    keys = ["gpu_model", "gpu_count"]
    # Levels cut short or with failed requests do not show what the server sustains: left out.
    complete = points["complete"].fillna(True).astype(bool) if "complete" in points else True
    usable = points[
        (points["completed"] > 0) & points["request_throughput_rps"].notna() & complete
    ].copy()
    usable["_ttft"] = _numeric(usable, "ttft_p99_ms")
    usable["_tpot"] = _numeric(usable, "tpot_p99_ms")
    ok = pd.Series(True, index=usable.index)
    if traffic.ttft_p99_ms is not None:
        ok &= usable["_ttft"].le(traffic.ttft_p99_ms)  # an unmeasured value never passes
    if traffic.tpot_p99_ms is not None:
        ok &= usable["_tpot"].le(traffic.tpot_p99_ms)
    grouped = usable.groupby(keys)
    best_ttft = grouped["_ttft"].min().to_dict()
    best_tpot = grouped["_tpot"].min().to_dict()
    winners = (
        usable[ok]
        .sort_values(["request_throughput_rps", "run_id"], kind="stable")
        .groupby(keys)
        .tail(1)
    )
    winner_rows = {(row["gpu_model"], row["gpu_count"]): row for row in winners.to_dict("records")}
    result = []
    for config in configs:
        key = (config.gpu_model, config.gpus_per_server)
        ttft, tpot = _finite(best_ttft.get(key)), _finite(best_tpot.get(key))
        common = {
            "traffic_class": traffic.name,
            "configuration": config,
            "best_ttft_p99_ms": ttft,
            "best_tpot_p99_ms": tpot,
        }
        row = winner_rows.get(key)
        if row is None:
            reason = _why(key in best_ttft, traffic, ttft, tpot)
            result.append(Capacity(capacity_rps=0.0, level=None, reason=reason, **common))
        else:
            level = _level(row)
            capacity = level.request_throughput_rps * max_utilization
            result.append(Capacity(capacity_rps=capacity, level=level, **common))
    return result


def _finite(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _why(
    measured: bool, traffic: TrafficClass, best_ttft: float | None, best_tpot: float | None
) -> str:
    if not measured:
        return "no measured level"
    parts = []
    if traffic.ttft_p99_ms is not None:
        best = "not measured" if best_ttft is None else f"best {best_ttft:.1f} ms"
        parts.append(f"P99 TTFT target {traffic.ttft_p99_ms:g} ms, {best}")
    if traffic.tpot_p99_ms is not None:
        best = "not measured" if best_tpot is None else f"best {best_tpot:.1f} ms"
        parts.append(f"P99 TPOT target {traffic.tpot_p99_ms:g} ms, {best}")
    if (
        len(parts) == 2
        and _passes(best_ttft, traffic.ttft_p99_ms)
        and _passes(best_tpot, traffic.tpot_p99_ms)
    ):
        parts.append("no single level meets both")
    return "; ".join(parts)


def configurations(points: pd.DataFrame, scenario: Scenario) -> list[Configuration]:
    """Measured (GPU model, GPUs per server) pairs of the GPU models the scenario offers."""
    offered = {gpu.gpu_model for gpu in scenario.gpus}
    pairs = points[["gpu_model", "gpu_count"]].drop_duplicates()
    return sorted(
        Configuration(str(g), int(n)) for g, n in pairs.itertuples(index=False) if g in offered
    )


def capacities(points: pd.DataFrame, scenario: Scenario) -> list[Capacity]:
    """Capacity of every offered configuration for every class of the scenario."""
    model_points = points_for_model(points, scenario.model)
    result = []
    configs = configurations(model_points, scenario)
    for traffic in scenario.classes:
        class_points = points_for_class(model_points, traffic)
        result += _class_capacities(class_points, traffic, configs, scenario.max_utilization)
    return result
