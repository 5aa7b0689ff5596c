"""Benchmark tables in the canonical CSV layout, built from the template's example row."""

from __future__ import annotations

import csv
import io

from fleetplan.warehouse.template import template_text


def typed_in_table(rows: int, levels: int = 8) -> str:
    """`rows` rows of the template's example: `levels` load levels per run, one run per model,
    with no origin file of their own (as if typed in)."""
    lines = template_text().splitlines()
    header = next(line for line in lines if not line.startswith("#")).split(",")
    example = next(next(csv.reader([line[2:]])) for line in lines if line.startswith("# ,"))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for i in range(rows):
        row = dict(zip(header, example, strict=True))
        # rates about the example row's own throughput (200 requests in 19 s), so that no level
        # completes requests faster than they were sent (warehouse.consistency)
        row |= {"model": f"model-{i // levels}", "offered_rate_rps": str(i % levels + 10)}
        row |= {"source_sha256": "", "source_index": "", "source_file": ""}
        writer.writerow([row[column] for column in header])
    return out.getvalue()
