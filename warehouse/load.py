"""The load columns of `points` (`columns.LOAD_COLUMNS`): the rate a level sustained with the
drain left out, whether the server kept up, the basis of that judgement and its reason.

`fleetplan.core.load` makes the judgement; here it is stored and read back the same way for all:
- at ingest (`store.store_runs`) every point is judged with `judge_point`. fleetplan's own runs
  carry per-request send times, so theirs rests on them (basis 'send times'). The request log
  itself is not stored: that judgement cannot be made again later, so it is kept as stored.
- the migration that added the columns judged the rows already there (`backfill`), from their
  statistics: what an ingest makes today of a level without a request log (the logs of runs
  stored before were not kept, so those levels are 'estimated' too).
- read through `queries.benchmark_points`, 'estimated' rows are judged again in the context of
  their configuration and traffic shape (`in_context`: the same `GROUP_COLUMNS`): an estimate
  compares a level with the quickest level of that configuration, which one file alone may not
  hold. `fleetplan benchmarks`, the dashboard and the planner's load model all read that table.

The measured `request_throughput_rps` is never touched: `sustained_rps` sits beside it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from fleetplan.core.load import JUDGED_FROM, LevelLoad, LoadBasis, judge_row, reference_of
from fleetplan.warehouse.columns import LOAD_COLUMNS

if TYPE_CHECKING:
    import duckdb
    import pandas as pd

# A configuration and a traffic shape: the levels an estimate is judged against.
GROUP_COLUMNS = (
    "model",
    "gpu_model",
    "gpu_count",
    "tensor_parallel_size",
    "dataset",
    "input_len",
    "output_len",
)
# Beside those, what decides whether a level may stand for "unloaded" (`reference_of` reads them:
# finite rate, run to the end, nothing failed).
_REFERENCE_FROM = ("complete", "failed")


def load_values(load: LevelLoad) -> tuple[float | None, bool | None, str, str]:
    """A judgement as the values of `LOAD_COLUMNS`, in that order."""
    return (load.sustained_rps, load.stable, str(load.basis), load.reason)


def backfill(con: duckdb.DuckDBPyConnection) -> int:
    """Judge every stored point from its statistics (no request log is stored) and write the
    load columns, in one UPDATE; returns how many rows were judged."""
    names = ("run_id", "level_index", *JUDGED_FROM)
    rows = con.execute(f"SELECT {', '.join(names)} FROM points").fetchall()  # noqa: S608
    if not rows:
        return 0
    import pyarrow as pa

    judged = [
        (row[0], row[1], *load_values(judge_row(dict(zip(names, row, strict=True)))))
        for row in rows
    ]
    columns = ("run_id", "level_index", *LOAD_COLUMNS)
    table = pa.table(
        [pa.array(list(values)) for values in zip(*judged, strict=True)], names=list(columns)
    )
    con.register("_fleetplan_judged", table)
    try:
        assignments = ", ".join(f"{name} = j.{name}" for name in LOAD_COLUMNS)
        con.execute(
            f"UPDATE points SET {assignments} FROM _fleetplan_judged j "  # noqa: S608
            "WHERE points.run_id = j.run_id AND points.level_index = j.level_index"
        )
    finally:
        con.unregister("_fleetplan_judged")
    return len(judged)


def _number(value: Any) -> float | None:
    """A cell as a float; None for NULL, NaN, pandas' NA or anything not a number."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) else number


def _present(value: Any) -> Any:
    """A grouping key's part, every kind of missing (NaN, pandas' NA) as None: they group."""
    if value is None or isinstance(value, str):
        return value
    try:
        return None if value != value else value  # NaN is the one value unequal to itself
    except TypeError:  # pandas' NA: its comparisons are themselves unknown
        return None


def in_context(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` (rows of the canonical table) with its 'estimated' rows judged again against their
    configuration's and traffic shape's quickest level; 'send times' rows keep their values."""
    if frame.empty:
        return frame
    import pandas as pd

    # Plain lists and one dict of groups: at the table's usual size (a few hundred rows) pandas'
    # groupby and to_dict cost more than the judging itself.
    again = frame["load_basis"].ne(str(LoadBasis.SEND_TIMES)).tolist()
    names = (*JUDGED_FROM, *_REFERENCE_FROM)
    records = [
        dict(zip(names, row, strict=True))
        for row in zip(*(frame[name].tolist() for name in names), strict=True)
    ]
    keys = ([_present(v) for v in frame[name].tolist()] for name in GROUP_COLUMNS)
    members: dict[tuple, list[int]] = {}
    for position, key in enumerate(zip(*keys, strict=True)):
        members.setdefault(key, []).append(position)
    values = {name: frame[name].tolist() for name in LOAD_COLUMNS}
    for positions in members.values():
        mine = [p for p in positions if again[p]]
        if not mine:
            continue
        reference = reference_of(records[p] for p in positions)
        for position in mine:
            judged = load_values(judge_row(records[position], reference=reference))
            for name, value in zip(LOAD_COLUMNS, judged, strict=True):
                values[name][position] = value
    frame = frame.copy(deep=False)  # the caller's frame stays as it was; no data is copied
    frame["sustained_rps"] = pd.array(
        [math.nan if (n := _number(v)) is None else n for v in values["sustained_rps"]], "float64"
    )
    frame["stable"] = pd.array(
        [None if pd.isna(v) else bool(v) for v in values["stable"]], "boolean"
    )
    frame["load_basis"] = values["load_basis"]
    frame["load_reason"] = values["load_reason"]
    return frame
