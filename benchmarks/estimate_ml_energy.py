"""The estimate held against a second real sweep: the ML.ENERGY leaderboard's summaries in
../shared/data/tool-outputs/ml-energy-leaderboard/ (Qwen3-8B on GPQA, Qwen3-14B on LM Arena
chat; one H100, which the file leaves unnamed but its power, over 440 W, makes an SXM, and one
B200; vLLM at a fixed `max_num_seqs` each, closed loop, every sequence decoding).

Neither model nor GPU is in the io.net warehouse, so each row is estimated as fleetplan would
estimate it for a team: the step model with the io.net H100 PCIe fit borrowed (an H100 SXM
borrows it as the nearest measured GPU of its architecture, "same architecture"; a B200, of no
measured architecture, as the measured GPU nearest in bandwidth, "other architecture").

What a summary holds and what is compared, per (GPU, max_num_seqs):
- the median ITL: the step of a batch of `avg_batch_size` sequences that prefills nothing (at
  most one step in five prefills anything here), each holding its prompt and, averaged over the
  steps a sequence decodes, half of a length-weighted output, E[o^2] / (2 E[o]) from the file's
  output-length histogram;
- the output throughput: `avg_batch_size` tokens a step, the steps' mean time with the prompts'
  prefill spread over them (each sequence's prompt once per E[o] steps).

The prompts' lengths are not in the files. GPQA's prompts (a question and four choices) and LM
Arena's first turns are short beside these outputs; PROMPT_TOKENS is an assumption, and the
table gives the errors at half and twice it beside.

Shapes: the models' config.json figures on the Hugging Face Hub, stated as figures:
Qwen/Qwen3-8B: 36 layers, 32 attention heads, 8 KV heads, head_dim 128, hidden_size 4096,
intermediate_size 12288, vocab 151936, untied embeddings, bfloat16 (8.19 B parameters by the
shape); Qwen/Qwen3-14B: 40 layers, 40 heads, 8 KV heads, head_dim 128, hidden_size 5120,
intermediate_size 17408, vocab 151936, untied, bfloat16 (14.77 B).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from fleetplan.planner.capacity.architecture import architecture_from_config
from fleetplan.planner.estimate.calibrate import Fit
from fleetplan.planner.estimate.serving import Server, Shape, kv_cache_tokens, transferred
from fleetplan.services.estimate import bundled_specs

FOLDER = "ml-energy-leaderboard"
PROMPT_TOKENS = 200.0  # assumed (module docstring); the table also gives 100 and 400
SHAPES = {
    "Qwen__Qwen3-8B__gpqa.json": {
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "num_hidden_layers": 36,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 151936,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
    "Qwen__Qwen3-14B__lm-arena-chat.json": {
        "hidden_size": 5120,
        "intermediate_size": 17408,
        "num_hidden_layers": 40,
        "num_attention_heads": 40,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "vocab_size": 151936,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
}
GPUS = {"H100": ("h100-sxm", "same architecture"), "B200": ("b200", "other architecture")}


def output_moments(histogram: dict) -> tuple[float, float]:
    """E[o] and E[o^2] / E[o] of the output lengths, from a histogram's bin edges and counts."""
    edges = np.asarray(histogram["bins"], dtype=float)
    counts = np.asarray(histogram["counts"], dtype=float)
    middles = (edges[:-1] + edges[1:]) / 2
    mean = float((counts * middles).sum() / counts.sum())
    return mean, float((counts * middles**2).sum() / counts.sum()) / mean


def levels(root, fit: Fit) -> pd.DataFrame:
    """Every (model, GPU, max_num_seqs) of the two summaries, measured against the estimate
    with `fit` (the io.net H100 PCIe fit, borrowed)."""
    specs = bundled_specs()
    rows = []
    for name, config in SHAPES.items():
        summary = json.loads((root / FOLDER / name).read_text(encoding="utf-8"))
        arch = architecture_from_config(summary["model_id"], config, source=f"{FOLDER}/{name}")
        shape = Shape.of(arch, float(config["hidden_size"]))
        for level in summary["configurations"]:
            if level["gpu_model"] not in GPUS or int(level["num_gpus"]) != 1:
                continue
            gpu, kind = GPUS[level["gpu_model"]]
            server = Server(shape, specs[gpu], 1)
            # borrowed as fleetplan borrows it: moved to this GPU (`transferred`)
            eff = transferred(fit.efficiencies, specs[fit.gpu_model], specs[gpu])
            mean_out, weighted_out = output_moments(level["output_length_distribution"])
            batch = float(level["avg_batch_size"])
            row = {
                "model": summary["model_id"],
                "gpu": gpu,
                "kind": kind,
                "max_num_seqs": int(level["max_num_seqs"]),
                "batch": batch,
                "itl_ms": float(level["median_itl_ms"]),
                "tokens_s": float(level["output_throughput_tokens_per_sec"]),
                "kv_tokens": kv_cache_tokens(shape, specs[gpu], 1),
            }
            prompts = {"": PROMPT_TOKENS, "_half": PROMPT_TOKENS / 2, "_double": PROMPT_TOKENS * 2}
            for tag, prompt in prompts.items():
                context = batch * (prompt + weighted_out / 2)
                step = server.step_s(eff, batch, context)
                prefill = batch * prompt / mean_out  # prompt tokens a step, on average
                mean_step = server.step_s(eff, batch, context, prefill, prefill * prompt / 2)
                row[f"itl_est{tag}"] = step * 1000
                row[f"tokens_est{tag}"] = batch / mean_step
            # the longest batch the estimated KV cache holds at these lengths
            row["kv_batch"] = row["kv_tokens"] / (PROMPT_TOKENS + weighted_out / 2)
            rows.append(row)
    return pd.DataFrame(rows)


def report(root, fit: Fit) -> tuple[list[str], pd.DataFrame]:
    """The table for RESULTS.md: per kind and metric, the errors at the assumed prompt length
    and at half and twice it."""
    frame = levels(root, fit)
    lines = [
        "| kind | GPU | metric | levels | median error | median abs err | P90 abs err "
        "| within aim | error at half / twice the prompt (median) |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for (kind, gpu), part in frame.groupby(["kind", "gpu"], sort=False):
        for metric, name, measured_column in (
            ("itl", "median ITL (TPOT)", "itl_ms"),
            ("tokens", "output throughput", "tokens_s"),
        ):
            measured = part[measured_column]
            errors = (part[f"{metric}_est"] / measured - 1).to_numpy()
            half = np.median(part[f"{metric}_est_half"] / measured - 1)
            double = np.median(part[f"{metric}_est_double"] / measured - 1)
            if metric == "tokens":  # held to saturation's aim: within 1.5x
                hits = sum(1 / 1.5 <= 1 + e <= 1.5 for e in errors)
            else:  # P99 TPOT's aim: within 35 %
                hits = sum(abs(e) <= 0.35 for e in errors)
            lines.append(
                f"| {kind} | {gpu} | {name} | {len(errors)} | {np.median(errors):+.0%} | "
                f"{np.median(np.abs(errors)):.0%} | {np.percentile(np.abs(errors), 90):.0%} | "
                f"{hits}/{len(errors)} | {half:+.0%} / {double:+.0%} |"
            )
    return lines, frame
