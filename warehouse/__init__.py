"""The DuckDB warehouse: what fleetplan has measured or imported, and the reference tables.

Where things live:
- `db`: opening one warehouse file per process (waiting while another holds it), migrations
  applied on open (`migrations`: add one, SQL or a backfill function, never edit a shipped one),
  transactions.
- `importers/`: result files of benchmark tools to runs of the data contract (a new format is one
  module there: see its `__init__`).
- `preview`: what files would bring, before anything is stored (the upload page and `fleetplan
  ingest` share it); `ingest`: files and folders into the warehouse, one file per transaction;
  `store`: writing and deleting a file's runs.
- `queries` and `columns`: the read side, the canonical benchmark table and its columns;
  `template`: that table as an empty CSV to fill in.
- `load`: each level's sustained rate and whether it kept up (`fleetplan.core.load` judges),
  stored at ingest, backfilled by migration 004, judged again in context when read.
- `reference` and `sample_data`: the GPU catalog, regions and the bundled runs of sample_data/.

Collectors write run files; `fleetplan ingest`, the app's upload and `fleetplan collect --ingest`
load them here. Nothing in the warehouse imports the planner, the collectors or the app.
"""
