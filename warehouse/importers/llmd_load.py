"""The load of one level of an llm-d benchmark report of version 0.1, from what its harness was
told (`scenario.load`: `name`, `args` and `metadata.stage`; llm-d/llm-d-benchmark,
`llmdbenchmark/analysis/benchmark_report/native_to_br0_1.py`). Each harness's converter puts its
own settings under `args`:

- inference-perf: its configuration, whose `load.stages[stage]` has the stage's `rate` or
  `concurrency_level`;
- GuideLLM: its report's `args` (`profile`, `rate`: one rate, or concurrency, a benchmark) or
  `config` (`spec.profile`: `kind` and `rate` or `streams`), the stage its benchmark's index:
  `synchronous` is concurrency 1, `concurrent` the stage's streams, `throughput` all at once,
  `constant` and `poisson` the stage's rate; a `sweep`'s rates are chosen as it runs, so the
  report cannot say them (GuideLLM's own report does);
- vLLM's benchmark_serving and InferenceMAX: `request_rate` (inf: all at once), `max_concurrency`
  and `burstiness`;
- AIPerf: its `input_config` (`genai_perf.export.settings_load`);
- a harness that gives one `qps_values` (llm-d-benchmark's own 0.1 example): that rate.

`v1_load` returns the level's load as the Point's fields, or None where the settings say none.
"""

from __future__ import annotations

import math
from typing import Any

from fleetplan.core.stats import finite_number
from fleetplan.warehouse.importers.genai_perf.export import settings_load


def v1_load(load: dict) -> dict[str, Any] | None:
    """`scenario.load` of a 0.1 report -> {offered_rate_rps, configured_rate_rps,
    max_concurrency, burstiness} (only those it says), or None where it says no load."""
    args = load.get("args") if isinstance(load.get("args"), dict) else {}
    metadata = load.get("metadata") if isinstance(load.get("metadata"), dict) else {}
    stage = metadata.get("stage") if isinstance(metadata.get("stage"), int) else 0
    name = str(load.get("name") or "").lower()
    for read in (_inference_perf, _guidellm if "guidellm" in name else None, _aiperf, _rate_args):
        found = read(args, stage) if read is not None else None
        if found:
            return found
    return None


def _open(rate: Any, burstiness: float | None = None) -> dict[str, Any] | None:
    value = _rate(rate)
    if value is None:
        return None
    out: dict[str, Any] = {"offered_rate_rps": value, "configured_rate_rps": value}
    if burstiness is not None and math.isfinite(value):
        out["burstiness"] = burstiness
    return out


def _capped(rate: Any, burstiness: float | None, concurrency: int | None) -> dict | None:
    """An open loop at `rate`, at most `concurrency` in flight where a cap is given."""
    out = _open(rate, burstiness)
    if out is not None and concurrency:
        out["max_concurrency"] = concurrency
    return out


def _rate(value: Any) -> float | None:
    """A rate in requests/s: a positive number, or inf ("inf", YAML's .inf) for all at once."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity", ".inf"):
        return math.inf
    if isinstance(value, int | float) and value == math.inf:
        return math.inf
    number = finite_number(value)
    return number if number is not None and number > 0 else None


def _count(value: Any) -> int | None:
    number = None if isinstance(value, bool) else finite_number(value)
    return (
        int(number) if number is not None and number >= 1 and float(number).is_integer() else None
    )


def _closed(value: Any) -> dict[str, Any] | None:
    count = _count(value)
    return {"max_concurrency": count} if count is not None else None


def _inference_perf(args: dict, stage: int) -> dict[str, Any] | None:
    stages = args.get("load").get("stages") if isinstance(args.get("load"), dict) else None
    if not isinstance(stages, list) or not 0 <= stage < len(stages):
        return None
    entry = stages[stage] if isinstance(stages[stage], dict) else {}
    return _closed(entry.get("concurrency_level")) or _open(entry.get("rate"))


def _guidellm(args: dict, stage: int) -> dict[str, Any] | None:
    spec = args.get("spec") if isinstance(args.get("spec"), dict) else {}
    profile = spec.get("profile", args.get("profile"))
    values = args.get("rate")
    if isinstance(profile, dict):  # report schema 2: config.spec.profile
        kind = str(profile.get("kind") or profile.get("type_") or "").lower()
        values = profile.get("rate", profile.get("streams"))
    else:
        kind = str(profile or "").lower()
    values = values if isinstance(values, list) else [values]
    value = values[stage] if 0 <= stage < len(values) else None
    if kind == "synchronous":
        return {"max_concurrency": 1}
    if kind == "concurrent":
        return _closed(value)
    if kind == "throughput":
        return {"offered_rate_rps": math.inf}
    if kind in ("constant", "poisson"):
        return _open(value, 1.0 if kind == "poisson" else math.inf)
    return None  # a sweep: its rates are not in the settings


def _aiperf(args: dict, stage: int) -> dict[str, Any] | None:
    if not {"loadgen", "phases", "endpoint", "perf_analyzer"} & args.keys():
        return None
    concurrency, rate, burstiness = settings_load(args)
    return _capped(rate, burstiness, concurrency) if rate is not None else _closed(concurrency)


def _rate_args(args: dict, stage: int) -> dict[str, Any] | None:
    """vLLM benchmark_serving's and InferenceMAX's settings, or one `qps_values`."""
    burstiness = finite_number(args.get("burstiness"))
    rate = _rate(args.get("request_rate"))
    qps = args.get("qps_values")
    if rate is None and qps is not None:
        qps = qps[stage] if isinstance(qps, list) and 0 <= stage < len(qps) else qps
        rate = _rate(qps)
    concurrency = _count(args.get("max_concurrency"))
    if rate is None or (math.isinf(rate) and concurrency is not None):
        return _closed(concurrency)  # all at once, at most N in flight: a closed loop
    return _capped(rate, burstiness if burstiness and burstiness > 0 else None, concurrency)
