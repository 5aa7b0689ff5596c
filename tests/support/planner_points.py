"""Synthetic benchmark points for planner tests, in the columns of the canonical table."""

from __future__ import annotations

import itertools

import pandas as pd

_counter = itertools.count()


def level(offered, achieved, ttft=10.0, tpot=5.0, power_w=None, tokens=(200.0, 100.0)):
    return {
        "offered": offered,
        "achieved": achieved,
        "ttft": ttft,
        "tpot": tpot,
        "power_w": power_w,
        "tokens": tokens,
    }


def points(*configs, model="acme/m", dataset="synthetic") -> pd.DataFrame:
    """configs: (gpu_model, gpus_per_server, [level(...), ...])."""
    rows = []
    for gpu_model, count, levels in configs:
        run = f"run-{next(_counter)}"
        for i, lv in enumerate(levels):
            in_tok, out_tok = lv["tokens"]
            rows.append(
                {
                    "run_id": run,
                    "level_index": i,
                    "model": model,
                    "gpu_model": gpu_model,
                    "gpu_count": count,
                    "dataset": dataset,
                    "input_len": None,
                    "output_len": None,
                    "offered_rate_rps": lv["offered"],
                    "max_concurrency": None,
                    "completed": 100,
                    "request_throughput_rps": lv["achieved"],
                    "output_throughput_tps": lv["achieved"] * out_tok,
                    "total_throughput_tps": lv["achieved"] * (in_tok + out_tok),
                    "ttft_p99_ms": lv["ttft"],
                    "tpot_p99_ms": lv["tpot"],
                    "input_tokens_mean": in_tok,
                    "output_tokens_mean": out_tok,
                    "avg_power_w": lv["power_w"],
                    "source_file": f"{run}.json",
                }
            )
    return pd.DataFrame(rows)


def scenario(classes, gpus, *, sites=None, **extra) -> dict:
    """A scenario planned at full capacity (`max_utilization` 1.0, not the schema's 0.8 headroom)
    unless `extra` says otherwise: the known answers are worked out by hand on whole capacities."""
    sites = sites or [
        {"name": "dc", "electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 300, "pue": 1.0}
    ]
    return {
        "name": "test",
        "model": "acme/m",
        "classes": classes,
        "gpus": gpus,
        "sites": sites,
        "max_utilization": 1.0,
        **extra,
    }


def gpu(model, hourly, **extra) -> dict:
    return {"gpu_model": model, "hourly_usd": hourly, "site": "dc", **extra}
