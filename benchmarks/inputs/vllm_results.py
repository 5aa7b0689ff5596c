"""vLLM serving-benchmark results for tests and benchmarks, computed the way vLLM computes them.

`make_result` builds one `--save-result` object from random per-request timings: statistics with
numpy over the successful requests (population std, linear percentiles), arrays in seconds,
statistics in ms, GPU labels as `--metadata` keys.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import numpy as np


def _stats(values: list[float], name: str, percentiles: Iterable[float]) -> dict[str, float]:
    out = {
        f"mean_{name}_ms": float(np.mean(values or 0)) * 1000,
        f"median_{name}_ms": float(np.median(values or 0)) * 1000,
        f"std_{name}_ms": float(np.std(values or 0)) * 1000,
    }
    for p in percentiles:
        word = str(int(p)) if int(p) == p else str(p)
        out[f"p{word}_{name}_ms"] = float(np.percentile(values or 0, p)) * 1000
    return out


def make_result(
    *,
    requests: int = 50,
    rate: float | str = 4.0,
    seed: int = 0,
    failures: int = 0,
    detailed: bool = True,
    model: str = "acme/tiny-llama",
    metadata: dict[str, str] | None = None,
    percentiles: Iterable[float] = (50, 90, 95, 99),
    metrics: Iterable[str] = ("ttft", "tpot", "itl", "e2el"),
    max_output: int = 40,
    new_style: bool = True,
) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    input_lens = rng.integers(50, 300, requests)
    output_lens = rng.integers(2, max_output + 1, requests)
    ttfts = rng.uniform(0.01, 0.2, requests)
    itls = [rng.uniform(0.005, 0.03, int(n) - 1).tolist() for n in output_lens]
    ok = np.ones(requests, dtype=bool)
    ok[requests - failures :] = False
    errors = ["" if good else "Internal Server Error" for good in ok]
    for i in np.flatnonzero(~ok):
        ttfts[i], itls[i], output_lens[i] = 0.0, [], 0
    latencies = [
        float(t + sum(g)) if good else 0.0 for t, g, good in zip(ttfts, itls, ok, strict=True)
    ]
    success = np.flatnonzero(ok)
    s_ttft = [float(ttfts[i]) for i in success]
    s_e2el = [latencies[i] for i in success]
    s_tpot = [
        (latencies[i] - ttfts[i]) / (output_lens[i] - 1) for i in success if output_lens[i] > 1
    ]
    s_itl = [gap for i in success for gap in itls[i]]
    numeric_rate = float("inf") if rate == "inf" else float(rate)
    duration = requests / numeric_rate * 1.05 if numeric_rate != float("inf") else 3.0
    total_in = int(input_lens[success].sum())
    total_out = int(output_lens[success].sum())
    result: dict[str, Any] = {"date": "20251201-120000"}
    if new_style:
        result |= {"endpoint_type": "openai", "label": None}
    result |= {
        "backend": "vllm",
        "model_id": model,
        "tokenizer_id": model,
        "num_prompts": requests,
    }
    default = {"gpu_name": "NVIDIA GeForce RTX 4090", "gpu_count": "1"}
    result |= metadata if metadata is not None else default
    result |= {
        "request_rate": "inf" if numeric_rate == float("inf") else numeric_rate,
        "burstiness": 1.0,
        "max_concurrency": None,
        "duration": duration,
        "completed": int(ok.sum()),
    }
    if new_style:
        result["failed"] = int((~ok).sum())
    result |= {
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": int(ok.sum()) / duration,
        "request_goodput" if new_style else "request_goodput:": None,
        "output_throughput": total_out / duration,
        "total_token_throughput": (total_in + total_out) / duration,
    }
    if detailed:
        result |= {
            "input_lens": input_lens.tolist(),
            "output_lens": output_lens.tolist(),
            "ttfts": ttfts.tolist(),
            "itls": itls,
            "generated_texts": ["x" * int(n) for n in output_lens],
            "errors": errors,
        }
    by_name = {"ttft": s_ttft, "tpot": s_tpot, "itl": s_itl, "e2el": s_e2el}
    for name in metrics:
        result |= _stats(by_name[name], name, percentiles)
    return result


def dumps_appended(results: Iterable[dict[str, Any]]) -> bytes:
    """Objects one after another, as `--append-result` writes them."""
    return "\n".join(json.dumps(r) for r in results).encode()
