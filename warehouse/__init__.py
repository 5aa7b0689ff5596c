"""The DuckDB warehouse: schema and migrations, importers, queries.

Collectors never open it: they write run files that `fleetplan ingest` (or the app's upload)
loads, one file per transaction.
"""
