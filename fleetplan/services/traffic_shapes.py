"""Traffic shapes for the Plan page: which kinds of traffic a model was measured with, and a
stated default for a class that names none.

The planner refuses a class without a shape when the model's results hold several kinds of
traffic (it cannot guess which one the class is). The page instead fills in the most-measured
kind, writes it into the class (so the scenario it shows, downloads and puts in its link says
so, and the command line plans the same), and tells the user, who can choose another. A
class that asks for traffic the model was never measured with is kept as asked (the command
line cannot serve it either) and `unmeasured_shapes` says which kinds there are.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.rules import near_length, points_for_model, same_kind
from fleetplan.planner.scenario.scenario import Scenario, TrafficClass


@dataclass(frozen=True)
class TrafficKind:
    """One kind of traffic a model was measured with, and how many load levels have it."""

    dataset: str | None
    input_len: int | None
    output_len: int | None
    levels: int

    def label(self) -> str:
        parts = [self.dataset] if self.dataset else []
        if self.input_len is not None or self.output_len is not None:
            parts.append(f"{_n(self.input_len)}/{_n(self.output_len)} tokens")
        return " ".join(parts) or "unlabelled"

    def fields(self, points: pd.DataFrame) -> dict[str, object] | None:
        """The class fields that pick this kind out of `points`: the dataset where it alone
        does, else the dataset and token lengths; None for a kind no field can pick (no
        dataset and no lengths)."""
        if self.dataset is None and self.input_len is None and self.output_len is None:
            return None
        if self.dataset is not None:
            same = points[points["dataset"] == self.dataset]
            if len(same[["input_len", "output_len"]].drop_duplicates()) == 1:
                return {"dataset": self.dataset}
        return {
            "dataset": self.dataset,
            "input_len": self.input_len,
            "output_len": self.output_len,
        }


def _n(value: int | None) -> str:
    return "?" if value is None else str(value)


def _value(value: object) -> object:
    return None if value is None or pd.isna(value) else value


def traffic_kinds(points: pd.DataFrame, model: str) -> list[TrafficKind]:
    """The kinds of traffic `model` was measured with, most-measured first (then by name)."""
    try:
        mine = points_for_model(points, model)
    except InputError:
        return []
    columns = ["dataset", "input_len", "output_len"]
    counts = mine[columns].astype(object).where(mine[columns].notna(), None)
    grouped: list[tuple[tuple, int]] = []  # lengths within SHAPE_TOLERANCE: one kind
    for shape, n in sorted(counts.value_counts(dropna=False).items(), key=lambda s: -s[1]):
        for position, (first, levels) in enumerate(grouped):
            if same_kind(first, shape):
                grouped[position] = (first, levels + int(n))
                break
        else:
            grouped.append((shape, int(n)))
    kinds = [
        TrafficKind(
            dataset=_value(d),
            input_len=None if _value(i) is None else int(i),
            output_len=None if _value(o) is None else int(o),
            levels=n,
        )
        for (d, i, o), n in grouped
    ]
    return sorted(kinds, key=lambda k: (-k.levels, k.label()))


def datasets(points: pd.DataFrame, model: str) -> list[str]:
    """The dataset labels `model` was measured with (what a class's Dataset column offers)."""
    return sorted({k.dataset for k in traffic_kinds(points, model) if k.dataset})


def _matches(kind: TrafficKind, traffic: TrafficClass) -> bool:
    lengths = ((traffic.input_len, kind.input_len), (traffic.output_len, kind.output_len))
    return (traffic.dataset is None or traffic.dataset == kind.dataset) and all(
        wanted is None or (got is not None and near_length(wanted, got)) for wanted, got in lengths
    )


def with_default_shapes(scenario: Scenario, points: pd.DataFrame) -> tuple[Scenario, list[str]]:
    """The scenario with each class's traffic shape picking one kind the model was measured
    with, where it could mean several, and one sentence per class changed: a class that names
    no shape (where the model has several kinds) or a shape several kinds share gets the
    most-measured of those it could mean. A class that picks one kind, names none when the
    model has only one, or names one never measured (`unmeasured_shapes`) is kept as it is, so
    this is idempotent."""
    kinds = traffic_kinds(points, scenario.model)
    if not kinds:
        return scenario, []
    model_points = points_for_model(points, scenario.model)
    short = scenario.model.split("/")[-1]
    listed = "; ".join(f"{k.label()}: {k.levels} levels" for k in kinds)
    classes, notes = [], []
    for traffic in scenario.classes:
        matching = [k for k in kinds if _matches(k, traffic)]
        if len(matching) == 1 or (_has_shape(traffic) and not matching):
            classes.append(traffic)  # one kind; or none: `unmeasured_shapes` says so
            continue
        choosable = [k for k in matching if k.fields(model_points) is not None]
        if not choosable:
            classes.append(traffic)  # nothing a class can name: the planner says what is wrong
            continue
        kind = choosable[0]
        fields = {"dataset": None, "input_len": None, "output_len": None}
        fields |= kind.fields(model_points) or {}
        classes.append(traffic.model_copy(update=fields))
        if not _has_shape(traffic):
            why = "named no traffic shape"
        else:
            why = f"asked for {_asked(traffic)}, which matches several kinds"
        notes.append(
            f"Traffic class {traffic.name!r} {why} ({short} was measured with: {listed}): it is "
            f"planned on {kind.label()}, {_most(kind, kinds)}. Choose another in its Dataset "
            "column (or give Input tokens and Output tokens)."
        )
    return scenario.model_copy(update={"classes": classes}), notes


def unmeasured_shapes(scenario: Scenario, points: pd.DataFrame) -> list[str]:
    """One sentence per class whose traffic shape the model was never measured with: it is
    kept as the user gave it (the command line plans the same file alike, and cannot serve that
    class), and the sentence says which kinds there are."""
    kinds = traffic_kinds(points, scenario.model)
    short = scenario.model.split("/")[-1]
    listed = "; ".join(f"{k.label()}: {k.levels} levels" for k in kinds)
    return [
        f"Traffic class {traffic.name!r} asks for {_asked(traffic)}, which {short} was not "
        f"measured with, so no configuration can serve it: choose one it was measured with "
        f"({listed}) in its Dataset column, or upload runs of that traffic."
        for traffic in scenario.classes
        if kinds and _has_shape(traffic) and not any(_matches(k, traffic) for k in kinds)
    ]


def _most(kind: TrafficKind, kinds: list[TrafficKind]) -> str:
    if kind == kinds[0]:
        return "the most measured"
    return "the most measured that a class can name (unlabelled results cannot be chosen)"


def _has_shape(traffic: TrafficClass) -> bool:
    return any(v is not None for v in (traffic.dataset, traffic.input_len, traffic.output_len))


def _asked(traffic: TrafficClass) -> str:
    return TrafficKind(traffic.dataset, traffic.input_len, traffic.output_len, 0).label()
