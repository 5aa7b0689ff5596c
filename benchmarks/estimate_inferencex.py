"""The estimate of mixtures of experts held against InferenceX's real sweeps: gpt-oss-120b on
4x B200 (../shared/data/tool-outputs/inferencex-together-b200/vllm/: vLLM v0.22.0, MXFP4, TP 4,
closed loops of 16 to 512 users, 1,024-token prompts), and MiniMax-M2.5 on 8x H200
(inferencex-token-position-h200/minimax-m2.5/: vLLM nightly of 2026-02, TP 8 with expert
parallelism, closed loops of 4 to 64 users, prompts of 1,024 to 32,768 tokens, 128 out;
`minimax_report`).

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


def closed_loop_steps(
    server: Server, eff, users: float, waiting: float, prompt: float, output: float
) -> tuple[float, float, float]:
    """A closed loop of `users`, each waiting for its first token `waiting` of its time: its
    decode batch, the step of that batch prefilling nothing, and its mean step with the prompts'
    prefill spread among the steps (each sequence's prompt once per `output` steps)."""
    batch = users * (1 - min(waiting, 1.0))
    context = batch * (prompt + output / 2)
    prefill = batch * prompt / output  # prompt tokens a step, on average
    step = server.step_s(eff, batch, context)
    mean_step = server.step_s(eff, batch, context, prefill, prefill * prompt / 2)
    return batch, step, mean_step


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
        batch, step, mean_step = closed_loop_steps(server, eff, users, waiting, prompt, output)
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


MINIMAX = Path("inferencex-token-position-h200") / "minimax-m2.5"
# MiniMaxAI/MiniMax-M2's config.json figures (hidden 3072, 62 layers, 48 heads, 8 KV heads of
# 128, 256 experts of 1,536, 8 a token, vocabulary 200,064, untied; FP8 blocks, the router and
# the output head left in 16 bits), as public copies restate them; M2.5 is taken to share them
# (the files name the model, not its shape): 228.7 billion parameters by the rule, 230 on M2's
# card. The files' TP 8 with expert parallelism ("tep8") holds an eighth of the experts a GPU
# where TP 8 holds an eighth of each: the same bytes a GPU.
MINIMAX_M2 = {
    "model_type": "minimax_m2",
    "hidden_size": 3072,
    "intermediate_size": 1536,
    "num_hidden_layers": 62,
    "num_attention_heads": 48,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "num_local_experts": 256,
    "num_experts_per_tok": 8,
    "vocab_size": 200064,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]},
}


def minimax_levels(root: Path, fit: Fit) -> pd.DataFrame:
    """Every tep8 level: its median TPOT (a request's decode time over its tokens: the mean step
    while it decodes, prompts of the others prefilled among them) against the mean step of its
    decode batch with the prompts' prefill spread (the `levels` reading above)."""
    specs = bundled_specs()
    arch = architecture_from_config("MiniMaxAI/MiniMax-M2.5", MINIMAX_M2, source=str(MINIMAX))
    shape = Shape.of(arch, float(MINIMAX_M2["hidden_size"]))
    gpu = specs["h200"]
    server = Server(shape, gpu, 8)
    eff = transferred(fit.efficiencies, specs[fit.gpu_model], gpu)
    rows = []
    for path in sorted((root / MINIMAX).glob("minimax_m25_vllm_tep8_*.json")):
        level = json.loads(path.read_text(encoding="utf-8"))
        users = float(level["max_concurrency"])
        prompt = level["total_input_tokens"] / level["completed"]
        output = level["total_output_tokens"] / level["completed"]
        waiting = level["median_ttft"] / level["median_e2el"]
        _, step, mean_step = closed_loop_steps(server, eff, users, waiting, prompt, output)
        rows.append(
            {
                "users": int(users),
                "prompt": prompt,
                "tpot_ms": level["median_tpot"] * 1000,
                "tpot_est": mean_step * 1000,
                "decode_est": step * 1000,
            }
        )
    return pd.DataFrame(rows)


def minimax_report(root: Path, fit: Fit) -> tuple[list[str], pd.DataFrame]:
    """By prompt length: the median TPOT's error over the concurrencies, for RESULTS.md."""
    frame = minimax_levels(root, fit)
    frame["error"] = frame["tpot_est"] / frame["tpot_ms"] - 1
    lines = [
        "| prompt tokens | levels (users) | median TPOT ms, measured | estimated | error |",
        "|---:|---|---|---|---|",
    ]
    for prompt, part in frame.groupby("prompt"):
        part = part.sort_values("users")
        lines.append(
            f"| {prompt:,.0f} | {', '.join(str(u) for u in part['users'])} | "
            + ", ".join(f"{v:.1f}" for v in part["tpot_ms"])
            + " | "
            + ", ".join(f"{v:.1f}" for v in part["tpot_est"])
            + " | "
            + ", ".join(f"{v:+.0%}" for v in part["error"])
            + " |"
        )
    errors = frame["error"].to_numpy()
    lines.append(
        f"\n{len(errors)} levels: median error {np.median(errors):+.0%}, median abs "
        f"{np.median(np.abs(errors)):.0%}, within 35 % at {int(np.sum(np.abs(errors) <= 0.35))}"
    )
    return lines, frame
