"""SGLang's serving benchmark (`python -m sglang.bench_serving`, `sglang.benchmark.serving`): its
`--output-file` JSONL, one JSON object per line per run, appended (sgl-project/sglang,
`python/sglang/benchmark/serving.py`, the `result` dict written with `json.dumps`).

Every key set seen is read: the 2024 one (18 keys: `mean_e2e_latency_ms`, `median_ttft_ms`,
`median_itl_ms`, `output_throughput`, no request throughput and no p99) and the current one
(sglang 0.5: mean/median/p90/p95/p99 of `e2e_latency`, `ttft`, `tpot`, `itl`, the four
throughputs, `server_info`). By definition (the same code as vLLM's benchmark it forked):
`e2e_latency` is our E2EL, `ttft` our TTFT, `tpot` (latency - TTFT) / (output tokens - 1) per
request our TPOT, `itl` the gaps between streamed chunks pooled over requests our ITL; `std_*`
is not stored. `request_rate` is the configured rate (Python's `inf`, written as the bare token
`Infinity`: every request at once); with `max_concurrency` and an unlimited rate a level is
closed-loop at that concurrency. `concurrency` (summed latencies / duration, the mean in
flight) and `accept_length` (speculative decoding) are not stored. A trace replay
(`request_rate` "trace") has no rate of its own: refused, naming it.

The file names no GPU (`--gpu`, `--gpu-count`). The model, tensor parallelism and engine version
come from `server_info` (the server's `/server_info`, SGLang servers only: `model_path`,
`tp_size`, `dp_size`, `pp_size`, `version`), else `--model`. Random prompts of fixed lengths
(`random_range_ratio` 1) are synthetic traffic with those lengths; other random prompts are
"random", their measured means kept on each level. Read as a vLLM result once renamed
(`vllm_json` groups the lines into runs and levels).
"""

from __future__ import annotations

import math
from typing import Any

from fleetplan.core.contract import Run
from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers import serving_text, vllm_json
from fleetplan.warehouse.importers.base import FileInput, ImportOptions, Parsed, Reader
from fleetplan.warehouse.importers.document import Document

IMPORTER = "sglang-bench-serving"
VERSION = "1"

# Keys only SGLang's benchmark writes (vLLM's says `e2el` and `total_token_throughput`).
_SIGNATURE = frozenset(
    (
        "mean_e2e_latency_ms",
        "median_e2e_latency_ms",
        "total_output_tokens_retokenized",
        "random_range_ratio",
    )
)
_RENAMED = {"total_throughput": "total_token_throughput"}
# SGLang's keys that are not results fleetplan stores, said once.
_NOT_STORED = (
    "concurrency",
    "accept_length",
    "total_output_tokens_retokenized",
    "total_input_text_tokens",
    "total_input_vision_tokens",
    "input_throughput",
    "max_output_tokens_per_s",
    "max_itl_ms",
    "max_concurrent_requests",
    "sharegpt_output_len",
    "random_input_len",
    "random_output_len",
    "random_range_ratio",
    "server_info",
    "tag",
    "cache_report",
    "goodput_slos_ms",
    "request_goodput",
    "slo_attainment",
    "slo_attainment_by_metric",
    "generated_texts",
    "cached_tokens",
    "cached_tokens_details",
)


def _sglang(value: Any) -> bool:
    return isinstance(value, dict) and "backend" in value and bool(_SIGNATURE & value.keys())


def detect(document: Document) -> bool:
    if document.kind == "text":  # the result banner of its console log, opening with `Backend:`
        return serving_text.sglang(document.text)
    return (
        document.kind == "json"
        and bool(document.values)
        and all(_sglang(value) for value in document.values)
    )


# What a file that names no GPU count lacks, in SGLang's terms.
_ADVICE = (
    " (SGLang's bench_serving writes no GPU, and a GPU count only from an SGLang server's "
    "server_info: --backend sglang)"
)


def parse(document: Document, source: FileInput, options: ImportOptions) -> Parsed:
    file = source.name
    log = document.kind == "text"
    if log:
        document = Document("json", serving_text.results(document.text), "", b"")
    renamed, shapes = [], []
    for index, line in enumerate(document.values):
        where = f"run {index + 1} of {len(document.values)}"
        renamed.append(_as_vllm(line, file, where))
        shapes.append(_traffic(line))
    runs, warnings, derived = vllm_json.parse_results(
        Document("json", renamed, "", b""), source, options, _ADVICE
    )
    # vllm_json makes one run of consecutive lines with one setup: their traffic is the first's
    firsts, at = [], 0
    for run in runs:
        firsts.append(shapes[at])
        at += len(run.points)
    shaped = [_shape(run, shape) for run, shape in zip(runs, firsts, strict=True)]
    found = sorted({key for line in document.values for key in line if key in _NOT_STORED})
    notes = [f"not stored (none of fleetplan's figures, or read above): {', '.join(found)}"]
    warnings = [*notes, *warnings] if found else warnings
    return Parsed(shaped, [vllm_json.LOG_NOTE, *warnings] if log else warnings, derived)


def _as_vllm(line: dict, file: str, where: str) -> dict[str, Any]:
    """The line in vLLM's result keys: `e2e_latency` as `e2el`, the rate as vLLM writes it, the
    server's model and parallelism from `server_info`."""
    out: dict[str, Any] = {}
    for key, value in line.items():
        if key in _NOT_STORED:
            continue
        key = _RENAMED.get(key, key).replace("_e2e_latency_ms", "_e2el_ms")
        out[key] = value
    lengths = [line.get(f"random_{k}") for k in ("input_len", "output_len", "range_ratio")]
    if line.get("dataset_name", "").startswith("random") and any(n is not None for n in lengths):
        # a run is one traffic: lines of other random lengths are other runs (vllm_json groups
        # lines by their setup, text values included)
        out["random_lengths"] = "input {} output {} range ratio {}".format(*lengths)
    rate = line.get("request_rate")
    if rate == "trace":
        raise InputError(
            f"{where}: a trace replay (request_rate 'trace'): its requests were sent at the "
            "trace's times, not at a rate fleetplan can store for the level",
            file=file,
            field="request_rate",
        )
    if isinstance(rate, float) and math.isinf(rate) and rate > 0:
        out["request_rate"] = "inf"
    completed, duration = line.get("completed"), line.get("duration")
    if "request_throughput" not in line and _positive(completed) and _positive(duration):
        # the 2024 key set states none: the counts over the duration, as fleetplan plans with
        out["request_throughput"] = completed / duration
    info = line.get("server_info")
    if isinstance(info, dict) and _disaggregated(info):
        out |= _prefill_decode(info, out)
    elif isinstance(info, dict):
        server = Reader(info, file, f"{where}: server_info")
        model = server.text("model_path") or server.text("served_model_name")
        if model and "model_id" not in out:
            out["model_id"] = model
        tp = server.positive_int_text("tp_size")
        if tp:
            out["tensor_parallel_size"] = tp
            gpus = tp * (server.positive_int_text("pp_size") or 1)
            dp = server.positive_int_text("dp_size") or 1
            out["gpu_count"] = str(gpus if info.get("enable_dp_attention") else gpus * dp)
        if version := server.text("version"):
            out["engine_version"] = version
    return out


def _disaggregated(info: dict) -> bool:
    return isinstance(info.get("prefill"), list) and isinstance(info.get("decode"), list)


def _prefill_decode(info: dict, out: dict[str, Any]) -> dict[str, Any]:
    """A prefill/decode router's `server_info`: each prefill and decode server's own info. The
    model where they agree; the GPUs, all of them (tp x pp x dp each); the version where they
    agree."""
    servers = [s for s in (*info["prefill"], *info["decode"]) if isinstance(s, dict)]
    found: dict[str, Any] = {}
    models = {s.get("model_path") or s.get("served_model_name") for s in servers} - {None, ""}
    if len(models) == 1 and "model_id" not in out:
        found["model_id"] = str(models.pop())
    counts = [_server_gpus(s) for s in servers]
    if servers and all(counts):
        found["gpu_count"] = str(sum(counts))
    versions = {s.get("version") for s in servers} - {None, ""}
    if len(versions) == 1:
        found["engine_version"] = str(versions.pop())
    return found


def _server_gpus(server: dict) -> int | None:
    sizes = [server.get(k, 1) for k in ("tp_size", "pp_size", "dp_size")]
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in sizes):
        return None
    tp, pp, dp = sizes
    return tp * pp * (1 if server.get("enable_dp_attention") else dp)


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < math.inf


def _traffic(line: dict) -> dict[str, Any]:
    """The traffic a line was measured with: synthetic of fixed lengths where the random
    prompts had one length (`random_range_ratio` 1), else the dataset's name."""
    info = line.get("server_info")
    split: dict[str, Any] = {}
    if isinstance(info, dict) and _disaggregated(info):  # another server than one serving both
        counts = f"{len(info['prefill'])} prefill and {len(info['decode'])} decode server(s)"
        split = {"variant": f"prefill/decode disaggregated: {counts}"}
    name = line.get("dataset_name")
    if not isinstance(name, str) or not name:
        return split
    lengths = [line.get("random_input_len"), line.get("random_output_len")]
    fixed = line.get("random_range_ratio") == 1 and all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in lengths
    )
    if name.startswith("random") and fixed:
        return {"dataset": "synthetic", "input_len": lengths[0], "output_len": lengths[1]} | split
    return {"dataset": name} | split


def _shape(run: Run, traffic: dict[str, Any]) -> Run:
    backend = run.metadata.get("backend", "")
    engine = "sglang" if backend.startswith("sglang") else backend or None
    update: dict[str, Any] = {"tool": "sglang bench_serving", "engine": engine, **traffic}
    return run.model_copy(update=update)
