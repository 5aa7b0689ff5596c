"""The serving model (fleetplan/planner/estimate): the GPU spec table, vLLM's KV allocation, the
step model, the seeded simulation of continuous batching and the calibration that fits it."""

from __future__ import annotations

import math
import tomllib

import numpy as np
import pandas as pd
import pytest

from fleetplan.core.errors import InputError
from fleetplan.core.paths import sample_data_dir
from fleetplan.planner.estimate.calibrate import decode_ms, fit_gpu
from fleetplan.planner.estimate.predict import predict
from fleetplan.planner.estimate.serving import (
    Efficiencies,
    Server,
    Shape,
    kv_cache_tokens,
    transferred,
)
from fleetplan.planner.estimate.shape import identical_architectures, same_shape
from fleetplan.planner.estimate.simulate import Traffic, simulate
from fleetplan.planner.estimate.specs import nearest_measured, specs_from_table
from fleetplan.services.envelope import architecture_from_file, bundled_architectures
from fleetplan.services.estimate import bundled_specs

REQUIRED = [
    *("rtx-4090", "h100-pcie", "h100-sxm", "h100-nvl", "h200", "l40s"),
    *("a100-40gb", "a100-80gb", "l4", "a10g", "b200"),
]
LLAMA_31 = sample_data_dir() / "models" / "llama-3.1-8b-config.json"
EFF = Efficiencies(overhead_s=0.004, inv_bandwidth_eff=1.2, inv_compute_eff=1.5, allreduce_s=5e-5)


def llama_shape() -> Shape:
    return Shape.of(architecture_from_file(LLAMA_31, "meta-llama/Llama-3.1-8B", dtype="auto"), 4096)


def test_the_spec_table_holds_every_gpu_the_issue_names_each_with_a_source():
    specs = bundled_specs()
    assert set(REQUIRED) <= set(specs)
    for spec in specs.values():
        assert len(spec.source) > 40, spec.gpu_id
        assert spec.interconnect in ("pcie", "nvlink")
        assert spec.tflops > 0 and spec.bandwidth_gb_s > 0 and spec.memory_gb > 0
    assert specs["rtx-4090"].interconnect == "pcie" and specs["h100-sxm"].interconnect == "nvlink"


def test_the_spec_table_agrees_with_the_gpu_catalog_where_both_have_a_gpu():
    catalog = tomllib.loads((sample_data_dir() / "gpu_catalog.toml").read_text())
    compared = 0
    for gpu in catalog["gpu"]:
        spec = bundled_specs().get(gpu["id"])
        if spec is None or "memory_gb" not in gpu:
            continue
        compared += 1
        assert spec.memory_gb == gpu["memory_gb"], gpu["id"]
        assert spec.bandwidth_gb_s == gpu["memory_bandwidth_gb_s"], gpu["id"]
        assert spec.tflops == gpu["fp16_tensor_tflops_dense"], gpu["id"]
    assert compared >= 9


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        ({"id": "x", "interconnect": "pcie", "tflops_bf16_dense": 1, "memory_gb": 1}, "bandwidth"),
        ({"id": "x", "interconnect": "infiniband"}, "interconnect"),
        ({"interconnect": "pcie"}, "id"),
        (
            {
                "id": "x",
                "interconnect": "nvlink",
                "tflops_bf16_dense": 1,
                "memory_gb": 1,
                "bandwidth_gb_s": 1,
                "interconnect_gb_s": 1,
                "peer_to_peer": False,
            },
            "peer_to_peer",
        ),
        (
            {
                "id": "x",
                "interconnect": "pcie",
                "tflops_bf16_dense": 1,
                "memory_gb": 1,
                "bandwidth_gb_s": 1,
                "interconnect_gb_s": 1,
                "peer_to_peer": "no",
            },
            "peer_to_peer",
        ),
    ],
)
def test_a_spec_entry_without_a_figure_is_refused_naming_it(entry, says):
    with pytest.raises(InputError, match=says):
        specs_from_table({"gpu": [entry]})


def test_kv_cache_of_llama_31_8b_on_one_rtx_4090_is_within_20_percent_of_vllm_s_41000():
    tokens = kv_cache_tokens(llama_shape(), bundled_specs()["rtx-4090"], 1)
    assert tokens == pytest.approx(41_000, rel=0.2)
    # at a lower utilisation the cache shrinks by the memory given up, and a model too large
    # for the card has none
    smaller = kv_cache_tokens(llama_shape(), bundled_specs()["rtx-4090"], 1, utilisation=0.8)
    assert tokens - smaller == pytest.approx(0.1 * 24 * 2**30 / (128 * 1024), rel=0.01)
    seventy = Shape.of(bundled_architectures()["meta-llama/meta-llama-3-70b-instruct"])
    assert kv_cache_tokens(seventy, bundled_specs()["rtx-4090"], 1) == 0


def test_an_unmeasured_gpu_borrows_from_its_own_architecture_first():
    specs = bundled_specs()
    measured = ["rtx-4090", "h100-pcie"]
    assert nearest_measured(specs, "h100-sxm", measured).gpu_id == "h100-pcie"
    assert nearest_measured(specs, "l40s", measured).gpu_id == "rtx-4090"
    other = nearest_measured(specs, "a100-80gb", measured)
    assert other.gpu_id == "h100-pcie" and not other.same_architecture
    assert "nor on any ampere GPU" in other.words
    assert nearest_measured(specs, "h100-pcie", measured).gpu_id == "h100-pcie"
    assert nearest_measured(specs, "h100-sxm", []) is None


def test_a_borrowed_fit_moves_its_step_floor_by_bandwidth_and_its_all_reduces_by_the_path():
    specs = bundled_specs()
    assert not specs["rtx-4090"].peer_to_peer and specs["h100-pcie"].peer_to_peer
    h100 = Efficiencies(0.0043, 1.3, 2.06, 6e-5, inv_link_eff=2.9, request_s=0.0047, basis="b")
    moved = transferred(h100, specs["h100-pcie"], specs["rtx-4090"])
    # the floor of a card of half the bandwidth doubles; the link's terms double without P2P
    assert moved.overhead_s == pytest.approx(0.0043 * 2000 / 1008)
    assert moved.allreduce_s == pytest.approx(1.2e-4) and moved.inv_link_eff == pytest.approx(5.8)
    # the efficiencies (fractions of the peaks) and a request's own time move as they are
    assert (moved.inv_bandwidth_eff, moved.inv_compute_eff, moved.request_s) == (1.3, 2.06, 0.0047)
    assert "moved from h100-pcie to rtx-4090" in moved.basis and "8.53 ms" in moved.basis
    assert "no peer-to-peer" in moved.basis
    back = transferred(moved, specs["rtx-4090"], specs["h100-pcie"])
    assert back.overhead_s == pytest.approx(h100.overhead_s)
    assert back.allreduce_s == pytest.approx(h100.allreduce_s)
    # an NVLink target of its own architecture: the floor falls with its bandwidth, the path
    # is peer to peer on both
    sxm = transferred(h100, specs["h100-pcie"], specs["h100-sxm"])
    assert sxm.overhead_s == pytest.approx(0.0043 * 2000 / 3350)
    assert sxm.allreduce_s == h100.allreduce_s and "peer-to-peer" not in sxm.basis
    # a GPU's own fit is its own
    assert transferred(h100, specs["h100-pcie"], specs["h100-pcie"]) is h100


def test_a_step_reads_the_weights_and_grows_with_the_batch_and_the_prefill():
    server = Server(llama_shape(), bundled_specs()["rtx-4090"], 1)
    alone = server.step_s(EFF, 1, 300)
    # one decode token of an 8B model reads its 16 GB of weights at 1,008 GB/s / 1.2
    assert alone == pytest.approx(1.2 * 16.06e9 / 1008e9, rel=0.05)
    assert server.step_s(EFF, 64, 64 * 300) > alone
    assert server.step_s(EFF, 1, 300, prefill=2000, prefill_context=2000 * 1000) > 1.5 * alone
    # a tiny model's step is the overhead
    tiny = Shape.of(bundled_architectures()["deepseek-ai/deepseek-r1-distill-qwen-1.5b"])
    assert Server(tiny, bundled_specs()["h100-sxm"], 1).step_s(EFF, 1, 300) == EFF.overhead_s
    two = Server(llama_shape(), bundled_specs()["rtx-4090"], 2)
    assert two.step_s(EFF, 1, 300) < alone  # half the weights each, plus all-reduces
    assert two.terms(1, 300, 0, 0)[2] == 64  # two all-reduces per layer


def run(rate: float, requests: int = 400, seed: int = 3, kv: float = 40_000.0, **traffic):
    server = Server(llama_shape(), bundled_specs()["rtx-4090"], 1)
    shape = Traffic(200, 200, **traffic) if traffic else Traffic(200, 200)
    return simulate(server, EFF, shape, rate_rps=rate, requests=requests, kv_tokens=kv, seed=seed)


def test_the_simulation_is_seeded_and_every_request_completes():
    a, b, c = run(4.0), run(4.0), run(4.0, seed=4)
    assert np.array_equal(a.ttft_ms, b.ttft_ms) and np.array_equal(a.tpot_ms, b.tpot_ms)
    assert not np.array_equal(a.ttft_ms, c.ttft_ms)
    assert len(a.ttft_ms) == 400 and (a.ttft_ms > 0).all() and (a.tpot_ms > 0).all()
    assert (a.e2el_ms >= a.ttft_ms).all()


def test_below_saturation_the_server_keeps_up_and_latency_rises_with_the_rate():
    light, busy = run(1.0, requests=300), run(4.0, requests=300)
    assert light.throughput_rps == pytest.approx(1.0, rel=0.15)
    assert light.p("tpot", 50) < busy.p("tpot", 50)
    assert light.p("ttft", 99) < busy.p("ttft", 99)
    # one request alone: its TPOT is a decode step with a batch of one
    single = run(0.01, requests=3)
    server = Server(llama_shape(), bundled_specs()["rtx-4090"], 1)
    assert single.p("tpot", 50) == pytest.approx(server.step_s(EFF, 1, 300) * 1000, rel=0.05)


def test_a_small_cache_preempts_and_still_completes_every_request():
    squeezed = run(math.inf, requests=120, kv=3000.0)
    assert squeezed.preemptions > 0 and len(squeezed.ttft_ms) == 120
    roomy = run(math.inf, requests=120, kv=1e6)
    assert roomy.preemptions == 0
    assert squeezed.throughput_rps < roomy.throughput_rps


def test_a_preempted_sequence_resumes_from_the_prefix_cache_unless_it_has_none():
    """A preempted sequence's blocks stay in the prefix cache (vLLM V1, SGLang): resumed, they
    take their room again but no compute. Without prefix caching it prefills its prompt and
    tokens so far again, which makes the same squeezed run slower; with room to spare nobody is
    preempted and both are the same run."""
    server = Server(llama_shape(), bundled_specs()["rtx-4090"], 1)

    def served(kv: float, resume_cached: bool):
        return simulate(
            server, EFF, Traffic(200, 200, 0.8, 0.8), rate_rps=math.inf, requests=200,
            kv_tokens=kv, seed=3, resume_cached=resume_cached,
        )  # fmt: skip

    cached, recomputed = served(6000.0, True), served(6000.0, False)
    assert cached.preemptions > 0 and recomputed.preemptions > 0
    assert len(cached.ttft_ms) == len(recomputed.ttft_ms) == 200
    assert cached.throughput_rps > 1.5 * recomputed.throughput_rps  # 2.3x here
    roomy = served(1e6, True), served(1e6, False)
    assert roomy[0].preemptions == roomy[1].preemptions == 0
    assert np.array_equal(roomy[0].e2el_ms, roomy[1].e2el_ms)


def test_spread_lengths_are_cut_by_the_dataset_filter():
    chat = Traffic.of_level(200, 200, fixed=False)
    assert chat.input_cv > 0 and chat.max_input == 1024
    assert Traffic.of_level(200, 200, fixed=True).input_cv == 0
    spread = run(2.0, requests=300, input_cv=1.0, output_cv=1.0)
    fixed = run(2.0, requests=300)
    assert spread.p("ttft", 99) > fixed.p("ttft", 99)  # long prompts in the tail


def test_the_curve_runs_from_near_zero_to_saturation_and_the_capacity_meets_targets():
    server = Server(llama_shape(), bundled_specs()["rtx-4090"], 1)
    shape = Traffic(200, 200)
    prediction = predict(server, EFF, shape, gpu_count=1, kv_tokens_per_replica=40_000)
    rates = [p.rate_rps for p in prediction.curve]
    assert len(rates) >= 10 and rates == sorted(rates)
    assert rates[0] < 0.1 * prediction.saturation_rps
    assert rates[-1] == pytest.approx(prediction.saturation_rps)
    target = prediction.curve[5].tpot_p99_ms * 1.01
    point = prediction.capacity(None, target)
    assert point is not None and point.tpot_p99_ms <= target + 1e-6
    assert point.rate_rps >= prediction.curve[5].rate_rps
    assert prediction.capacity(None, prediction.curve[0].tpot_p99_ms / 10) is None
    # two GPUs as two replicas of one: twice the rate at the same latencies
    two = predict(
        Server(llama_shape(), bundled_specs()["rtx-4090"], 1), EFF, shape, gpu_count=2,
        kv_tokens_per_replica=40_000,
    )  # fmt: skip
    assert two.saturation_rps == pytest.approx(2 * prediction.saturation_rps)


def synthetic_levels(eff: Efficiencies, gpu: str) -> pd.DataFrame:
    """Levels measured on a simulated server with known coefficients, as a warehouse holds."""
    rows = []
    models = (
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
        "meta-llama/Meta-Llama-3-8B-Instruct",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B",
    )
    for model in models:
        shape = Shape.of(bundled_architectures()[model.lower()])
        server = Server(shape, bundled_specs()[gpu], 1)
        kv = kv_cache_tokens(shape, bundled_specs()[gpu], 1)
        for rate in (1.0, 2.0, 4.0, 6.0):
            done = simulate(server, eff, Traffic(200, 200), rate_rps=rate, requests=300,
                            kv_tokens=kv, seed=int(rate))  # fmt: skip
            rows.append({
                "model": model, "gpu_model": gpu, "gpu_count": 1, "engine": "vllm",
                "tensor_parallel_size": 1, "offered_rate_rps": rate,
                "request_throughput_rps": done.throughput_rps, "input_tokens_mean": 200.0,
                "output_tokens_mean": 200.0, "input_len": None, "output_len": None,
                "tpot_mean_ms": float(done.tpot_ms.mean()), "tpot_p50_ms": done.p("tpot", 50),
                "ttft_p50_ms": done.p("ttft", 50), "ttft_mean_ms": float(done.ttft_ms.mean()),
                "e2el_mean_ms": float(done.e2el_ms.mean()), "e2el_p50_ms": done.p("e2el", 50),
            })  # fmt: skip
    return pd.DataFrame(rows)


def test_calibration_recovers_the_coefficients_of_a_simulated_server():
    truth = Efficiencies(overhead_s=0.006, inv_bandwidth_eff=1.25, inv_compute_eff=2.0,
                         allreduce_s=0.0)  # fmt: skip
    levels = synthetic_levels(truth, "h100-pcie")
    fit = fit_gpu(levels, bundled_architectures(), bundled_specs(), "h100-pcie", "vllm")
    assert fit is not None and len(fit.configurations) == 3
    got = fit.efficiencies
    assert got.bandwidth_efficiency == pytest.approx(0.8, rel=0.1)
    assert got.overhead_s == pytest.approx(0.006, rel=0.25)
    assert got.inv_compute_eff == pytest.approx(2.0, rel=0.35)
    assert fit.median_error < 0.1
    assert fit_gpu(levels.iloc[:2], bundled_architectures(), bundled_specs(), "h100-pcie",
                   "vllm") is None  # fmt: skip
    assert fit_gpu(levels, bundled_architectures(), bundled_specs(), "nope", "vllm") is None


def test_levels_without_a_tpot_calibrate_on_their_decode_time_from_e2el_and_ttft_means():
    """A file whose TPOT is not per token keeps none (inference-perf before v0.5.0), but its
    per-request E2EL and TTFT: (E2EL mean - TTFT mean) / (output mean - 1) is the decode step's
    time all the same (`calibrate.decode_ms`), so the GPU still gets a fit, and the same one."""
    truth = Efficiencies(overhead_s=0.006, inv_bandwidth_eff=1.25, inv_compute_eff=2.0,
                         allreduce_s=0.0)  # fmt: skip
    levels = synthetic_levels(truth, "h100-pcie")
    without = levels.drop(columns=["tpot_mean_ms", "tpot_p50_ms"])
    derived = without.apply(decode_ms, axis=1)
    assert derived.notna().all()
    assert np.allclose(derived, levels["tpot_mean_ms"], rtol=0.05)
    args = (bundled_architectures(), bundled_specs(), "h100-pcie", "vllm")
    got, reference = fit_gpu(without, *args), fit_gpu(levels, *args)
    assert got is not None and len(got.configurations) == 3
    assert got.efficiencies.bandwidth_efficiency == pytest.approx(0.8, rel=0.1)
    assert got.efficiencies.overhead_s == pytest.approx(reference.efficiencies.overhead_s, rel=0.2)
    assert decode_ms({"e2el_mean_ms": 100.0, "ttft_mean_ms": 40.0}) is None  # no token count


def test_a_level_whose_requests_waited_gives_no_first_token_equation():
    """The TTFT equation reads the configuration's lowest level as unloaded; a level whose
    median TTFT is over half its median request time waited in line, whatever its rate: the
    next lowest that did not is taken (the inference-sim H100 SXM sweep's CodeLlama-34b: 4 req/s
    of 1,450-token outputs, a 112 s median TTFT read as the request's own time)."""
    truth = Efficiencies(overhead_s=0.006, inv_bandwidth_eff=1.25, inv_compute_eff=2.0,
                         allreduce_s=0.0, request_s=0.005)  # fmt: skip
    levels = synthetic_levels(truth, "h100-pcie")
    args = (bundled_architectures(), bundled_specs(), "h100-pcie", "vllm")
    clean = fit_gpu(levels, *args).efficiencies.request_s
    waited = levels[levels["offered_rate_rps"] == 2.0].copy()
    waited["offered_rate_rps"] = 0.5  # now the lowest rate, and its requests queued
    waited["ttft_p50_ms"] = 0.9 * waited["e2el_p50_ms"]
    fit = fit_gpu(pd.concat([levels, waited], ignore_index=True), *args)
    assert fit.efficiencies.request_s == pytest.approx(clean, rel=0.25)
    assert fit.efficiencies.request_s < 0.05  # not seconds


def test_an_identical_architecture_is_the_same_shape_under_another_name():
    archs = bundled_architectures()
    llama31 = llama_shape().architecture
    measured = [(a.model, a) for a in archs.values()]
    same = identical_architectures(llama31, measured)
    assert "deepseek-ai/DeepSeek-R1-Distill-Llama-8B" in same
    assert "meta-llama/Meta-Llama-3-8B-Instruct" in same
    assert not any("Qwen" in m or "70B" in m for m in same)
    qwen7 = archs["deepseek-ai/deepseek-r1-distill-qwen-7b"]
    assert not same_shape(llama31, qwen7)
    assert identical_architectures(llama31, [(llama31.model, llama31)]) == []
