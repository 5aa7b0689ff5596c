"""The result banner that vLLM's serving benchmark (`vllm bench serve`, the older
`benchmarks/benchmark_serving.py`) and SGLang's `bench_serving` print at the end of a run, in
the console log a user kept (`... | tee run.log`), read into the keys of the JSON result the same
run writes (`vllm_json`, `sglang_bench` read them), so one parse reads both.

The banner (vllm-project/vllm `vllm/benchmarks/serve.py`, `benchmarks/benchmark_serving.py`;
sgl-project/sglang `python/sglang/bench_serving.py`) is `{:<40} {:<10}` lines between
`============ Serving Benchmark Result ============` and a line of `=`:
- vLLM: `Successful requests`, `Failed requests`, `Maximum request concurrency` (where set),
  `Request rate configured (RPS)` (where finite), `Benchmark duration (s)`, the token totals and
  throughputs, then per metric `Mean`/`Median`/`P<p>` `TTFT`, `TPOT`, `ITL`, `E2EL` `(ms)`;
  before the banner it prints `Traffic request rate:`, `Burstiness factor:` and `Maximum request
  concurrency:` (`None` where unset), and its arguments (`Namespace(... model=...)`);
- SGLang: `Backend`, `Traffic request rate` (`inf`, a rate, or `trace`), `Max request
  concurrency` (`not set`), `Successful requests`, the totals and throughputs (`Total throughput`
  before `Total token throughput`), `Concurrency`, then `E2E Latency`, `TTFT`, `TPOT`, `ITL`
  (`Max ITL` too), and its `Namespace(...)` before the banner.
The banner has no per-request data: the statistics are as printed (2 decimals). A log of several
runs (`tee -a`) is one result per banner, each with the lines printed since the one before.
"""

from __future__ import annotations

import math
import re
from typing import Any

from fleetplan.warehouse.importers.document import SERVING, key_value

_END = re.compile(r"^={20,}\s*$")
_STAT = re.compile(
    r"^(?P<stat>Mean|Median|P(?P<p>\d+(?:\.\d+)?)|Max) (?P<metric>TTFT|TPOT|ITL|E2EL|E2E Latency)"
    r" \(ms\)$"
)
_METRICS = {"TTFT": "ttft", "TPOT": "tpot", "ITL": "itl", "E2EL": "e2el", "E2E Latency": "e2el"}
# Banner lines as the JSON result's keys (vLLM's; `sglang_bench` renames SGLang's own).
_KEYS = {
    "Backend": "backend",
    "Traffic request rate": "request_rate",
    "Request rate configured (RPS)": "request_rate",
    "Max request concurrency": "max_concurrency",
    "Maximum request concurrency": "max_concurrency",
    "Burstiness factor": "burstiness",
    "Successful requests": "completed",
    "Failed requests": "failed",
    "Benchmark duration (s)": "duration",
    "Total input tokens": "total_input_tokens",
    "Total generated tokens": "total_output_tokens",
    "Request throughput (req/s)": "request_throughput",
    "Request goodput (req/s)": "request_goodput",
    "Output token throughput (tok/s)": "output_throughput",
    "Total Token throughput (tok/s)": "total_token_throughput",
    "Total token throughput (tok/s)": "total_token_throughput",
    "Total throughput (tok/s)": "total_token_throughput",
    # SGLang's, not stored (`sglang_bench` names them once)
    "Total generated tokens (retokenized)": "total_output_tokens_retokenized",
    "Total input text tokens": "total_input_text_tokens",
    "Total input vision tokens": "total_input_vision_tokens",
    "Input token throughput (tok/s)": "input_throughput",
    "Peak output token throughput (tok/s)": "max_output_tokens_per_s",
    "Peak concurrent requests": "max_concurrent_requests",
    "Concurrency": "concurrency",
    "Accept length": "accept_length",
}
# What vLLM prints before its banner (the load it was given).
_BEFORE = ("Traffic request rate", "Burstiness factor", "Maximum request concurrency")
# The arguments (`Namespace(...)`) read, where the banner does not say them.
_ARGS = (
    "model",
    "served_model_name",
    "backend",
    "endpoint_type",
    "label",
    "dataset_name",
    "num_prompts",
    "request_rate",
    "max_concurrency",
    "burstiness",
    "random_input_len",
    "random_output_len",
    "random_range_ratio",
)
_ARG = re.compile(r"\b(?P<key>\w+)=(?:'(?P<text>[^']*)'|(?P<bare>[^,()'\s]+))")
_UNSET = {"none", "not set", ""}


_SGLANG = re.compile(r"^=+ Serving Benchmark Result =+[ \t]*\r?\nBackend:", re.MULTILINE)


def sglang(text: str) -> bool:
    """Whether the log's banner is SGLang's (it opens with its `Backend`; vLLM's never does)."""
    return _SGLANG.search(text) is not None


def results(text: str) -> list[dict[str, Any]]:
    """One result per banner in the log, in the JSON result's keys (what the banner and the
    lines before it print)."""
    out: list[dict[str, Any]] = []
    lines = text.splitlines()
    since = 0
    index = 0
    while index < len(lines):
        if not SERVING.match(lines[index]):
            index += 1
            continue
        before = lines[since:index]
        end = index + 1
        while end < len(lines) and not _END.match(lines[end].strip()):
            end += 1
        result = _arguments(before) | _before(before) | _banner(lines[index + 1 : end])
        out.append(result)
        since = index = end + 1
    return out


def _arguments(lines: list[str]) -> dict[str, Any]:
    namespace = next((line for line in reversed(lines) if "Namespace(" in line), None)
    if namespace is None:
        return {}
    found: dict[str, Any] = {}
    for match in _ARG.finditer(namespace[namespace.index("Namespace(") :]):
        key = match["key"]
        if key in _ARGS and key not in found:
            value = match["text"] if match["text"] is not None else _value(match["bare"])
            if value is not None:
                found[key] = value
    if "model" not in found and "served_model_name" in found:
        found["model"] = found["served_model_name"]
    found.pop("served_model_name", None)
    if "model" in found:
        found["model_id"] = found.pop("model")
    return found


def _before(lines: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in filter(None, map(key_value, lines)):
        if key in _BEFORE:
            found[_KEYS[key]] = _value(value)
    return {k: v for k, v in found.items() if v is not None or k == "max_concurrency"}


def _banner(lines: list[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in filter(None, map(key_value, lines)):
        if (stat := _STAT.match(key)) is not None:
            if stat["stat"] == "Max":
                found["max_" + _METRICS[stat["metric"]] + "_ms"] = _value(value)
                continue
            name = stat["stat"].lower() if stat["p"] is None else f"p{stat['p']}"
            found[f"{name}_{_METRICS[stat['metric']]}_ms"] = _value(value)
        elif key in _KEYS:
            found[_KEYS[key]] = _value(value)
    return found


def _value(text: str) -> Any:
    """A printed value: a number (`inf` as vLLM's JSON writes it), None where unset, else text
    (which the reader refuses where it needs a number)."""
    text = text.strip()
    if text.lower() in _UNSET:
        return None
    word = text.split()[0]  # "1.0 (Poisson process)"
    if word.lower() in {"inf", "infinity"}:
        return "inf"
    try:
        number = float(word)
    except ValueError:
        return text
    if not math.isfinite(number):
        return text
    return int(word) if re.fullmatch(r"[-+]?\d+", word) else number
