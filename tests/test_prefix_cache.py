"""Levels that found their prompts in the engine's prefix cache (planner/estimate/prefix_cache):
the same prompts sent again to a server whose cache held them. The calibration reads their
prefill as one token and fits a request's own time outside the steps; the simulation adds that
time to every first token."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from fleetplan.planner.estimate.calibrate import fit_gpu
from fleetplan.planner.estimate.prefix_cache import (
    cached_from,
    cached_shares,
    caches_prefixes,
    repeated_prompts,
)
from fleetplan.planner.estimate.serving import Efficiencies, Server, Shape, kv_cache_tokens
from fleetplan.planner.estimate.simulate import Traffic, serve, simulate
from fleetplan.services.envelope import bundled_architectures
from fleetplan.services.estimate import bundled_specs
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points

LLAMA_8B = "meta-llama/Meta-Llama-3-8B-Instruct"


def level(run: str, minute: int, rate: float, **changes) -> dict:
    row = {
        "run_id": run,
        "level_index": 0,
        "model": LLAMA_8B,
        "gpu_model": "h100-pcie",
        "gpu_count": 1,
        "tensor_parallel_size": 1,
        "engine": "vllm",
        "engine_version": "0.8.5",
        "variant": None,
        "host": None,
        "dataset": "sharegpt",
        "input_len": None,
        "requests_sent": 200,
        "input_tokens_mean": 205.845,
        "output_tokens_mean": 211.6,
        "offered_rate_rps": rate,
        "duration_s": 30.0,
        "created_at": pd.Timestamp("2025-06-10 14:30") + pd.Timedelta(minutes=minute),
    }
    return row | changes


def sweep(**changes) -> pd.DataFrame:
    return pd.DataFrame(
        [level(f"r{i}", i, rate, **changes) for i, rate in enumerate((32.0, 16.0, 8.0, 4.0))]
    )


@pytest.mark.parametrize(
    ("engine", "version", "variant", "caches"),
    [
        ("vllm", "0.8.5", None, True),  # V1 by default from 0.8.0: prefix caching on
        ("vllm", "v0.10.1.1", "max-num-seqs 128", True),
        ("vllm", "0.8.5", "--no-enable-prefix-caching", False),
        ("vllm", "0.6.3", None, False),  # V0: off unless asked for
        ("vllm", "0.6.3", "enable-prefix-caching", True),
        ("vllm", None, None, True),  # no version: every release since March 2025 caches
        ("vllm", None, "no-enable-prefix-caching", False),
        ("sglang", "0.4.6", None, True),  # its radix cache
        ("sglang", "0.4.6", "--disable-radix-cache", False),
        ("trt-llm", "0.19", None, False),
        (None, None, None, False),
    ],
)
def test_which_engines_cache_prefixes(engine, version, variant, caches):
    assert caches_prefixes(engine, version, variant) is caches


def test_a_sweep_of_the_same_prompts_repeats_them_after_its_first_level():
    points = sweep()
    assert list(repeated_prompts(points).fillna("-")) == ["-", "r0", "r1", "r2"]
    # the order is the runs' dates, not the rows' order or the rates
    shuffled = points.iloc[[2, 0, 3, 1]]
    assert repeated_prompts(shuffled).to_dict() == {2: "r1", 0: None, 3: "r2", 1: "r0"}


@pytest.mark.parametrize(
    ("what", "changes", "then"),
    [
        # the third level's prompts differ: neither it nor the fourth repeat what came before
        ("fixed-length prompts: equal means prove nothing", {"input_len": 512}, None),
        ("more requests", {"requests_sent": 400}, None),
        ("other prompts", {"input_tokens_mean": 205.9}, None),
        # the third level ran on another server: the fourth follows the second on its own
        ("another host", {"host": "other"}, "r1"),
        ("another engine version", {"engine_version": "0.9.0"}, "r1"),
    ],
)
def test_other_prompts_or_another_server_are_no_repeat(what, changes, then):
    points = sweep()
    points.loc[2, list(changes)] = list(changes.values())
    found = repeated_prompts(points)
    assert found[2] is None, what
    assert found[3] == then, what


def test_a_server_idle_longer_than_the_runs_may_have_restarted():
    points = sweep()
    points.loc[3, "created_at"] = points.loc[2, "created_at"] + pd.Timedelta(seconds=30 + 301)
    assert pd.isna(repeated_prompts(points)[3])
    points.loc[3, "created_at"] = points.loc[2, "created_at"] + pd.Timedelta(seconds=30 + 299)
    assert repeated_prompts(points)[3] == "r2"
    undated = sweep(created_at=pd.NaT)
    assert repeated_prompts(undated).isna().all()  # runs of unknown dates: nothing inferred
    # the levels of one run (a sweep in one file) ran in their order on its server
    one_run = undated.assign(run_id="r", level_index=[0, 1, 2, 3])
    assert list(repeated_prompts(one_run).fillna("-")) == ["-", "r", "r", "r"]


def test_cached_only_where_the_engine_caches_and_its_cache_held_the_run():
    """A run sent again: every request of it found its prompt (share 1)."""
    archs, specs = bundled_architectures(), bundled_specs()
    assert list(cached_shares(sweep(), archs, specs)) == [False, True, True, True]
    # one RTX 4090's cache (about 40,000 tokens) cannot hold 200 x 417 tokens: found nothing
    assert not cached_shares(sweep(gpu_model="rtx-4090"), archs, specs).any()
    assert not cached_shares(sweep(engine_version="0.6.3"), archs, specs).any()
    assert not cached_shares(sweep(model="acme/unknown-7b"), archs, specs).any()


def test_a_run_cycling_through_few_prompts_finds_all_but_their_first_sending():
    # inference-perf's shared-prefix data: 10 groups of 10 prompts through 4,800 requests
    row = level("r", 0, 8.0, requests_sent=4800, run_metadata='{"distinct_prompts": "100"}')
    archs, specs = bundled_architectures(), bundled_specs()
    (share,) = cached_shares(pd.DataFrame([row]), archs, specs)
    assert share == pytest.approx(4700 / 4800)
    assert cached_from(4800, share) == 100  # the first sendings prefill, the rest do not
    # a run that sends each prompt once, an engine that does not cache, a cache too small
    # to hold the prompts (one RTX 4090's 40,000 tokens hold 50 x 417, not 1,000 x 417)
    for changes in (
        {"requests_sent": 100},
        {"engine_version": "0.6.3"},
        {"gpu_model": "rtx-4090", "run_metadata": '{"distinct_prompts": "1000"}'},
        {"run_metadata": '{"stage": "0"}'},
        {"run_metadata": "not json"},
    ):
        (none,) = cached_shares(pd.DataFrame([row | changes]), archs, specs)
        assert none == 0.0, changes
    fewer = row | {"gpu_model": "rtx-4090", "run_metadata": '{"distinct_prompts": "50"}'}
    (small,) = cached_shares(pd.DataFrame([fewer]), archs, specs)
    assert small == pytest.approx(4750 / 4800)
    assert cached_from(200, 1.0) == 0 and cached_from(200, 0.0) is None


def test_the_bundled_io_net_levels_after_each_configurations_first_were_cached(
    sample_warehouse_path,
):
    with Warehouse.open(sample_warehouse_path, read_only=True) as wh:
        points = benchmark_points(wh)
    cached = cached_shares(points, bundled_architectures(), bundled_specs())
    assert 60 <= int(cached.sum()) <= 80  # 72 of 130 when written
    first = points.groupby(["model", "gpu_model", "gpu_count"])["created_at"].transform("min")
    assert not cached[points["created_at"] == first].any()  # a configuration's first run
    configurations = points.assign(cached=cached).groupby(["model", "gpu_model", "gpu_count"])
    held = configurations["cached"].sum()
    assert held[(LLAMA_8B, "h100-pcie", 1)] == 4  # 16, 8, 4 and 1 req/s after 32
    assert held[(LLAMA_8B, "rtx-4090", 1)] == 0
    assert held[("Qwen/QwQ-32B-Preview", "h100-pcie", 1)] == 0  # its run outgrows its cache


def test_the_simulation_adds_a_requests_own_time_to_its_first_token_only():
    shape = Shape.of(bundled_architectures()[LLAMA_8B.lower()])
    server = Server(shape, bundled_specs()["h100-pcie"], 1)
    kv = kv_cache_tokens(shape, bundled_specs()["h100-pcie"], 1)
    eff = Efficiencies(
        overhead_s=0.004, inv_bandwidth_eff=1.2, inv_compute_eff=1.5, allreduce_s=0.0
    )
    slow = replace(eff, request_s=0.005)
    arrivals = np.arange(20) * 1.0  # one at a time: no queue
    prompt, output = np.full(20, 200), np.full(20, 50)
    base = serve(server, eff, arrivals, prompt, output, kv_tokens=kv)
    later = serve(server, slow, arrivals, prompt, output, kv_tokens=kv)
    assert later.first - base.first == pytest.approx(np.full(20, 0.005))
    assert later.finish - later.first == pytest.approx(base.finish - base.first)
    # a level replayed as it ran: from `cached_from` on, one prompt token to prefill each
    args = (server, eff, Traffic(800, 50))
    run = simulate(*args, rate_rps=0.5, requests=40, kv_tokens=kv, seed=3, cached_from=20)
    cold = simulate(*args, rate_rps=0.5, requests=40, kv_tokens=kv, seed=3)
    assert run.ttft_ms[:20] == pytest.approx(cold.ttft_ms[:20])
    assert (run.ttft_ms[20:] < cold.ttft_ms[20:]).all()


def synthetic_sweeps(truth: Efficiencies) -> pd.DataFrame:
    """Three models on one H100 PCIe, each a sweep down 6, 4, 2, 1 req/s of the same 300
    prompts a minute apart: the first level prefills them, the rest find them cached (they run
    one-token prompts), every level reporting the prompts' 200 tokens as a benchmark does."""
    gpu, rows = bundled_specs()["h100-pcie"], []
    models = (LLAMA_8B, "nvidia/AceMath-7B-Instruct", "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B")
    for m, model in enumerate(models):
        shape = Shape.of(bundled_architectures()[model.lower()])
        server, kv = Server(shape, gpu, 1), kv_cache_tokens(shape, gpu, 1)
        for k, rate in enumerate((6.0, 4.0, 2.0, 1.0)):
            prompt = 200 if k == 0 else 1
            done = simulate(server, truth, Traffic(prompt, 200), rate_rps=rate, requests=300,
                            kv_tokens=kv, seed=k + 1)  # fmt: skip
            rows.append(level(
                f"{m}-{k}", 10 * m + k, rate, model=model, requests_sent=300,
                input_tokens_mean=200.0, output_tokens_mean=200.0, duration_s=300 / rate,
                created_at=pd.Timestamp("2025-06-10") + pd.Timedelta(minutes=60 * m + 6 * k),
                request_throughput_rps=done.throughput_rps,
                tpot_mean_ms=float(done.tpot_ms.mean()), tpot_p50_ms=done.p("tpot", 50),
                ttft_p50_ms=done.p("ttft", 50),
            ))  # fmt: skip
    return pd.DataFrame(rows)


def test_the_calibration_reads_cached_levels_as_one_token_prefills_and_finds_the_requests_time():
    truth = Efficiencies(
        overhead_s=0.006,
        inv_bandwidth_eff=1.25,
        inv_compute_eff=2.0,
        allreduce_s=0.0,
        request_s=0.005,
    )
    levels = synthetic_sweeps(truth)
    archs, specs = bundled_architectures(), bundled_specs()
    fit = fit_gpu(levels, archs, specs, "h100-pcie", "vllm")
    assert fit is not None and "9 levels with prompts cached" in fit.efficiencies.basis
    assert fit.efficiencies.request_s == pytest.approx(0.005, rel=0.3)
    assert fit.efficiencies.bandwidth_efficiency == pytest.approx(0.8, rel=0.1)
    # The same levels without their dates: nothing proves the prompts were cached, every level
    # reads as a full prefill, and the lowest rate's first token (a step and the request's
    # time, no prefill) leaves no room for the request's time
    blind = fit_gpu(levels.assign(created_at=pd.NaT), archs, specs, "h100-pcie", "vllm")
    assert blind is not None and "cached" not in blind.efficiencies.basis
    assert blind.efficiencies.request_s < 0.5 * fit.efficiencies.request_s


def test_a_measured_capacity_says_its_levels_found_their_prompts_cached(sample_warehouse_path):
    from fleetplan.services.capacity import CapacityQuery, capacity_report

    with Warehouse.open(sample_warehouse_path, read_only=True) as wh:
        points = benchmark_points(wh)
    h100 = capacity_report(points, CapacityQuery(model=LLAMA_8B, gpu="h100-pcie", gpu_count=1))
    assert h100.prompts_cached is not None
    assert h100.prompts_cached.startswith("4 of its 5 levels sent the prompts of the run just")
    assert "a team's own prompts take longer to their first token" in h100.prompts_cached
    rtx = capacity_report(points, CapacityQuery(model=LLAMA_8B, gpu="rtx-4090", gpu_count=1))
    assert rtx.prompts_cached is None  # its cache cannot hold a run


def test_the_benchmarks_pages_overlay_simulates_each_level_as_it_ran(sample_warehouse_path):
    from fleetplan.services.capacity import LatencyTargets
    from fleetplan.services.estimate_overlay import model_overlays
    from fleetplan.services.load_tables import benchmark_curves

    with Warehouse.open(sample_warehouse_path, read_only=True) as wh:
        points = benchmark_points(wh)
    subset = points[points["model"] == LLAMA_8B]
    curves = benchmark_curves(subset, targets=LatencyTargets(ttft_p99_ms=500))
    overlays = model_overlays(subset, points, curves)
    h100 = overlays["1x h100-pcie"]
    assert "4 of its levels simulated with their prompts in the prefix cache" in h100.words
    assert "prefix cache" not in overlays["1x rtx-4090"].words
    # like with like: at 1 req/s (cached) the simulated P99 TTFT is the measured one's, not a
    # full prefill's more
    low = subset[(subset["gpu_model"] == "h100-pcie") & (subset["offered_rate_rps"] == 1.0)]
    measured = float(low["ttft_p99_ms"].iloc[0])
    simulated = dict(h100.ttft)[1.0]
    assert simulated == pytest.approx(measured, rel=0.35)
