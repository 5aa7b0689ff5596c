"""Capacity of one server of a configuration for one traffic class, by the scenario's rule.

- `capacity_rule: "model"` (the default, `curve_capacity`): the highest rate whose P99s the
  configuration's latency-against-load curve predicts within the class's targets, times the
  utilisation ceiling; where the curve cannot say, today's measured rule, labelled so.
- `capacity_rule: "measured"` (`measured_capacity`): today's rule, the highest achieved throughput
  among measured levels that meet the targets, times the ceiling; plans as before issue 12.

Either way each capacity carries its basis and, where one could be fitted, the configuration's
curve (the P99s a pool can expect at its planned load come from it). This module also picks a
scenario's points: the model's (`points_for_model`), a class's traffic (`points_for_class`), and
the offered configurations (`configurations`). The types are in `levels`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.configuration import (
    CONFIG_KEYS,
    Capacity,
    Configuration,
    with_servers,
)
from fleetplan.planner.capacity.curve_rule import Curves, curve_capacity, fallback
from fleetplan.planner.capacity.measured_rule import measured_capacities
from fleetplan.planner.scenario.scenario import CapacityRule, Scenario, TrafficClass


def points_for_model(points: pd.DataFrame, model: str) -> pd.DataFrame:
    """Points of `model`, named by its full id or by the name after the '/'."""
    full = points["model"].astype(str)
    wanted = model.lower()
    # Matched among the distinct names (a handful), then picked by membership: string methods
    # over every row cost a plan more than the rest of choosing its points.
    names = [
        n
        for n in full.unique()
        if isinstance(n, str) and wanted in (n.lower(), n.split("/")[-1].lower())
    ]
    chosen = points[full.isin(names)]
    ids = sorted(chosen["model"].unique())
    if len(ids) > 1:
        raise InputError(
            f"{model!r} matches several models ({', '.join(ids)}): give the full id", field="model"
        )
    return chosen


# Token lengths within 5 % of each other (and at least 1 token apart is always within) are one
# kind of traffic: the same configured shape measures a token or two apart from run to run (the
# tokenizer, a stop token: 204/62 and 204/63 tokens), while kinds people tell apart (chat and
# RAG, 512 and 2048 tokens) differ by far more.
SHAPE_TOLERANCE = 0.05


def near_length(a: object, b: object) -> bool:
    """Two token lengths of one kind of traffic (`SHAPE_TOLERANCE`); both unknown is one."""
    if pd.isna(a) or pd.isna(b):
        return bool(pd.isna(a) and pd.isna(b))
    a, b = float(a), float(b)
    return abs(a - b) <= max(1.0, SHAPE_TOLERANCE * max(a, b))


def same_kind(first: tuple, other: tuple) -> bool:
    """Whether two (dataset, input_len, output_len) shapes are one kind of traffic."""
    (d1, i1, o1), (d2, i2, o2) = first, other
    same_dataset = (pd.isna(d1) and pd.isna(d2)) or (
        not pd.isna(d1) and not pd.isna(d2) and d1 == d2
    )
    return same_dataset and near_length(i1, i2) and near_length(o1, o2)


def _near_column(column: pd.Series, wanted: int) -> pd.Series:
    """`near_length(value, wanted)` for each value of `column`, as arrays (unknown: False)."""
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        near = np.abs(values - wanted) <= np.maximum(
            1.0, SHAPE_TOLERANCE * np.maximum(values, wanted)
        )
    return pd.Series(near, index=column.index)


def _shapes(points: pd.DataFrame) -> list[tuple]:
    """The (dataset, input_len, output_len) shapes among `points`, each once, in order (every
    unknown one value, as pandas' drop_duplicates counts them)."""
    columns = [points[name].tolist() for name in ("dataset", "input_len", "output_len")]
    first: dict[tuple, tuple] = {}
    for row in zip(*columns, strict=True):
        first.setdefault(tuple(None if pd.isna(v) else v for v in row), row)
    return list(first.values())


def points_for_class(points: pd.DataFrame, traffic: TrafficClass) -> pd.DataFrame:
    """The points measured with this class's traffic (dataset or token shape; lengths within
    `SHAPE_TOLERANCE` are one kind)."""
    chosen = points
    if traffic.dataset is not None:
        chosen = chosen[chosen["dataset"] == traffic.dataset]
    if traffic.input_len is not None:
        chosen = chosen[_near_column(chosen["input_len"], traffic.input_len)]
    if traffic.output_len is not None:
        chosen = chosen[_near_column(chosen["output_len"], traffic.output_len)]
    found = _shapes(chosen)
    if len(found) > 1 and all(same_kind(found[0], other) for other in found[1:]):
        return chosen
    if len(found) > 1:
        described = "; ".join(_shape(d, i, o) for d, i, o in found)
        raise InputError(
            f"the model was measured with several kinds of traffic ({described}): say which one "
            f"class {traffic.name!r} is with `dataset` or `input_len`/`output_len`",
            field=f"classes.{traffic.name}.dataset",
        )
    return chosen


def traffic_measured(points: pd.DataFrame, traffic: TrafficClass) -> str:
    """The traffic a class's capacities rest on, in words ("sharegpt", "512/128 tokens"): the
    one kind of traffic `points_for_class` keeps for it (of one model's points)."""
    try:
        shapes = points_for_class(points, traffic)[["dataset", "input_len", "output_len"]]
    except InputError:
        return "several kinds: say which"
    if shapes.empty:
        return "none measured"
    return _shape(*shapes.iloc[0])


def _shape(dataset: object, input_len: object, output_len: object) -> str:
    parts = [str(dataset)] if pd.notna(dataset) else []
    if pd.notna(input_len) or pd.notna(output_len):
        parts.append(f"{input_len}/{output_len} tokens")
    return " ".join(parts) or "unlabelled"


def capacity_of(
    points: pd.DataFrame,
    traffic: TrafficClass,
    configuration: Configuration,
    max_utilization: float,
    *,
    rule: CapacityRule = "model",
) -> Capacity:
    """Capacity of one configuration, from its points (of one traffic shape), for one class."""
    return _class_capacities(
        points, traffic, [configuration], max_utilization, rule=rule, curves=Curves()
    )[0]


def _class_capacities(
    points: pd.DataFrame,
    traffic: TrafficClass,
    configs: list[Configuration],
    max_utilization: float,
    *,
    rule: CapacityRule,
    curves: Curves,
) -> list[Capacity]:
    fitted = curves.for_points(points)
    if rule == "measured":  # today's capacities; the curves only predict the pools' P99s
        return [
            replace(c, curve=fitted[c.configuration].source) if c.configuration in fitted else c
            for c in measured_capacities(points, traffic, configs, max_utilization)
        ]
    found = {c: curve_capacity(traffic, c, fitted.get(c), max_utilization) for c in configs}
    missing = [c for c, capacity in found.items() if capacity is None]
    if missing:  # the curve cannot say: today's rule, labelled (one pass for all of them)
        for measured in measured_capacities(points, traffic, missing, max_utilization):
            config = measured.configuration
            found[config] = fallback(measured, fitted.get(config), traffic)
    return [found[c] for c in configs]


def configurations(points: pd.DataFrame, scenario: Scenario) -> list[Configuration]:
    """Measured (GPU model, GPUs per server, server) configurations of the GPU models the
    scenario offers: every server measured on an offered GPU, or the offer's `variant` alone."""
    points = offered_variants(with_servers(points), scenario)
    offered = {gpu.gpu_model for gpu in scenario.gpus}
    keys = points[CONFIG_KEYS].drop_duplicates()
    return sorted(
        Configuration.of(*key) for key in keys.itertuples(index=False) if key[0] in offered
    )


def offered_variants(points: pd.DataFrame, scenario: Scenario) -> pd.DataFrame:
    """The points of the server variants the offers allow: an offer naming a `variant` keeps
    only its GPU's runs of that variant (an InputError lists those measured where none are)."""
    named = {g.gpu_model: g.variant for g in scenario.gpus if g.variant is not None}
    if not named or points.empty:
        return points
    variant = points["variant"] if "variant" in points.columns else pd.Series(None, points.index)
    keep = pd.Series(True, index=points.index)
    for i, offer in enumerate(scenario.gpus):
        if offer.variant is None:
            continue
        on_gpu = points["gpu_model"] == offer.gpu_model
        chosen = on_gpu & (variant == offer.variant)
        if on_gpu.any() and not chosen.any():
            there = sorted({str(v) for v in variant[on_gpu].dropna()})
            raise InputError(
                f"no runs of {offer.gpu_model} are of variant {offer.variant!r}; its variants "
                f"measured: {', '.join(there) or 'none (no run names one)'}",
                field=f"gpus[{i}].variant",
            )
        keep &= ~on_gpu | chosen
    return points[keep]


def capacities(points: pd.DataFrame, scenario: Scenario) -> list[Capacity]:
    """Capacity of every offered configuration for every class of the scenario (each class on
    the points of its own model: `classes[].model`, default the scenario's)."""
    by_model = {model: _model_points(points, model, scenario) for model in scenario.models()}
    result = []
    curves = {model: Curves() for model in by_model}  # one fit per configuration and shape
    chosen: dict[tuple, pd.DataFrame] = {}  # classes asking for one traffic share its points
    for traffic in scenario.classes:
        model = scenario.model_of(traffic)
        model_points, configs = by_model[model]
        asked = (model, *traffic.traffic_asked)
        if asked not in chosen:
            chosen[asked] = points_for_class(model_points, traffic)
        class_points = chosen[asked]
        result += _class_capacities(
            class_points,
            traffic,
            configs,
            scenario.max_utilization,
            rule=scenario.capacity_rule,
            curves=curves[model],
        )
    return [c.at_end(scenario.capacity_at) for c in result]


def _model_points(
    points: pd.DataFrame, model: str, scenario: Scenario
) -> tuple[pd.DataFrame, list[Configuration]]:
    model_points = points_for_model(points, model)
    if model_points.empty:
        # Bad input (exit 1), not an infeasible plan: the name is wrong, not the targets.
        there = sorted({str(m) for m in points["model"]}) if "model" in points else []
        field = "model" if model == scenario.model else "classes.model"
        raise InputError(
            f"no benchmark results for model {model!r}; there are results for: "
            f"{', '.join(there) or 'no model yet (load benchmark results first)'}. A model "
            'nobody measured is planned on estimates with "estimates": "fill" and its '
            "config.json (the scenario's model_configs, or `fleetplan plan --model-config`)",
            field=field,
        )
    model_points = offered_variants(with_servers(model_points), scenario)
    return model_points, configurations(model_points, scenario)
