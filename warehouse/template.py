"""`fleetplan template`: an empty benchmark table to fill in a spreadsheet, with an example row
(commented out) taken from the bundled data."""

from __future__ import annotations

import csv
import io

from fleetplan.core.contract import RunFile
from fleetplan.warehouse.columns import CANONICAL_COLUMNS
from fleetplan.warehouse.sample_data import IONET_FILE, sample_dir

HEADER_NOTES = (
    "# fleetplan benchmark table: one row per run and load level; units are in the column names",
    "# (ms, s, rps = requests/s, tps = tokens/s, j = joules, w = watts). Empty = unknown.",
    "# Required: model, gpu_model, gpu_count, completed, duration_s, and offered_rate_rps (a",
    "# number or inf) or max_concurrency. Rows with the same run_id (or, without one, the same",
    "# setup columns) form one run. run_id, level_index, gpu_known, imported_from and",
    "# imported_at are filled by the warehouse, and it judges sustained_rps, stable, load_basis",
    "# and load_reason from the other columns (leave them empty). Lines starting with # are",
    "# ignored; the next one is an example from the bundled io.net data.",
)


def example_row() -> dict[str, str]:
    run_file = RunFile.model_validate_json((sample_dir() / "benchmarks" / IONET_FILE).read_bytes())
    run = run_file.runs[0]
    point = run.points[0]
    values = {
        **point.model_dump(mode="json", exclude={"requests"}),
        **run.model_dump(mode="json", exclude={"points", "metadata", "provenance"}),
    }
    values |= {"source_tool": run.tool, "source_tool_version": run.tool_version}
    if run.provenance:
        values |= {
            "source_repository": run.provenance.repository,
            "source_commit": run.provenance.commit,
            "source_path": run.provenance.path,
            "source_licence": run.provenance.licence,
        }
    return {c: "" if values.get(c) is None else str(values[c]) for c in CANONICAL_COLUMNS}


def template_text() -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    example = io.StringIO()
    csv.writer(example, lineterminator="").writerow(example_row().values())
    out.write("\n".join(HEADER_NOTES) + "\n")
    out.write("# " + example.getvalue() + "\n")
    writer.writerow(CANONICAL_COLUMNS)
    return out.getvalue()
