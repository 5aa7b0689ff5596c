"""Importers: turn a result file into runs of the data contract. The format is detected from the
content, never from the file name.

Where things live:
- `base`: the contract every format follows (`Format`), what it is given and returns
  (`FileInput`, `ImportOptions`, `Parsed`, `ParsedFile`) and the glue formats share (numbers,
  pydantic errors as `InputError`, the model and GPU from the file or the user).
- `document`, `jsonstream`: bytes to a `Document` (gzip, JSON, YAML, CSV) under the size and
  value limits, before any format looks at it.
- one module per format: `fleetplan_json`, `vllm_json` (+ `vllm_requests`; `serving_text`, the
  result banner of vLLM's and SGLang's console logs, read by `vllm_json` and `sglang_bench`),
  `guidellm`,
  `llmperf`, `inference_perf`, `inferencex`, `ml_energy`, `csv_table`, and GenAI-Perf's and
  AIPerf's `genai_perf.export` (+ `genai_perf/`'s `metrics`, `records`, `telemetry`); `offered`:
  the rate a level was sent at, for the formats that say it their own way; `capped`: a rate
  level with a concurrency cap that bound, read as the closed loop it was.
- `registry`: the formats in detection order, `parse` and `read_file`.

To add a format: write one module following `base.Format` (IMPORTER, VERSION, `detect`, `parse`;
import only from `base`, `document` and your own helper modules, never from this package), and add
it to `registry.FORMATS`. Callers import what they use from `base` and `registry` (this package
re-exports nothing). tests/test_importers.py checks that every registered format follows the
contract. Test it on real files the tool wrote (tests/fixtures/formats, see its README).
"""
