"""GenAI-Perf and AIPerf exports: `export` (the format: `profile_export_genai_perf.json` and
`profile_export_aiperf.json`, with AIPerf's per-request file when given together), `metrics` (how
the tools write a metric, every time in ms), `records` (AIPerf's per-request records, recomputed
by fleetplan's definitions), `raw` (perf_analyzer's raw export, which gives a GenAI-Perf 2024
summary its request count and duration) and `telemetry` (the GPU telemetry, where it was on)."""
