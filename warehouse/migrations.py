"""Named schema migrations. Each is applied once, with its bookkeeping row, in one transaction.

A migration is its SQL, or a function of the open transaction's connection where existing rows
must be computed in Python (a backfill). Never edit a migration that has shipped: add a new one,
with the next number.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

from fleetplan.warehouse.identity import stored_keys
from fleetplan.warehouse.load import backfill

Step = str | Callable[[duckdb.DuckDBPyConnection], None]

_LATENCY_COLUMNS = ",\n".join(
    f"    {metric}_{stat}_ms DOUBLE"
    for metric in ("ttft", "tpot", "itl", "e2el")
    for stat in ("mean", "p50", "p90", "p95", "p99")
)


def _judge_points(con: duckdb.DuckDBPyConnection) -> None:
    """The rate each level sustained and whether it kept up (`fleetplan.warehouse.load`); rows
    already there are judged from their statistics."""
    con.execute(
        """
ALTER TABLE points ADD COLUMN sustained_rps DOUBLE;
ALTER TABLE points ADD COLUMN stable BOOLEAN;
ALTER TABLE points ADD COLUMN load_basis VARCHAR;
ALTER TABLE points ADD COLUMN load_reason VARCHAR;
"""
    )
    backfill(con)


# `runs` as 001 made it, less UNIQUE (origin_sha256, origin_index), plus the content key.
_RUNS_005 = """
CREATE TABLE runs_005 (
    run_id VARCHAR PRIMARY KEY,
    source_id VARCHAR NOT NULL,
    origin_sha256 VARCHAR NOT NULL,         -- the file the numbers were first read from, as said
    origin_index INTEGER NOT NULL,          -- the run's position in that file
    tool VARCHAR NOT NULL,
    tool_version VARCHAR,
    engine VARCHAR,
    engine_version VARCHAR,
    model VARCHAR NOT NULL,
    dtype VARCHAR,
    gpu_model VARCHAR NOT NULL,
    gpu_label VARCHAR,
    gpu_known BOOLEAN NOT NULL,
    gpu_count INTEGER NOT NULL,
    tensor_parallel_size INTEGER,
    host VARCHAR,
    dataset VARCHAR,
    input_len INTEGER,
    output_len INTEGER,
    created_at TIMESTAMP,
    source_file VARCHAR NOT NULL,
    provenance_repository VARCHAR,
    provenance_commit VARCHAR,
    provenance_path VARCHAR,
    provenance_licence VARCHAR,
    provenance_notes VARCHAR,
    metadata VARCHAR NOT NULL DEFAULT '{}',
    run_key VARCHAR NOT NULL UNIQUE         -- the run's identity: its content (warehouse.identity)
);
"""


def _identify_runs(con: duckdb.DuckDBPyConnection) -> None:
    """A run's identity becomes its content (`fleetplan.warehouse.identity`): `run_key`, unique,
    computed for the rows already there. The origin a file claims stays, as provenance, without
    its UNIQUE constraint (a file could claim another file's origin and block it). DuckDB cannot
    drop a constraint: the table is rebuilt, in this migration's transaction."""
    import pandas as pd

    keys = stored_keys(con)
    frame = pd.DataFrame({"run_id": list(keys), "run_key": list(keys.values())}, dtype=object)
    con.execute(_RUNS_005)
    con.register("_fleetplan_keys", frame)
    try:
        con.execute(
            "INSERT INTO runs_005 SELECT r.*, k.run_key FROM runs r "
            "JOIN _fleetplan_keys k ON k.run_id = r.run_id"
        )
    finally:
        con.unregister("_fleetplan_keys")
    con.execute("DROP INDEX runs_source")
    con.execute("DROP TABLE runs")
    con.execute("ALTER TABLE runs_005 RENAME TO runs")
    con.execute("CREATE INDEX runs_source ON runs (source_id)")


MIGRATIONS: tuple[tuple[str, Step], ...] = (
    (
        "001_benchmarks",
        f"""
CREATE TABLE sources (
    source_id VARCHAR PRIMARY KEY,          -- sha256 of the imported file
    file_name VARCHAR NOT NULL,
    size_bytes BIGINT NOT NULL,
    importer VARCHAR NOT NULL,
    importer_version VARCHAR NOT NULL,
    origin VARCHAR NOT NULL,                -- cli | upload | sample_data
    imported_at TIMESTAMP NOT NULL,         -- UTC
    warnings VARCHAR NOT NULL DEFAULT '[]'  -- JSON list of what the importer noticed
);
CREATE TABLE runs (
    run_id VARCHAR PRIMARY KEY,
    source_id VARCHAR NOT NULL,
    origin_sha256 VARCHAR NOT NULL,         -- the file the numbers were first read from
    origin_index INTEGER NOT NULL,          -- the run's position in that file
    tool VARCHAR NOT NULL,
    tool_version VARCHAR,
    engine VARCHAR,
    engine_version VARCHAR,
    model VARCHAR NOT NULL,
    dtype VARCHAR,
    gpu_model VARCHAR NOT NULL,
    gpu_label VARCHAR,
    gpu_known BOOLEAN NOT NULL,
    gpu_count INTEGER NOT NULL,
    tensor_parallel_size INTEGER,
    host VARCHAR,
    dataset VARCHAR,
    input_len INTEGER,
    output_len INTEGER,
    created_at TIMESTAMP,
    source_file VARCHAR NOT NULL,
    provenance_repository VARCHAR,
    provenance_commit VARCHAR,
    provenance_path VARCHAR,
    provenance_licence VARCHAR,
    provenance_notes VARCHAR,
    metadata VARCHAR NOT NULL DEFAULT '{{}}',
    UNIQUE (origin_sha256, origin_index)
);
CREATE INDEX runs_source ON runs (source_id);
CREATE TABLE points (
    run_id VARCHAR NOT NULL,
    level_index INTEGER NOT NULL,
    offered_rate_rps DOUBLE,
    max_concurrency INTEGER,
    burstiness DOUBLE,
    requests_sent INTEGER,
    completed INTEGER NOT NULL,
    failed INTEGER,
    complete BOOLEAN NOT NULL,
    duration_s DOUBLE NOT NULL,
    request_throughput_rps DOUBLE,
    output_throughput_tps DOUBLE,
    total_throughput_tps DOUBLE,
{_LATENCY_COLUMNS},
    stats_source VARCHAR NOT NULL,
    input_tokens_mean DOUBLE,
    output_tokens_mean DOUBLE,
    gpu_energy_j DOUBLE,
    avg_power_w DOUBLE,
    energy_method VARCHAR NOT NULL,
    PRIMARY KEY (run_id, level_index)
);
""",
    ),
    (
        "002_reference",
        """
CREATE TABLE reference_files (
    name VARCHAR PRIMARY KEY,
    sha256 VARCHAR NOT NULL,
    loaded_at TIMESTAMP NOT NULL
);
CREATE TABLE gpu_catalog (
    gpu_id VARCHAR PRIMARY KEY,
    name VARCHAR NOT NULL,
    segment VARCHAR,
    form_factor VARCHAR,
    memory_gb DOUBLE,
    memory_type VARCHAR,
    memory_bandwidth_gb_s DOUBLE,
    fp16_tensor_tflops_dense DOUBLE,
    spec_source VARCHAR,
    rated_power_w DOUBLE,
    rated_power_source VARCHAR,
    idle_power_w DOUBLE,
    idle_power_basis VARCHAR,
    idle_power_source VARCHAR,
    embodied_kgco2e DOUBLE,
    embodied_kgco2e_low DOUBLE,
    embodied_kgco2e_high DOUBLE,
    embodied_basis VARCHAR,
    embodied_source VARCHAR,
    purchase_usd DOUBLE,
    purchase_date VARCHAR,
    purchase_source VARCHAR,
    lifetime_years_default DOUBLE,
    lifetime_source VARCHAR,
    notes VARCHAR
);
CREATE TABLE gpu_prices (
    gpu_id VARCHAR NOT NULL,
    usd_per_gpu_hour DOUBLE NOT NULL,
    provider VARCHAR NOT NULL,
    price_date VARCHAR NOT NULL,
    kind VARCHAR,
    electricity_included BOOLEAN,
    source VARCHAR NOT NULL,
    notes VARCHAR
);
CREATE TABLE regions (
    region_id VARCHAR PRIMARY KEY,
    name VARCHAR NOT NULL,
    grid_gco2_per_kwh DOUBLE,
    grid_year INTEGER,
    grid_basis VARCHAR,
    grid_source VARCHAR,
    electricity_usd_per_kwh DOUBLE,
    electricity_year INTEGER,
    electricity_basis VARCHAR,
    electricity_source VARCHAR,
    electricity_original VARCHAR,
    household_electricity_usd_per_kwh DOUBLE,
    household_electricity_source VARCHAR,
    pue_default DOUBLE,
    pue_source VARCHAR,
    notes VARCHAR
);
""",
    ),
    (
        "003_point_telemetry",
        """
ALTER TABLE points ADD COLUMN gpu_memory_used_gb DOUBLE;
ALTER TABLE points ADD COLUMN gpu_utilization_pct DOUBLE;
""",
    ),
    ("004_point_load", _judge_points),
    ("005_run_identity", _identify_runs),
    (
        "006_host_embodied",
        """
ALTER TABLE gpu_catalog ADD COLUMN host_embodied_kgco2e_per_gpu DOUBLE;
ALTER TABLE gpu_catalog ADD COLUMN host_embodied_basis VARCHAR;
ALTER TABLE gpu_catalog ADD COLUMN host_embodied_source VARCHAR;
""",
    ),
    (
        # The rate a level was configured at, beside the rate it was really sent at
        # (offered_rate_rps), and what a person should know about the level's figures.
        "007_configured_rate",
        """
ALTER TABLE points ADD COLUMN configured_rate_rps DOUBLE;
ALTER TABLE points ADD COLUMN notes VARCHAR;
""",
    ),
    # A run's free server label (`Run.variant`): with engine, engine version, dtype and tensor
    # parallelism, part of which server a configuration is. Runs stored before have none (NULL).
    ("008_run_variant", "ALTER TABLE runs ADD COLUMN variant VARCHAR;"),
)
