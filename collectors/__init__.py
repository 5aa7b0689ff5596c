"""Collectors: the standard probe suite run on GPU hosts (one host, or every host of a Ray
cluster), writing fleetplan run files. They stand on `fleetplan.core`, and open the warehouse
only to load what they wrote when asked to (`--ingest`); the command line (fleetplan/cli/
collect.py) builds their options and calls them.

One collection on one host:
- `options`: what a collection is asked to do (`CollectOptions`, `IngestOptions`,
  `CampaignOptions`): frozen models, built from argv or from a campaign's probe.
- `run`: `execute(options, out)`, the one measurement path (alone or on a Ray host), and
  `run_collect`, which prints, ingests and gives the exit code.
- backends: `openai_backend` (a server that runs), `vllm_server` (starts vLLM, then measures it
  as openai), `torch_backend` (transformers, a batch sweep).
- `collect`: the suite over an OpenAI-compatible endpoint, level by level, with progress bars,
  or a capacity search's levels (`--find-capacity`: `search` decides the rates and lengths and
  judges each level; `collect.search_shape` measures them); `loadgen` (arrivals, one level),
  `openai_client` (one streamed request), `prompts` (exact token lengths), `suite` (shapes and
  rates), `requests_log` (a level's requests -> a Point).
- `telemetry` (NVML energy windows), `hardware` (what ran the server), `run_file` (the run file
  every backend writes, and its summary table), `events` (level events a caller can listen to),
  `errors` (CollectError).

A campaign over a Ray cluster: the `ray_campaign` package (its docstring maps it).

A new backend: a module with a function `(options: CollectOptions, out: Path) -> CollectResult`
that measures and writes its run file with `run_file.collector_run` and `write_run_file` (a
`RunSetup` says what ran; `events.level_started` reports each level); list it in
`run.BACKENDS` and its name in `options.BACKEND_NAMES`; options only it needs go in a group of
`options.CollectOptions` and as flags in fleetplan/cli/collect.py.
"""
