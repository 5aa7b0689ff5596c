"""The estimate of a quantized mixture of experts held against a real sweep: InferenceX's
gpt-oss-120b on 4x B200 (../shared/data/tool-outputs/inferencex-together-b200/vllm/: vLLM
v0.22.0, MXFP4, TP 4, closed loops of 16 to 512 users, 1,024-token prompts).

Neither the model, nor a B200, nor a mixture of experts, nor MXFP4 weights are in the io.net
warehouse, so each level is estimated as fleetplan would estimate it for a team: gpt-oss-120b's
config.json sized as a mixture of experts with MXFP4 experts (`planner/capacity/quantization.py`),
the io.net H100 PCIe fit borrowed by the B200, of no measured architecture, as the measured GPU
nearest in bandwidth ("other architecture", `serving.transferred`).

What a level holds and what is compared (the closed-loop reading of `estimate_ml_energy`):
- the median ITL: the step of a decode batch of c x (1 - TTFT / E2EL) sequences (c users, each
  waiting for its first token that share of its time; medians), prefilling nothing, each holding
  its prompt and half its output (the output per request: output tokens/s over requests/s);
- the output throughput: that batch over the mean step, the prompts' prefill spread over the
  steps (each sequence's prompt once per output length).

Shape: openai/gpt-oss-120b's config.json figures (the same model card family as gpt-oss-20b:
36 layers, 64 attention heads, 8 KV heads, head_dim 64, hidden_size 2880, 128 experts of
intermediate_size 2880, 4 per token, vocabulary 201,088, untied, bfloat16 besides the MXFP4
experts): 60.7 GiB by the rule, 60.8 GiB on OpenAI's model card.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from fleetplan.planner.capacity.architecture import architecture_from_config
from fleetplan.planner.estimate.calibrate import Fit
from fleetplan.planner.estimate.serving import Server, Shape, kv_cache_tokens, transferred
from fleetplan.services.estimate import bundled_specs

FOLDER = Path("inferencex-together-b200") / "vllm" / "gptoss-fp4" / "1k1k" / "untuned"
GPT_OSS_120B = {
    "model_type": "gpt_oss",
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "num_hidden_layers": 36,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "vocab_size": 201088,
    "num_local_experts": 128,
    "num_experts_per_tok": 4,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "mxfp4"},
}


def levels(root: Path, fit: Fit) -> pd.DataFrame:
    """Every concurrency of the sweep, measured against the estimate with `fit` (the io.net
    H100 PCIe fit, borrowed by the B200)."""
    specs = bundled_specs()
    arch = architecture_from_config("openai/gpt-oss-120b", GPT_OSS_120B, source=str(FOLDER))
    shape = Shape.of(arch, float(GPT_OSS_120B["hidden_size"]))
    rows = []
    for path in sorted((root / FOLDER).glob("conc*.json")):
        summary = json.loads(path.read_text(encoding="utf-8"))
        metrics, tp = summary["metrics"], int(summary["tp"])
        gpu = specs[str(summary["hw"]).lower()]
        server = Server(shape, gpu, tp)
        eff = transferred(fit.efficiencies, specs[fit.gpu_model], gpu)
        users = float(summary["conc"])
        prompt = float(summary["isl"])
        output = metrics["output_token_throughput"] / metrics["request_throughput"]
        waiting = metrics["median_ttft_ms"] / metrics["median_e2el_ms"]
        batch = users * (1 - min(waiting, 1.0))
        context = batch * (prompt + output / 2)
        step = server.step_s(eff, batch, context)
        prefill = batch * prompt / output  # prompt tokens a step, on average
        mean_step = server.step_s(eff, batch, context, prefill, prefill * prompt / 2)
        rows.append(
            {
                "users": int(users),
                "batch": batch,
                "output_tokens": output,
                "itl_ms": float(metrics["median_itl_ms"]),
                "itl_est": step * 1000,
                "mixed_est": mean_step * 1000,
                # steps that take in a prompt, at most one a prompt: above half, the median
                # step is a mixed one
                "prefill_share": min(1.0, float(metrics["request_throughput"]) * step),
                "tokens_s": float(metrics["output_token_throughput"]),
                "tokens_est": batch / mean_step,
                "kv_batch": kv_cache_tokens(shape, gpu, tp) / (prompt + output / 2),
            }
        )
    return pd.DataFrame(rows)


def report(root: Path, fit: Fit) -> tuple[list[str], pd.DataFrame]:
    """Per level, for RESULTS.md, and the errors' medians."""
    frame = levels(root, fit)
    lines = [
        "| users | decode batch | output tokens | steps taking a prompt | median ITL ms | "
        "decode step (error) | mean step (error) | output tok/s (est.) | error |",
        "|---:|---:|---:|---:|---:|---|---|---|---:|",
    ]
    for row in frame.sort_values("users").to_dict("records"):
        itl = row["itl_ms"]
        lines.append(
            f"| {row['users']} | {row['batch']:.1f} | {row['output_tokens']:.0f} | "
            f"{row['prefill_share']:.0%} | {itl:.2f} | {row['itl_est']:.2f} "
            f"({row['itl_est'] / itl - 1:+.0%}) | {row['mixed_est']:.2f} "
            f"({row['mixed_est'] / itl - 1:+.0%}) | {row['tokens_s']:,.0f} "
            f"({row['tokens_est']:,.0f}) | {row['tokens_est'] / row['tokens_s'] - 1:+.0%} |"
        )
    itl = (frame["itl_est"] / frame["itl_ms"] - 1).to_numpy()
    tokens = (frame["tokens_est"] / frame["tokens_s"] - 1).to_numpy()
    lines.append(
        f"\nmedian ITL: median error {np.median(itl):+.0%}, within 35 % at "
        f"{int(np.sum(np.abs(itl) <= 0.35))}/{len(itl)}; output throughput: median error "
        f"{np.median(tokens):+.0%}, within 1.5x at "
        f"{int(np.sum((1 + tokens >= 1 / 1.5) & (1 + tokens <= 1.5)))}/{len(tokens)}"
    )
    return lines, frame
