"""Read side of the warehouse: the canonical benchmark table and summary figures."""

from __future__ import annotations

import pandas as pd

from fleetplan.core.gpus import canonical_gpu
from fleetplan.warehouse.columns import CANONICAL_COLUMNS
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.load import in_context

_SELECT = """
SELECT
    r.run_id, p.level_index, r.model, r.gpu_model, r.gpu_count, r.tensor_parallel_size,
    r.gpu_known, r.gpu_label, r.dtype, r.engine, r.engine_version, r.variant, r.dataset,
    r.input_len, r.output_len, p.* EXCLUDE (run_id, level_index),
    r.host, r.created_at, r.tool AS source_tool, r.tool_version AS source_tool_version,
    r.source_file, r.origin_sha256 AS source_sha256, r.origin_index AS source_index,
    r.provenance_repository AS source_repository, r.provenance_commit AS source_commit,
    r.provenance_path AS source_path, r.provenance_licence AS source_licence,
    nullif(r.metadata, '{}') AS run_metadata,
    s.file_name AS imported_from, s.imported_at
FROM points p
JOIN runs r USING (run_id)
JOIN sources s ON s.source_id = r.source_id
WHERE ($model IS NULL OR lower(r.model) = lower($model)
       OR lower(split_part(r.model, '/', -1)) = lower($model))
  AND ($gpu IS NULL OR r.gpu_model = $gpu)
ORDER BY r.model, r.gpu_model, r.gpu_count,
         coalesce(p.offered_rate_rps, p.max_concurrency), r.run_id, p.level_index
"""


def benchmark_points(
    warehouse: Warehouse, *, model: str | None = None, gpu: str | None = None
) -> pd.DataFrame:
    """The canonical table, filtered by model (full id or the name after '/') and GPU. The load
    columns of estimated levels are judged in their configuration's context (`load.in_context`):
    the filters keep or drop whole configurations, so the context is the same either way."""
    gpu_id = canonical_gpu(gpu).gpu_id if gpu else None
    frame = warehouse.cursor().execute(_SELECT, {"model": model, "gpu": gpu_id}).df()
    return in_context(frame[list(CANONICAL_COLUMNS)])


def counts(warehouse: Warehouse) -> dict[str, int]:
    cur = warehouse.cursor()
    out = {}
    for table in ("sources", "runs", "points", "gpu_catalog", "regions"):
        out[table] = cur.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608
    return out


def models(warehouse: Warehouse) -> list[str]:
    rows = warehouse.cursor().execute("SELECT DISTINCT model FROM runs ORDER BY model").fetchall()
    return [model for (model,) in rows]


def models_by_coverage(points: pd.DataFrame) -> list[str]:
    """Models, those measured on the most GPU configurations first, then by name."""
    coverage = points.groupby("model")[["gpu_model", "gpu_count"]].apply(
        lambda rows: len(rows.drop_duplicates())
    )
    return sorted(coverage.index, key=lambda model: (-coverage[model], model.lower()))


def configuration_label(gpu_model: str, gpu_count: int) -> str:
    return f"{gpu_count}x {gpu_model}"


def configurations(points: pd.DataFrame) -> pd.Series:
    """The configuration label of each point, aligned with `points`."""
    return pd.Series(
        [
            configuration_label(g, c)
            for g, c in zip(points["gpu_model"], points["gpu_count"], strict=True)
        ],
        index=points.index,
        dtype=object,
    )


def load_curve(points: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Achieved `metric` per (configuration, offered rate): mean over repeats, with the count.
    Where the points carry `source_kind` (published or the user's runs), repeats are only those
    of one kind: a user's run is never averaged with published ones.

    Levels at an infinite offered rate (all requests at once) have no place on a rate axis and are
    left out; `saturation_levels` counts them so the caller can say so.
    """
    if metric not in points.columns:
        raise KeyError(metric)
    frame = points[points["offered_rate_rps"].notna()].copy()
    finite = frame["offered_rate_rps"] != float("inf")
    frame["configuration"] = configurations(frame)
    apart = ["source_kind"] if "source_kind" in frame.columns else []
    keys = ["configuration", "gpu_model", "gpu_count", *apart, "offered_rate_rps"]
    curve = (
        frame[finite]
        .groupby(keys, as_index=False)
        .agg(value=(metric, "mean"), repeats=(metric, "size"))
        .sort_values(["gpu_model", "gpu_count", *apart, "offered_rate_rps"], kind="stable")
        .reset_index(drop=True)
    )
    curve.attrs["saturation_levels"] = int((~finite).sum())
    return curve


def run_origins(warehouse: Warehouse) -> dict[str, str]:
    """Each run's source origin (`sample_data`, `upload` or `cli`), by run id: whose points
    they are, so that views keep a user's runs apart from the published ones."""
    rows = (
        warehouse.cursor()
        .execute("SELECT r.run_id, s.origin FROM runs r JOIN sources s USING (source_id)")
        .fetchall()
    )
    return dict(rows)


def gpu_catalog(warehouse: Warehouse) -> pd.DataFrame:
    """The reference GPU catalog, one row per canonical GPU id."""
    return warehouse.cursor().execute("SELECT * FROM gpu_catalog ORDER BY gpu_id").df()


def gpu_prices(warehouse: Warehouse) -> pd.DataFrame:
    return (
        warehouse.cursor()
        .execute("SELECT * FROM gpu_prices ORDER BY gpu_id, price_date DESC, usd_per_gpu_hour")
        .df()
    )


def regions(warehouse: Warehouse) -> pd.DataFrame:
    return warehouse.cursor().execute("SELECT * FROM regions ORDER BY region_id").df()


def sources(warehouse: Warehouse) -> pd.DataFrame:
    """Imported files with what they brought in."""
    return (
        warehouse.cursor()
        .execute(
            "SELECT s.source_id, s.file_name, s.importer, s.origin, s.imported_at, s.size_bytes, "
            "count(DISTINCT r.run_id) AS runs, count(p.run_id) AS points "
            "FROM sources s LEFT JOIN runs r ON r.source_id = s.source_id "
            "LEFT JOIN points p ON p.run_id = r.run_id "
            "GROUP BY ALL ORDER BY s.imported_at DESC, s.file_name"
        )
        .df()
    )
