"""The ground floor: what every other part of fleetplan stands on, and which imports none of them.

- `contract`: the data contract (runs, load levels, provenance), pydantic models that validate once
  at the edge; `validation_message` turns a ValidationError into a message naming the field.
- `errors`: the project's exception types, each with a message a user can act on.
- `gpus`: canonical GPU ids (`rtx-4090`, `h100-pcie`, ...). To add a GPU, add its id and labels
  there, and its specifications to sample_data/gpu_catalog.toml.
- `stats`: latency statistics from per-request timings (TTFT, TPOT, ITL, E2EL by definition).
- `tabular`: CSV/JSON output with spreadsheet formulas neutralised.
- `paths`: where the sample data and the default warehouse are, in a checkout or an install.
- `exits`: the exit codes every command shares.
"""
