"""Every format fleetplan reads, in the order each file's content is tried, and the one way in:
`parse` (bytes -> runs, by detection) and `read_file` (a path, refused before reading when it is
over the size limit).

A new format is added to `FORMATS` here; where it goes in the order matters only when its
`detect` could also accept another format's files (the more specific format goes first).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from fleetplan.core.contract import Run
from fleetplan.core.errors import FileTooLargeError, InputError, NotResultsError, UnknownFormatError
from fleetplan.core.files import megabytes, read_at_most
from fleetplan.core.gpus import canonical_gpu
from fleetplan.warehouse.consistency import check_runs
from fleetplan.warehouse.importers import (
    csv_table,
    fleetplan_json,
    genai_bench,
    guidellm,
    inference_perf,
    inferencex,
    llm_load_test,
    llmd_report,
    llmperf,
    ml_energy,
    mlperf,
    sglang_bench,
    trtllm_bench,
    vllm_json,
)
from fleetplan.warehouse.importers.base import (
    MAX_FILE_ENV,
    FileInput,
    Format,
    ImportOptions,
    ParsedFile,
)
from fleetplan.warehouse.importers.capped import cap_readings
from fleetplan.warehouse.importers.document import (
    TRACE_NOTE,
    Document,
    read_document,
    trace_line,
    unpack,
)
from fleetplan.warehouse.importers.genai_perf import export as genai_perf
from fleetplan.warehouse.importers.offered import rate_notes
from fleetplan.warehouse.importers.streamed import stream_readings

# Tried in this order on the file's content; the first whose `detect` says yes reads it.
FORMATS: tuple[Format, ...] = (
    fleetplan_json,
    inference_perf,
    inferencex,  # before vllm_json: its trimmed layout has vLLM's keys, in seconds
    sglang_bench,  # before vllm_json: SGLang's benchmark is a fork of vLLM's, keys renamed
    vllm_json,
    guidellm,
    genai_bench,
    llm_load_test,
    mlperf,
    llmperf,
    genai_perf,
    ml_energy,
    trtllm_bench,
    llmd_report,
    csv_table,
)


def refuse_large(name: str, size: int, options: ImportOptions, *, advice: str = "") -> None:
    """A FileTooLargeError when `size` is over the limit, before the bytes are read or parsed."""
    limit = options.size_limit()
    if size > limit:
        raise FileTooLargeError(
            f"the file is {megabytes(size)}, over the {megabytes(limit)} limit{advice}", file=name
        )


def read_file(path: Path, options: ImportOptions) -> FileInput:
    """Read a regular file whole, never past the size limit (fleetplan.core.files)."""
    advice = f" (raise it with --max-file-mb or ${MAX_FILE_ENV})"
    data = read_at_most(path, limit=options.size_limit(), advice=advice)
    return FileInput.from_bytes(str(path), data)


def detect(document: Document) -> Format | None:
    """The format that reads this document, or None."""
    return next((format_ for format_ in FORMATS if format_.detect(document)), None)


def parse(file: FileInput, options: ImportOptions | None = None) -> ParsedFile:
    """Detect the file's format from its content and read its runs; raises InputError."""
    options = options or ImportOptions()
    refuse_large(file.name, len(file.data), options)
    data = unpack(file.data, name=file.name, limit=options.size_limit())
    document = read_document(data, name=file.name, max_values=options.value_limit())
    first = document.values[0] if document.values else None
    if (what := _tool_aggregate(first)) is not None:  # before detection: they look like results
        raise NotResultsError(what, file=file.name)
    format_ = detect(document)
    if format_ is None:
        raise _not_importable(document, file.name)
    parsed = format_.parse(document, file, options)
    # once, for every format: a file that contradicts itself, rate levels whose concurrency
    # cap bound (closed loops), levels sent at another rate, and token timings that are not
    runs, disagreeing = check_runs(parsed.runs, file=file.name, derived=parsed.derived)
    runs, capped = cap_readings(runs)
    runs, rates = rate_notes(runs)
    runs, streams = stream_readings(runs)
    warnings = (*capped, *rates, *streams, *disagreeing, *parsed.warnings)
    warnings += tuple(_unknown_gpus(runs, warnings))
    return ParsedFile(file, format_.IMPORTER, format_.VERSION, tuple(runs), warnings)


def _unknown_gpus(runs: Sequence[Run], said: Sequence[str]) -> list[str]:
    """A warning for each GPU the runs name that is not one fleetplan knows: stored as written
    (never guessed), it is shown and kept, but no plan uses it (a scenario offers catalog GPUs
    only, `planner.scenario.parts.GpuOffer`)."""
    out = []
    for label in dict.fromkeys(run.gpu_model for run in runs if not run.gpu_known):
        if any(repr(label) in warning for warning in said):  # the format said it already
            continue
        why = canonical_gpu(label).reason or "not a GPU model fleetplan knows"
        out.append(
            f"GPU {label!r}: {why}; stored as written, but no plan can use it (scenarios offer "
            "the catalog's GPUs): to plan with these runs, import them with --gpu naming the GPU "
            "they ran on (e.g. h100-sxm, rtx-4090)"
        )
    return out


READS = (
    "vLLM `bench serve` results, SGLang `bench_serving` JSONL, GuideLLM reports, LLMPerf "
    "results, GenAI-Perf/AIPerf exports, inference-perf stage reports, InferenceX results, "
    "trtllm-bench reports, llm-d benchmark reports, genai-bench levels, llm-load-test output, "
    "MLPerf LoadGen summaries, "
    "ML.ENERGY leaderboard model files, fleetplan run files and the CSV table of "
    "`fleetplan benchmarks`"
)


# A vLLM serving result's latency keys; the counts and throughputs it must have beside them.
_VLLM_LATENCIES = {"mean_ttft_ms", "mean_tpot_ms", "mean_itl_ms"}
_VLLM_COUNTS = ("duration", "completed", "request_throughput", "output_throughput")


def _not_importable(document: Document, name: str) -> InputError:
    first = document.values[0] if document.values else None
    if (companion := _summary_table(first) or _not_results(first)) is not None:
        return NotResultsError(companion, file=name)
    if isinstance(first, dict) and first.keys() >= _VLLM_LATENCIES:
        missing = [key for key in _VLLM_COUNTS if key not in first]
        return InputError(
            f"a vLLM serving result without {', '.join(missing)}: its latencies alone say "
            "neither the load nor how many requests completed, so there is no level to store "
            "(a trimmed copy? import the file `vllm bench serve --save-result` wrote)",
            file=name,
            field=missing[0] if missing else None,
        )
    if document.kind == "yaml":
        return NotResultsError(_yaml_is(first), file=name)
    return UnknownFormatError(
        f"not a format fleetplan can import ({_describe(first)}); it reads {READS}: if this is "
        "a results file of another tool, convert it to the CSV table (`fleetplan template`)",
        file=name,
    )


def _yaml_is(value: object) -> str:
    """What a YAML file that is not a results file is: a tool's or a server's configuration,
    said as such."""
    keys = set(value) if isinstance(value, dict) else set()
    if {"load", "server"} <= keys or {"load", "api"} <= keys:
        what = "inference-perf's configuration (config.yaml), read with the stage reports beside it"
    elif "tensor_parallelism" in keys or {"model", "max_num_seqs"} <= keys:
        what = (
            "an experiment's server settings (exp-config.yaml), read with the inference-perf "
            "stage reports beside it"
        )
    elif {"version", "run", "results"} <= keys:
        what = (
            "inference-perf's benchmark report of one stage in llm-d's report layout "
            "(inference-perf.partial.stage_N.yaml), the same stage as its "
            "stage_N_lifecycle_metrics.json, which is what is imported"
        )
    elif {"apiVersion", "kind"} <= keys:
        what = "Kubernetes manifests, read with the inference-perf stage reports beside them"
    else:
        shown = ", ".join(sorted(map(str, keys))[:8])
        what = (
            f"a YAML document{f' with keys {shown}' if shown else ''}, not one of the results "
            "fleetplan reads in YAML (GuideLLM reports, llm-d benchmark reports, inference-perf "
            "stage reports)"
        )
    return f"{what}: not results, nothing to import from it"


def _tool_aggregate(value: object) -> str | None:
    """A tool's own aggregate of levels it also wrote one by one (AIPerf 0.13's aggregate/ and
    sweep_aggregate/), or its run configuration: not results of their own."""
    if not isinstance(value, dict):
        return None
    keys = value.keys()
    metadata = value.get("metadata")
    aggregate = isinstance(metadata, dict) and "aggregation_type" in metadata
    if {"aiperf_version", "metrics"} <= keys and aggregate:
        return (
            "AIPerf's aggregate over a level's runs (profile_export_aiperf_aggregate.json), "
            "statistics of statistics: each run is imported from its own "
            "profile_export_aiperf.json"
        )
    if {"aggregation_type", "per_combination_metrics"} <= keys:
        return (
            "AIPerf's sweep summary (profile_export_aiperf_sweep.json) of levels imported from "
            "each level's profile_export_aiperf.json: nothing more to import"
        )
    if {"benchmark_id", "cli_command", "artifact_dir"} <= keys:
        return (
            "AIPerf's run configuration (run_config.json), not results: the run is imported "
            "from profile_export_aiperf.json beside it"
        )
    return None


# vLLM's results-to-markdown summary (its perf suites' convert-results-json-to-markdown.py): the
# table's rows, "Test name" (the result file's stem) and its columns in words
_SUMMARY_COLUMNS = {"Tput (req/s)", "Mean TTFT (ms)", "TTFT (ms)", "Mean latency (ms)"}
_SUMMARY_COLUMNS |= {"Average latency (s)", "Output Tput (tok/s)"}


def _summary_table(value: object) -> str | None:
    """vLLM's summary table in JSON, as rows (a list) or columns (pandas' default), in words
    with the result files it names; None for anything else."""
    first = value[0] if isinstance(value, list) and value else value
    if not isinstance(first, dict) or "Test name" not in first:
        return None
    if not _SUMMARY_COLUMNS & first.keys():
        return None
    names = first["Test name"]
    if isinstance(value, list):
        names = [row.get("Test name") for row in value if isinstance(row, dict)]
    elif isinstance(names, dict):
        names = list(names.values())
    shown = [str(n) for n in (names if isinstance(names, list) else [names]) if n]
    more = f" and {len(shown) - 1} more" if len(shown) > 1 else ""
    named = f" ({shown[0]}.json{more})" if shown else ""
    return (
        "vLLM's benchmark summary table (its results-to-markdown script's JSON: a row per test, "
        "a few of its figures as columns), not results: import the result files it summarises"
        f"{named}"
    )


def _not_results(value: object) -> str | None:
    """What a file that tools write beside their results is, and which file to import instead."""
    first = value[0] if isinstance(value, list) and value else None
    if isinstance(first, dict) and {"start_time", "end_time", "info"} <= first.keys():
        return (
            "inference-perf's per-request log of every stage "
            "(per_request_lifecycle_metrics.json): the stages are imported from the "
            "stage_N_lifecycle_metrics.json beside it"
        )
    if trace_line(value):
        return (
            "a request trace (one request a line: its arrival time and token lengths, as "
            f"Mooncake's and GuideLLM's replay traces are), {TRACE_NOTE}"
        )
    if not isinstance(value, dict):
        return None
    keys = value.keys()
    views = list(value.values())
    if views and all(
        str(k).isdigit() and isinstance(v, dict) and "first-time-to-token_mean_in_ms" in v
        for k, v in value.items()
    ):
        return (
            "a condensed view of LLMPerf summaries by concurrency (llmperf-bench's "
            "..._summary.json): import the ..._results.json beside it, which holds them whole"
        )
    if {"elapsed_time", "num_requests", "requests_per_second"} <= keys:
        return (
            "vLLM's offline throughput benchmark (benchmark_throughput.py / vllm bench "
            "throughput): every request given to the engine at once, no serving and no "
            "latencies, so no load level to plan on; its serving results (benchmark_serving.py "
            "/ vllm bench serve) are what fleetplan reads"
        )
    if {"avg_latency", "latencies", "percentiles"} <= keys:
        return (
            "vLLM's offline latency benchmark (benchmark_latency.py / vllm bench latency): one "
            "batch's end-to-end time, not a serving load level; its serving results "
            "(benchmark_serving.py / vllm bench serve) are what fleetplan reads"
        )
    if {"batch_size", "input_len", "output_len", "run_name"} <= keys and (
        "prefill_latency" in keys or "last_ttft" in keys
    ):
        return (
            "SGLang's bench_one_batch: one static batch (its prefill and decode times), not a "
            "serving load level; SGLang's bench_serving output is what fleetplan reads"
        )
    if {"benchmark_version", "api_backend", "iteration_type", "traffic_scenario"} <= keys:
        return (
            "genai-bench's experiment metadata (experiment_metadata.json): read with the level "
            "files beside it (..._num_concurrency_N_time_Ts.json), not results itself"
        )
    if {"global", "reports"} <= keys:
        return (
            "inference-perf's checks of its own reports (validation.json), not results: the "
            "stages are imported from the stage_N_lifecycle_metrics.json beside it"
        )
    data = value.get("data")
    if (
        keys == {"data"}
        and isinstance(data, list)
        and data
        and isinstance(data[0], dict)
        and {"payload", "payloads", "session_id"} & data[0].keys()
    ):
        return (
            "the prompts a GenAI-Perf/AIPerf run sent (inputs.json), not results: import "
            "profile_export_aiperf.json or profile_export_genai_perf.json from the same run"
        )
    if {"api", "data", "load", "server"} <= keys and "successes" not in keys:
        return (
            "inference-perf's configuration (its config.yaml, or the profile it was given), not "
            "results: read with the stage_N_lifecycle_metrics.json reports beside it"
        )
    if {"experiments", "service_kind"} <= keys:
        return (
            "perf_analyzer's raw profile export (GenAI-Perf's profile_export.json, or the name "
            "its --profile-export-file gave): per-request times without token counts or the "
            "GPU, so not imported alone; it is read with the profile_export_genai_perf.json of "
            "the same run (same folder or upload), which is what is imported"
        )
    if (
        keys
        and all(re.fullmatch(r"Report \d+", str(k)) for k in keys)
        and all(isinstance(v, str) for v in value.values())
    ):
        return (
            "inference-perf's analysis legend (analyzed_reports_legend.json): which report is "
            "which results folder, not results"
        )
    if {"metrics_phase", "aiperf_version"} <= keys or (
        "aiperf_version" in keys and "request_throughput" not in keys and "metrics" in keys
    ):
        return (
            "AIPerf's server metrics (server_metrics_export.json), not client results: "
            "import profile_export_aiperf.json from the same run"
        )
    return None


def _describe(value: object) -> str:
    if isinstance(value, dict):
        keys = ", ".join(sorted(map(str, value))[:8])
        return f"a JSON object with keys {keys}" if keys else "an empty JSON object"
    return f"a JSON {type(value).__name__}"
