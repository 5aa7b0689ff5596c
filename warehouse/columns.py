"""The columns of the canonical benchmark table, by name: what `fleetplan benchmarks` prints,
`fleetplan template` writes and the CSV table importer reads. Kept apart from the queries (and
pandas) so that an importer can know them without loading either."""

from __future__ import annotations

from fleetplan.core.contract import LATENCY_FIELDS

# What a level says about the server (`fleetplan.core.load`): the rate it sustained with the drain
# left out, whether it kept up, what that rests on and why, in a sentence. Derived from the other
# columns (and the request log, not stored) by the warehouse: see `fleetplan.warehouse.load`.
LOAD_COLUMNS: tuple[str, ...] = ("sustained_rps", "stable", "load_basis", "load_reason")

# The canonical table: one row per (run, load level). `fleetplan benchmarks` prints these columns
# in this order; the CSV table (`fleetplan template`, the csv-table importer) uses the same names.
CANONICAL_COLUMNS: tuple[str, ...] = (
    "run_id",
    "level_index",
    "model",
    "gpu_model",
    "gpu_count",
    "tensor_parallel_size",
    "gpu_known",
    "gpu_label",
    "dtype",
    "engine",
    "engine_version",
    "variant",
    "dataset",
    "input_len",
    "output_len",
    "offered_rate_rps",
    "configured_rate_rps",
    "max_concurrency",
    "burstiness",
    "requests_sent",
    "completed",
    "failed",
    "complete",
    "duration_s",
    "request_throughput_rps",
    *LOAD_COLUMNS,
    "output_throughput_tps",
    "total_throughput_tps",
    *LATENCY_FIELDS,
    "stats_source",
    "input_tokens_mean",
    "output_tokens_mean",
    "gpu_energy_j",
    "avg_power_w",
    "energy_method",
    "gpu_memory_used_gb",
    "gpu_utilization_pct",
    # what a person should know about the level's figures (joined by " | "), else empty
    "notes",
    "host",
    "created_at",
    "source_tool",
    "source_tool_version",
    "source_file",
    "source_sha256",
    "source_index",
    "source_repository",
    "source_commit",
    "source_path",
    "source_licence",
    # the run's metadata, a JSON object (a campaign's stamp: campaign, probe, Ray node id; the
    # tool's settings): empty where the run has none
    "run_metadata",
    "imported_from",
    "imported_at",
)
