"""Hardening, round 4, of estimates from a config.json (`fleetplan capacity --estimate`, plans'
"estimates": "fill"): experts it cannot size (no experts per token, latent attention, DBRX's
nested layout) and a quantized checkpoint of a format it does not size are refused; every shape
key is a whole number in a real model's range, a bool is no number, KV heads divide the heads,
an unknown torch_dtype and lengths past the model's context are refused; the GPU count must
be a tensor parallel size the model splits into, lengths are bounded and so is the
simulation's work; and a simulated curve's words say "simulated", not "measured"."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pandas as pd
import pytest

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.architecture import (
    Architecture,
    architecture_from_config,
    tensor_parallel_problem,
)
from fleetplan.planner.curve.load_curve import fit_curve
from fleetplan.planner.estimate.serving import Efficiencies, Server, Shape, kv_cache_tokens
from fleetplan.planner.estimate.simulate import (
    SimulationTooLong,
    Traffic,
    simulate,
    step_budget,
)
from fleetplan.planner.scenario.parts import MAX_TOKENS
from fleetplan.services import estimate as estimate_service
from fleetplan.services.capacity import CapacityQuery
from fleetplan.services.estimate import bundled_specs, model_shape, prediction_for

# Llama-3.1-8B's shape, as a config.json gives it
DENSE = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
}
EFF = Efficiencies(overhead_s=0.004, inv_bandwidth_eff=1.2, inv_compute_eff=1.5, allreduce_s=5e-5)
FIT = SimpleNamespace(efficiencies=EFF)


def arch(config: dict, kv_dtype: str | None = None) -> Architecture:
    return architecture_from_config("acme/m", config, source="test", kv_dtype=kv_dtype)


def refused(config: dict, kv_dtype: str | None = "auto") -> InputError:
    with pytest.raises(InputError) as error:
        arch(config, kv_dtype)
    return error.value


def query(tmp_path, config: dict, **fields) -> SimpleNamespace:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    given = dict(model="acme/m", gpu_count=1, input_len=None, output_len=None)
    return SimpleNamespace(model_config_path=str(path), **(given | fields))


# F1: a mixture of experts or a quantized checkpoint, sized as a dense bf16 model. A mixture of
# experts is now sized as one (tests/test_estimate_experts.py); what it cannot size is refused.


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ({"num_local_experts": 8}, "num_experts_per_tok"),  # no experts per token
        ({"n_routed_experts": 256}, "num_experts_per_tok"),
        ({"num_local_experts": 8, "num_experts_per_tok": 9}, "num_experts_per_tok"),
        ({"moe_intermediate_size": 1408}, "moe_intermediate_size"),  # no count of experts
        ({"kv_lora_rank": 512}, "qk_rope_head_dim"),  # latent attention, half given
    ],
)
def test_experts_it_cannot_size_are_refused_naming_the_key(extra, key):
    error = refused(DENSE | extra)
    assert error.field == key and key in error.reason


def test_dbrx_nested_experts_are_read_as_experts():
    # once refused (a nested layout fleetplan did not read); now read as the standard keys
    # (tests/test_estimate_families.py sizes DBRX itself)
    extra = {"ffn_config": {"moe_num_experts": 16, "moe_top_k": 4}}
    found = arch(DENSE | extra)
    assert (found.experts, found.experts_per_token) == (16, 4) and found.routed
    given = arch(DENSE | extra | {"fleetplan_weight_bytes": 263e9})
    assert given.weight_bytes == 263e9 and given.routed  # the given bytes, the shape's share
    bad = {"ffn_config": {"moe_num_experts": 16, "moe_top_k": 17}}
    assert refused(DENSE | bad).field == "num_experts_per_tok"


def test_one_expert_is_a_dense_model():
    assert arch(DENSE | {"num_local_experts": 1}).weight_bytes == arch(DENSE).weight_bytes


def test_a_quantized_checkpoint_is_sized_from_its_config_or_refused_naming_its_method():
    # sized now (tests/test_estimate_quantized.py); refused where its format is unknown
    unknown = DENSE | {"quantization_config": {"quant_method": "hqq", "nbits": 4}}
    error = refused(unknown)
    assert error.field == "quantization_config" and "(hqq)" in error.reason
    assert "fleetplan_weight_bytes" in error.reason
    no_bits = DENSE | {"quantization_config": {"quant_method": "gptq"}}
    assert refused(no_bits).field == "quantization_config.bits"
    # the checkpoint's own bytes, where given, win over any sizing
    assert arch(unknown | {"fleetplan_weight_bytes": 5.7e9}).weight_bytes == 5.7e9


# F2: shape keys checked only in part


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("hidden_size", 1e-300),
        ("hidden_size", 1.5),
        ("intermediate_size", 0.001),
        ("vocab_size", 0.001),
        ("vocab_size", 10**12),
        ("num_attention_heads", 1e9),
        ("num_attention_heads", 2**63),
        ("max_position_embeddings", 2.5),
    ],
)
def test_every_shape_key_is_a_whole_number_in_a_real_models_range(key, value):
    error = refused(DENSE | {key: value})
    assert error.field == key and f"{key} must be a whole number from 1 to" in error.reason


@pytest.mark.parametrize(
    "key", ["num_key_value_heads", "num_hidden_layers", "num_attention_heads", "hidden_size"]
)
def test_a_bool_is_refused_as_no_number_naming_the_key(key):
    error = refused(DENSE | {key: True})
    assert error.field == key and "a bool, not a number" in error.reason


@pytest.mark.parametrize("kv_heads", [64, 5])
def test_kv_heads_must_divide_the_attention_heads(kv_heads):
    error = refused(DENSE | {"num_key_value_heads": kv_heads})
    assert error.field == "num_key_value_heads" and "must divide the 32 attention" in error.reason


@pytest.mark.parametrize(("key", "value"), [("torch_dtype", "garbage"), ("dtype", ["bf16"])])
def test_an_unknown_torch_dtype_is_refused_naming_it_whatever_the_runs_dtype(key, value):
    config = {k: v for k, v in DENSE.items() if k != "torch_dtype"} | {key: value}
    error = refused(config, kv_dtype="auto")  # the estimate's: it used to stand in for it
    assert error.field == key and repr(value) in error.reason
    assert "not a dtype fleetplan knows" in error.reason


def test_lengths_beyond_max_position_embeddings_are_refused_naming_both(tmp_path):
    small = DENSE | {"max_position_embeddings": 256}
    asked = query(tmp_path, small, input_len=100_000, output_len=100_000)
    with pytest.raises(InputError, match="max_position_embeddings") as error:
        model_shape(asked, {})
    assert "--input-len 100,000" in error.value.reason
    assert "--output-len 100,000" in error.value.reason and "context of 256" in error.value.reason
    assert model_shape(query(tmp_path, small, input_len=200, output_len=56), {}) is not None
    # a rope_scaling factor scales the context as vLLM derives it (not llama3's: counted)
    yarn = small | {"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}
    assert arch(yarn).max_context == 1024
    assert arch(DENSE | {"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}).max_context == (
        131072
    )


# F3: no bound on the GPU count, the lengths or the simulation's work


@pytest.mark.parametrize("count", [3, 1_000_000, 64])
def test_a_gpu_count_the_heads_do_not_split_into_is_refused_for_an_estimate(tmp_path, count):
    with pytest.raises(InputError, match="--gpu-count") as error:
        model_shape(query(tmp_path, DENSE, gpu_count=count), {})
    assert error.value.field == "gpu_count"
    assert "does not divide the model's 32 attention heads" in error.value.reason


def test_tensor_parallelism_follows_vllms_rules_on_kv_heads():
    llama = arch(DENSE)
    assert all(tensor_parallel_problem(llama, tp) is None for tp in (1, 2, 4, 8, 16, 32))
    phi = arch(DENSE | {"num_attention_heads": 40, "num_key_value_heads": 10, "head_dim": 128})
    assert tensor_parallel_problem(phi, 2) is None and tensor_parallel_problem(phi, 10) is None
    assert "neither divides the model's 10 KV heads" in tensor_parallel_problem(phi, 4)
    # the bundled table gives no attention heads: above the KV heads nothing says it divides
    table = Architecture("t", 32, 8, 128, 2.0, 16e9, "table")
    assert tensor_parallel_problem(table, 8) is None
    assert "not known" in tensor_parallel_problem(table, 16)
    assert tensor_parallel_problem(table, 16, strict=False) is None


def test_kv_heads_replicated_past_the_tensor_parallel_size_hold_a_smaller_cache():
    shape = Shape.of(arch(DENSE), 4096)
    spec = bundled_specs()["h100-sxm"]
    traffic = Traffic.of_level(512, 128, fixed=True)
    at_16 = prediction_for(shape, spec, 16, FIT, traffic, method="queue")
    # 16 GPUs, 8 KV heads: each head on two GPUs, so half the cache the split would give
    assert at_16.kv_tokens == pytest.approx(kv_cache_tokens(shape, spec, 16) / 2)
    assert prediction_for(shape, spec, 3, FIT, traffic, method="queue") is None


def test_lengths_are_bounded_in_the_query():
    common = dict(model="m", gpu="h100-sxm", gpu_count=1)
    assert CapacityQuery(**common, input_len=MAX_TOKENS).input_len == MAX_TOKENS
    for field in ("input_len", "output_len"):
        with pytest.raises(InputError, match=f"--{field.replace('_', '-')} 10,000,001") as error:
            CapacityQuery(**common, **{field: MAX_TOKENS + 1})
        assert error.value.field == field


def test_a_simulation_past_its_step_budget_stops(monkeypatch):
    shape = Shape.of(arch(DENSE), 4096)
    spec = bundled_specs()["h100-sxm"]
    server = Server(shape, spec, 1)
    traffic = Traffic.of_level(512, 2048, fixed=True)
    kv = kv_cache_tokens(shape, spec, 1)
    with step_budget(500), pytest.raises(SimulationTooLong):
        simulate(server, EFF, traffic, rate_rps=float("inf"), requests=400, kv_tokens=kv)
    # the estimate refuses, naming the lengths, instead of running on: long outputs on a cache
    # of few such requests preempt and recompute over and over (100000/100000 ran past 120 s)
    monkeypatch.setattr(estimate_service, "SIMULATION_STEPS", 20_000)
    started = time.monotonic()
    with pytest.raises(InputError, match="takes over 20,000 scheduler steps") as error:
        prediction_for(shape, spec, 1, FIT, Traffic.of_level(512, 8192, fixed=True))
    assert error.value.field == "output_len" and time.monotonic() - started < 10


def test_a_request_longer_than_the_kv_cache_is_refused_not_cut():
    shape = Shape.of(arch(DENSE | {"max_position_embeddings": 10_000_000}), 4096)
    spec = bundled_specs()["h100-sxm"]
    traffic = Traffic.of_level(1_000_000, 1_000_000, fixed=True)
    with pytest.raises(InputError, match="does not fit the KV cache"):
        prediction_for(shape, spec, 1, FIT, traffic)


# F7: an estimated pool's capacity said "measured" and "proves"


def simulated_levels(marked: bool) -> pd.DataFrame:
    """Open-loop levels as fill writes them: kept up at 1, 2 and 4 req/s, the saturation level
    behind; `marked`: with fill's run ids and `estimate` account."""
    rows = []
    for index, (rate, ttft, completed, duration) in enumerate(
        [(1, 55.0, 400, 400.0), (2, 60.0, 400, 200.5), (4, 70.0, 400, 100.75), (16, 5e3, 400, 50)]
    ):
        rows.append(
            {
                "run_id": "estimate:acme/m:1xh200:None:512:128" if marked else "run-1",
                "level_index": index,
                "source_file": "fleetplan estimate: serving model" if marked else "run.json",
                "offered_rate_rps": rate,
                "completed": completed,
                "failed": 0,
                "complete": True,
                "duration_s": duration,
                "request_throughput_rps": completed / duration,
                "ttft_p50_ms": ttft * 0.7,
                "ttft_p99_ms": ttft,
                "tpot_p50_ms": 18.0,
                "tpot_p99_ms": 20.0,
                "output_tokens_mean": 50.0,
            }
        )
    frame = pd.DataFrame(rows)
    if marked:
        frame["estimate"] = json.dumps({"basis": "estimated", "error": {}})
    return frame


@pytest.mark.parametrize("with_account", [True, False])
def test_a_simulated_curve_says_simulated_not_measured(with_account):
    rows = simulated_levels(marked=True)
    if not with_account:  # a plan fits curves from its curve columns alone: the run id tells
        rows = rows.drop(columns=["estimate"])
    curve = fit_curve(rows)
    words = curve.interval(target_ttft_p99_ms=100, target_tpot_p99_ms=None).words
    assert "simulated: kept up at 4 req/s" in words and "measured" not in words
    assert "a simulated level at 16 req/s offered shows" in curve.saturation_basis
    assert "proves" not in curve.saturation_basis
    alone = fit_curve(rows[rows["offered_rate_rps"] < 16])
    kept = alone.interval(target_ttft_p99_ms=100, target_tpot_p99_ms=None).words
    assert kept == "simulated: kept up at 4 req/s; not simulated above"
    reason = alone.capacity(target_ttft_p99_ms=1000, target_tpot_p99_ms=None).reason
    assert reason.endswith("beyond it nothing was simulated")


def test_a_measured_curve_still_says_measured():
    curve = fit_curve(simulated_levels(marked=False))
    words = curve.interval(target_ttft_p99_ms=100, target_tpot_p99_ms=None).words
    assert "measured: kept up at 4 req/s" in words and "simulated" not in words
    assert "a level at 16 req/s offered proves" in curve.saturation_basis
