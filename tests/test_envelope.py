"""Physical bounds of a server (fleetplan/planner/envelope.py) and the levels they flag
(fleetplan/services/envelope.py, the Benchmarks page's outliers, `fleetplan capacity`): the
formulas against figures worked out by hand, the bundled table and a real config.json, and the
bundled io.net levels, none of which claims more than its server can carry."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from fleetplan.core.errors import InputError
from fleetplan.core.paths import sample_data_dir
from fleetplan.planner.capacity.architecture import architecture_from_config, estimated_parameters
from fleetplan.planner.capacity.envelope import GIB, Hardware, level_flags, server_envelope
from fleetplan.services.envelope import (
    architecture_from_file,
    bundled_architectures,
    envelope_reasons,
)
from fleetplan.services.outliers import outlier_reasons

LLAMA_CONFIG = sample_data_dir() / "models" / "llama-3.1-8b-config.json"
LLAMA_8B = "meta-llama/meta-llama-3-8b-instruct"
RTX_4090 = Hardware("rtx-4090", 24, 1008)


def test_the_bounds_of_an_8b_model_on_one_4090_are_the_formulas_by_hand():
    arch = bundled_architectures()[LLAMA_8B]
    assert arch.kv_bytes_per_token == 2 * 32 * 8 * 128 * 2  # 128 KiB a token
    bounds = server_envelope(
        arch,
        RTX_4090,
        gpu_count=1,
        tensor_parallel_size=1,
        input_tokens=220,
        output_tokens=200,
        e2el_mean_ms=7100,
        ttft_mean_ms=100,
    )
    free = 24 * GIB - 8.03e9 * 2  # all memory but the float16 weights
    kv_tokens = free / 131072
    assert bounds.kv_tokens == pytest.approx(kv_tokens)
    assert 70_000 < kv_tokens < 80_000
    sequences = kv_tokens / (220 + 200 / 2)
    assert bounds.sequences == pytest.approx(sequences)
    # Little's law with the time a request holds its cache, E2EL - TTFT = 7 s
    assert bounds.rate_rps == pytest.approx(sequences / 7.0)
    assert bounds.rate_basis == "E2EL - TTFT"
    # decode reads the weights and the full cache once per step of `sequences` tokens
    assert bounds.output_tps == pytest.approx(1008e9 * sequences / (8.03e9 * 2 + free))


def test_tensor_parallel_pools_memory_and_replicas_each_hold_the_weights():
    arch = bundled_architectures()[LLAMA_8B]
    common = {"input_tokens": 220, "output_tokens": 200, "tpot_mean_ms": 30}
    tp2 = server_envelope(arch, RTX_4090, gpu_count=2, tensor_parallel_size=2, **common)
    two_replicas = server_envelope(arch, RTX_4090, gpu_count=2, tensor_parallel_size=1, **common)
    weights = 8.03e9 * 2
    assert tp2.kv_tokens == pytest.approx((2 * 24 * GIB - weights) / 131072)
    assert two_replicas.kv_tokens == pytest.approx(2 * (24 * GIB - weights) / 131072)
    assert tp2.rate_basis.startswith("TPOT x (output tokens - 1)")
    assert tp2.rate_rps == pytest.approx(tp2.sequences / (30 * 199 / 1000))


def test_weights_that_do_not_fit_flag_every_level_of_the_server():
    arch = bundled_architectures()["meta-llama/meta-llama-3-70b-instruct"]
    bounds = server_envelope(
        arch, RTX_4090, gpu_count=1, tensor_parallel_size=1, input_tokens=200, output_tokens=200
    )
    assert not bounds.fits and bounds.sequences == 0
    (flag,) = level_flags(
        bounds, request_throughput_rps=1.0, output_throughput_tps=100.0, weight_gb=141.2
    )
    assert "141.2 GB" in flag and "do not fit" in flag


def test_a_level_over_a_bound_is_flagged_and_one_under_it_is_not():
    arch = bundled_architectures()[LLAMA_8B]
    bounds = server_envelope(
        arch,
        RTX_4090,
        gpu_count=1,
        tensor_parallel_size=1,
        input_tokens=220,
        output_tokens=200,
        tpot_mean_ms=33,
    )
    assert level_flags(bounds, request_throughput_rps=6.3, output_throughput_tps=1353) == []
    flags = level_flags(
        bounds, request_throughput_rps=6.3, output_throughput_tps=20_000, sustained_rps=90.0
    )
    assert len(flags) == 2
    assert "90.00 req/s sustained is above the KV-cache bound" in flags[0]
    assert "decode-bandwidth bound" in flags[1]


def test_unknown_memory_or_tokens_is_no_bound_and_says_what_is_missing():
    arch = bundled_architectures()[LLAMA_8B]
    cpu = server_envelope(
        arch,
        Hardware("cpu", None, None),
        gpu_count=1,
        tensor_parallel_size=None,
        input_tokens=200,
        output_tokens=200,
    )
    assert cpu.rate_rps is None and cpu.output_tps is None and "cpu's memory" in cpu.unknown
    assert level_flags(cpu, request_throughput_rps=1e6, output_throughput_tps=1e9) == []
    untold = server_envelope(
        arch, RTX_4090, gpu_count=1, tensor_parallel_size=1, input_tokens=None, output_tokens=9
    )
    assert untold.kv_tokens is not None and untold.sequences is None
    assert "mean input and output tokens" in untold.unknown


def test_a_config_json_gives_the_shape_and_the_estimated_weights():
    config = json.loads(LLAMA_CONFIG.read_text())
    assert estimated_parameters(config) == pytest.approx(8.03e9, rel=0.005)
    arch = architecture_from_file(LLAMA_CONFIG, "meta-llama/Llama-3.1-8B", dtype="bfloat16")
    bundled = bundled_architectures()["meta-llama/llama-3.1-8b"]
    assert (arch.layers, arch.kv_heads, arch.head_dim) == (32, 8, 128)
    assert arch.kv_bytes_per_token == bundled.kv_bytes_per_token
    assert arch.weight_bytes == pytest.approx(bundled.weight_bytes, rel=0.005)
    assert str(LLAMA_CONFIG) in arch.source


def test_a_config_json_without_what_the_bounds_need_is_refused_naming_the_file(tmp_path):
    broken = tmp_path / "config.json"
    broken.write_text(json.dumps({"num_attention_heads": 32, "torch_dtype": "bfloat16"}))
    with pytest.raises(InputError, match="num_hidden_layers") as error:
        architecture_from_file(broken, "m")
    assert error.value.file == str(broken)
    broken.write_text("{not json")
    with pytest.raises(InputError, match=r"config\.json: invalid JSON at line 1"):
        architecture_from_file(broken, "m")
    with pytest.raises(InputError, match="not one fleetplan knows"):
        architecture_from_config(
            "m", {"num_hidden_layers": 2, "num_attention_heads": 2, "head_dim": 8}, source="x"
        )


def test_every_bundled_model_has_an_architecture_and_no_bundled_level_is_flagged(sample_tables):
    points, catalog = sample_tables.points, sample_tables.catalog
    table = bundled_architectures()
    missing = {m for m in points["model"] if m.lower() not in table}
    assert not missing
    assert envelope_reasons(points, catalog).isna().all()


def test_a_level_claiming_more_than_its_server_carries_is_questioned_on_the_page(sample_tables):
    points, catalog = sample_tables.points, sample_tables.catalog
    rows = points[
        (points["model"] == "deepseek-ai/DeepSeek-R1-Distill-Llama-8B")
        & (points["gpu_model"] == "rtx-4090")
        & (points["gpu_count"] == 1)
    ].copy()
    top = rows.index[-1]
    rows.loc[top, "request_throughput_rps"] = 500.0  # a tenfold typo in a 4090's throughput
    reasons = outlier_reasons(rows, catalog)
    assert "above the KV-cache bound" in reasons[top]
    assert "more than the server can physically carry" in reasons[top]
    others = reasons.drop(index=top).dropna()
    assert not others.str.contains("bound").any()
    without = outlier_reasons(rows)[top]  # without the catalog: no bounds
    assert pd.isna(without) or "bound" not in without


def test_fleetplan_capacity_prints_the_bounds_and_takes_a_config_json(cli, sample_warehouse_path):
    common = (
        "capacity", "--warehouse", sample_warehouse_path,
        "--model", "DeepSeek-R1-Distill-Llama-8B", "--gpu", "4090", "--gpu-count", "1",
    )  # fmt: skip
    done = cli(*common)
    assert done.returncode == 0, done.stderr
    assert "Physical bounds" in done.stdout
    assert "KV cache 74,080 tokens per server" in done.stdout
    assert "0 level(s) claim more than a bound allows" in done.stdout
    given = cli(*common, "--model-config", str(LLAMA_CONFIG), "--format", "json")
    assert given.returncode == 0, given.stderr
    bounds = json.loads(given.stdout)["bounds"]
    assert bounds["architecture"].startswith("config.json given")
    assert bounds["flagged"] == 0 and bounds["levels"]
    missing = cli(*common, "--model-config", "/nonexistent/config.json")
    assert missing.returncode == 1
    assert "/nonexistent/config.json" in missing.stderr


def test_a_gemma_config_without_the_tie_key_ties_its_embeddings():
    # gemma-2-9b-it's config.json has no tie_word_embeddings: transformers' Gemma2Config ties
    # by default, so the estimate counts the embeddings once (9.24B on its model card).
    gemma = {
        "model_type": "gemma2",
        "hidden_size": 3584,
        "num_hidden_layers": 42,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 256,
        "intermediate_size": 14336,
        "vocab_size": 256000,
    }
    assert estimated_parameters(gemma) == pytest.approx(9.24e9, rel=0.005)
    assert estimated_parameters({**gemma, "tie_word_embeddings": False}) > 10e9


def test_a_tpot_under_the_decode_floor_is_flagged_as_impossible_as_labelled():
    arch = bundled_architectures()[LLAMA_8B]  # 16.06 GB of float16 weights
    one = server_envelope(
        arch, RTX_4090, gpu_count=1, tensor_parallel_size=1, input_tokens=220, output_tokens=200
    )
    assert one.tpot_floor_ms == pytest.approx(16.06e9 / 1008e9 * 1000, rel=0.01)  # 15.9 ms
    ok = dict(request_throughput_rps=1.0, output_throughput_tps=200)
    assert level_flags(one, **ok, tpot_ms=19.2) == []  # the io.net level: above the floor
    assert level_flags(one, **ok, tpot_ms=15.6) == []  # within the datasheet's rounding
    flags = level_flags(one, **ok, tpot_ms=12.0)
    assert len(flags) == 1 and "below the 15.93 ms a decode step takes at least" in flags[0]
    # tensor parallelism splits the weights: two GPUs halve the floor
    two = server_envelope(
        arch, RTX_4090, gpu_count=2, tensor_parallel_size=2, input_tokens=220, output_tokens=200
    )
    assert two.tpot_floor_ms == pytest.approx(one.tpot_floor_ms / 2)
    assert level_flags(two, **ok, tpot_ms=12.0) == []
    unknown = server_envelope(
        arch, Hardware("x", 24, None), gpu_count=1, tensor_parallel_size=1, input_tokens=220,
        output_tokens=200,
    )  # fmt: skip
    assert unknown.tpot_floor_ms is None and level_flags(unknown, **ok, tpot_ms=0.1) == []


def test_a_sweep_faster_than_its_gpu_reads_weights_is_flagged(sample_tables):
    points = sample_tables.points
    row = points[
        (points["model"] == "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B")
        & (points["gpu_model"] == "h100-pcie")
    ].iloc[[0]]
    assert envelope_reasons(row, sample_tables.catalog).isna().all()
    # the same level said to be a third as slow a token: faster than reading 29.5 GB at 2 TB/s
    fast = row.assign(tpot_mean_ms=row["tpot_mean_ms"] / 3, tpot_p50_ms=row["tpot_p50_ms"] / 3)
    reason = envelope_reasons(fast, sample_tables.catalog).iloc[0]
    assert "below the 14.80 ms" in reason and "the GPU, its count, the dtype" in reason
