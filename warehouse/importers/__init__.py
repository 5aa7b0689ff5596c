"""Importers: turn a result file into runs of the data contract. The format is detected from the
content, never from the file name.

Where things live:
- `base`: the contract every format follows (`Format`), what it is given and returns
  (`FileInput`, `ImportOptions`, `Parsed`, `ParsedFile`) and the glue formats share (numbers,
  pydantic errors as `InputError`, the model and GPU from the file or the user).
- `document`, `jsonstream`: bytes to a `Document` (gzip, JSON, YAML, CSV) under the size and
  value limits, before any format looks at it.
- one module per format: `fleetplan_json`, `vllm_json` (+ `vllm_requests`), `guidellm`,
  `llmperf`, `genai_perf` (+ `genai_perf_metrics`, `genai_perf_records`, `genai_perf_telemetry`),
  `ml_energy`, `csv_table`.
- `registry`: the formats in detection order, `parse` and `read_file`.

To add a format: write one module following `base.Format` (IMPORTER, VERSION, `detect`, `parse`;
import only from `base`, `document` and your own helper modules, never from this package), and add
it to `registry.FORMATS`. tests/test_importers.py checks that every registered format follows the
contract. Test it on real files the tool wrote (tests/fixtures/formats, see its README).
"""

from __future__ import annotations

from fleetplan.warehouse.importers.base import FileInput, ImportOptions, ParsedFile
from fleetplan.warehouse.importers.registry import FORMATS, parse, read_file

__all__ = ["FORMATS", "FileInput", "ImportOptions", "ParsedFile", "parse", "read_file"]
