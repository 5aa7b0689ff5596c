"""What each client says about its own levels, read from its output folder: the rate asked, the
rate its own send times (or its stated achieved rate) show, its throughput and P99 TTFT."""

from __future__ import annotations

import json
from pathlib import Path


def _send_rate(starts: list[float]) -> float | None:
    """Arrivals per second from send times: (n - 1) / (last send - first send)."""
    if len(starts) < 2:
        return None
    span = max(starts) - min(starts)
    return (len(starts) - 1) / span if span > 0 else None


def levels_vllm(folder: Path) -> list[dict]:
    rows = []
    for path in sorted(folder.glob("vllm-*.json")):
        result = json.loads(path.read_text())
        concurrency = result.get("max_concurrency")
        rows.append(
            {
                "asked": result.get("request_rate"),
                "concurrency": concurrency,
                "sent_rps": _send_rate(result.get("start_times") or []),
                "sent_basis": "its start_times",
                "throughput_rps": result.get("request_throughput"),
                "ttft_p99_ms": result.get("p99_ttft_ms"),
                "completed": result.get("completed"),
            }
        )
    return sorted(rows, key=lambda row: (row["concurrency"] or 0, float(row["asked"] or 0)))


def levels_guidellm(folder: Path) -> list[dict]:
    document = json.loads((folder / "benchmarks.json").read_text())
    rows = []
    for benchmark in document["benchmarks"]:
        strategy = benchmark["config"]["strategy"]
        requests = benchmark["requests"]["successful"]
        starts = [r["info"]["timings"]["request_start"] for r in requests]
        targeted = [r["info"]["timings"]["targeted_start"] for r in requests]
        metrics = benchmark["metrics"]
        rows.append(
            {
                "asked": strategy.get("rate"),
                "concurrency": strategy.get("streams"),
                "sent_rps": _send_rate(starts),
                "targeted_rps": _send_rate([t for t in targeted if t is not None]),
                "sent_basis": "its request_start timings",
                "throughput_rps": metrics["requests_per_second"]["successful"]["mean"],
                "ttft_p99_ms": metrics["time_to_first_token_ms"]["successful"]["percentiles"][
                    "p99"
                ],
                "completed": len(requests),
            }
        )
    return rows


def levels_aiperf(folder: Path) -> list[dict]:
    rows = []
    for export in sorted(folder.rglob("profile_export_aiperf.json")):
        level = export.parent
        summary = json.loads(export.read_text())
        config = (
            json.loads((level / "run_config.json").read_text())
            if (level / "run_config.json").exists()
            else {}
        )
        starts = []
        for line in (level / "profile_export.jsonl").read_text().splitlines():
            record = json.loads(line)
            start = (record.get("metadata") or {}).get("request_start_ns")
            if start is not None:
                starts.append(start / 1e9)
        sweep, _, value = level.name.rpartition("_")  # AIPerf's rate_4.0, concurrency_4
        rows.append(
            {
                "asked": float(value) if sweep == "rate" else None,
                "concurrency": float(value) if sweep == "concurrency" else None,
                "sent_rps": _send_rate(starts),
                "sent_basis": "its request_start_ns",
                "throughput_rps": _aiperf_metric(summary, "request_throughput", "avg"),
                "ttft_p99_ms": _aiperf_metric(summary, "time_to_first_token", "p99")
                or _aiperf_metric(summary, "ttft", "p99"),
                "completed": _aiperf_metric(summary, "request_count", "avg"),
                "config_keys": sorted(config)[:3],
            }
        )
    return sorted(rows, key=lambda row: row["asked"] or row["concurrency"] or 0)


def _aiperf_metric(summary: dict, tag: str, stat: str) -> float | None:
    for holder in (summary.get("records") or {}, summary):
        metric = holder.get(tag)
        if isinstance(metric, dict) and metric.get(stat) is not None:
            return float(metric[stat])
    return None


def levels_inference_perf(folder: Path) -> list[dict]:
    rows = []
    paths = sorted(folder.rglob("stage_*_lifecycle_metrics.json"))
    for path in sorted(paths, key=lambda p: int(p.name.split("_")[1])):
        stage = json.loads(path.read_text())
        load = stage.get("load_summary") or {}
        concurrency = load.get("concurrency") or load.get("concurrency_level")
        successes = stage.get("successes") or {}
        latency = successes.get("latency") or {}
        ttft = latency.get("time_to_first_token") or {}
        rows.append(
            {
                "asked": None if concurrency else load.get("requested_rate"),
                "concurrency": concurrency,
                "sent_rps": load.get("achieved_rate"),
                "sent_basis": "its achieved_rate",
                "throughput_rps": (successes.get("throughput") or {}).get("requests_per_sec"),
                "ttft_p99_ms": None if ttft.get("p99") is None else 1000 * ttft["p99"],
                "completed": successes.get("count"),
            }
        )
    return rows


LEVELS = {
    "vllm": levels_vllm,
    "guidellm": levels_guidellm,
    "aiperf": levels_aiperf,
    "inference-perf": levels_inference_perf,
}
