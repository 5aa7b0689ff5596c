"""fleetplan: plan LLM inference fleets of consumer and datacenter GPUs from measured benchmarks.

One package, built in floors; each imports only from the floors below it (tests/test_layout.py
walks every import to keep it so):

- `fleetplan.core`: the ground floor: data contract, errors, GPU ids, statistics, paths, exit codes.
- `fleetplan.planner` (capacity, cost, carbon, MILP; pure) and `fleetplan.warehouse` (DuckDB:
  schema, importers, queries, sample data): on core, and not on each other.
- `fleetplan.collectors` (probes on GPU hosts, Ray campaigns; on warehouse for `--ingest`) and
  `fleetplan.services` (use cases joining warehouse data and planner logic).
- `fleetplan.app`: the Streamlit dashboard, thin pages over services, planner and warehouse.
- `fleetplan.cli`: the `fleetplan` command line, on top; nothing imports it.

The folders app/, collectors/, warehouse/ and planner/ sit at the project root and are installed
as these subpackages (pyproject.toml's package-dir).
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("fleetplan")
except PackageNotFoundError:  # running from a checkout without an install
    __version__ = "0.0.0+unknown"
