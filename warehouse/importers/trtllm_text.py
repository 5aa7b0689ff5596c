"""trtllm-bench's text report, as it prints it at the end of a run (the log its users keep, where
`--report_json` was not given), read into the JSON report's shape (`trtllm_bench`), so one parse
reads both.

Two layouts (NVIDIA/TensorRT-LLM, `tensorrt_llm/bench/dataclasses/reporting.py`):
- 0.16 and before: `ENGINE DETAILS`, `WORLD + RUNTIME INFORMATION`, and `PERFORMANCE OVERVIEW`
  holding the requests (`Number of requests`, the mean lengths) and `Token Throughput
  (tokens/sec)`, the output tokens over the run's total latency;
- later: `ENGINE DETAILS` or `PYTORCH BACKEND`, `MACHINE DETAILS` (the GPU's name), `WORLD +
  RUNTIME INFORMATION`, `REQUEST DETAILS`, and `PERFORMANCE OVERVIEW` with `Total Output
  Throughput`, `Total Token Throughput` and, per request, `[Latency]`, `[TTFT]` and `[TPOT]`
  lines (MINIMUM, MAXIMUM, AVERAGE, P50, P90, P95, P99, in ms).
A value the report prints as "None" or "N/A" is absent.
"""

from __future__ import annotations

import math
import re
from typing import Any

from fleetplan.warehouse.importers.document import key_value

_TITLE = re.compile(r"^= ?(?P<title>[A-Z][A-Z +/()-]*?)\s*$")
_PERCENTILE = re.compile(
    r"^\[(?P<metric>Latency|TTFT|TPOT)\]\s+(?P<stat>[A-Z0-9]+)\s*:\s*(?P<value>\S+)"
)

_ENGINE = {
    "Model": "model",
    "TensorRT LLM Version": "version",
    "TensorRT-LLM Version": "version",
    "Dtype": "dtype",
    "KV Cache Dtype": "kv_cache_dtype",
    "Quantization": "quantization",
}
_WORLD = {
    "TP Size": "tp_size",
    "PP Size": "pp_size",
    "EP Size": "ep_size",
    "Max Runtime Batch Size": "max_batch_size",
    "Max Runtime Tokens": "max_num_tokens",
    "Scheduling Policy": "scheduling_policy",
    "KV Memory Percentage": "kv_cache_percentage",
    "Issue Rate (req/sec)": "issue_rate",
}
_REQUESTS = {
    "Number of requests": "num_requests",
    "Number of concurrent requests": "avg_num_concurrent_requests",
    "Average Input Length (tokens)": "avg_input_length",
    "Average Output Length (tokens)": "avg_output_length",
}
_PERFORMANCE = {
    "Request Throughput (req/sec)": "request_throughput_req_s",
    "Total Output Throughput (tokens/sec)": "system_output_throughput_tok_s",
    "Token Throughput (tokens/sec)": "system_output_throughput_tok_s",  # 0.16: output tokens
    "Total Token Throughput (tokens/sec)": "system_total_throughput_tok_s",
    "Total Latency (ms)": "total_latency_ms",
}
_PERCENTILE_KEYS = {"Latency": "request_latency_percentiles_ms", "TTFT": "ttft_percentiles"}
_PERCENTILE_KEYS |= {"TPOT": "tpot_percentiles"}
_ABSENT = {"none", "n/a", "unknown", ""}


def _value(text: str) -> Any:
    text = text.strip()
    if text.lower() in _ABSENT:
        return None
    if text.endswith("%"):
        try:
            return float(text[:-1]) / 100
        except ValueError:
            return text
    try:
        number = float(text)
    except ValueError:
        return text
    if not math.isfinite(number):
        return text  # read as text: the reader then refuses it where a number is needed
    return int(text) if re.fullmatch(r"[-+]?\d+", text) else number


def sections(text: str) -> dict[str, list[str]]:
    """The report's lines by section title (the last report in the text where a log holds
    several)."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if set(stripped) == {"="}:
            continue
        title = _TITLE.match(stripped)
        if title:
            name = title["title"].strip()
            if name == "ENGINE DETAILS" or name == "PYTORCH BACKEND":
                found = {}  # a new report starts: keep the last
            current = found.setdefault(name, [])
            continue
        if current is not None and stripped:
            current.append(stripped)
    return found


def report(text: str) -> dict[str, Any]:
    """The text report as `trtllm-bench --report_json` would have written it (what it prints)."""
    parts = sections(text)
    engine_lines = parts.get("ENGINE DETAILS") or parts.get("PYTORCH BACKEND") or []
    engine = _pairs(engine_lines, _ENGINE)
    if "PYTORCH BACKEND" in parts:
        engine["backend"] = "pytorch"
    world = _pairs(parts.get("WORLD + RUNTIME INFORMATION", []), _WORLD)
    tp, pp = world.get("tp_size"), world.get("pp_size") or 1
    if isinstance(tp, int) and isinstance(pp, int):
        world["world_size"] = tp * pp
    overview = parts.get("PERFORMANCE OVERVIEW", [])
    requests = _pairs(parts.get("REQUEST DETAILS", []) + overview, _REQUESTS)
    performance = _pairs(overview, _PERFORMANCE)
    percentiles = _percentiles(overview)
    if "request_latency_percentiles_ms" in percentiles:
        performance["request_latency_percentiles_ms"] = percentiles.pop(
            "request_latency_percentiles_ms"
        )
    out: dict[str, Any] = {
        "engine": engine,
        "world_info": world,
        "request_info": requests,
        "performance": performance,
    }
    if percentiles:
        out["streaming_metrics"] = percentiles
    machine = parts.get("MACHINE DETAILS", [])
    if machine and not machine[0].lower().startswith("no gpu info"):
        out["machine"] = {"name": machine[0].split(", memory")[0].strip()}
    return out


def _pairs(lines: list[str], names: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in filter(None, map(key_value, lines)):
        if key in names:
            out.setdefault(names[key], _value(value))
    return out


def _percentiles(lines: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for line in lines:
        match = _PERCENTILE.match(line)
        if match:
            key = _PERCENTILE_KEYS[match["metric"]]
            out.setdefault(key, {})[match["stat"].lower()] = _value(match["value"])
    return out
