"""llm-d-benchmark's benchmark report (YAML), versions 0.1 and 0.2/0.2.1. The 0.2.1 report here
is real: inference-perf 0.7.0 wrote it beside its own stage report
(tests/fixtures/real_clients/inference-perf-rate/inference-perf.partial.stage_N.yaml); it states
no load of its own, so the scenario block llm-d's harness adds (scenario.load, scenario.stack,
as llmdbenchmark/analysis/benchmark_report/schema_v0_2.py defines them) is added to it here."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from benchmarks.inputs.tool_reports import LLMD_SCENARIO
from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from tests.support.paths import ROOT

REAL = ROOT / "tests" / "fixtures" / "real_clients" / "inference-perf-rate"
PARTIAL = "inference-perf.partial.stage_1.yaml"
LIFECYCLE = "stage_1_lifecycle_metrics.json"


def real_report() -> dict:
    return yaml.safe_load((REAL / PARTIAL).read_text())


def parsed(document: dict, name: str = "br.yaml", companions=None, **options):
    data = yaml.safe_dump(document, sort_keys=False).encode()
    return parse(
        FileInput.from_bytes(name, data),
        ImportOptions(companions=companions or {}, **options),
    )


def test_inference_perfs_own_report_beside_its_stage_is_skipped():
    companions = {LIFECYCLE: (REAL / LIFECYCLE).read_bytes()}
    with pytest.raises(InputError, match=r"the same stage as the stage_1_lifecycle_metrics\.json"):
        parsed(real_report(), PARTIAL, companions, gpu="h100-sxm")


def test_a_report_that_does_not_say_its_load_is_refused_saying_what_to_import():
    with pytest.raises(InputError, match="does not say its load") as caught:
        parsed(real_report(), gpu="h100-sxm", gpu_count=1, model="m")
    assert "stage_N_lifecycle_metrics.json" in str(caught.value)


def test_a_v0_2_report_is_one_level_with_its_server_from_the_stack():
    result = parsed(real_report() | {"scenario": LLMD_SCENARIO})
    assert result.importer == "llm-d-benchmark-report"
    (run,) = result.runs
    assert (run.model, run.gpu_model, run.gpu_label, run.gpu_count) == (
        "meta-llama/Llama-3.1-8B-Instruct",
        "h100-sxm",
        "nvidia-h100-80gb",
        2,  # one GPU a replica, two replicas
    )
    assert (run.engine, run.engine_version, run.variant) == (
        "vllm",
        "0.11.0",
        "--max-num-seqs=128 --enable-prefix-caching",
    )
    assert (run.dataset, run.input_len, run.output_len) == ("synthetic", 128, 16)
    (point,) = run.points
    stage = json.loads((REAL / LIFECYCLE).read_text())
    latency = stage["successes"]["latency"]
    # the same figures as inference-perf's own stage report, seconds to ms
    assert point.ttft_p99_ms == pytest.approx(latency["time_to_first_token"]["p99"] * 1000)
    assert point.tpot_p50_ms == pytest.approx(latency["time_per_output_token"]["median"] * 1000)
    assert point.e2el_mean_ms == pytest.approx(latency["request_latency"]["mean"] * 1000)
    assert point.itl_p90_ms == pytest.approx(latency["inter_token_latency"]["p90"] * 1000)
    assert point.completed == stage["successes"]["count"] and point.failed == 0
    assert (point.configured_rate_rps, point.offered_rate_rps) == (4.0, 4.0)
    # the duration is run.time.duration ("PT...S"), the plan's request throughput the counts'
    assert point.request_throughput_rps == pytest.approx(point.completed / point.duration_s)


def test_a_v0_2_report_with_milliseconds_and_a_concurrency_cap():
    document = real_report() | {"scenario": LLMD_SCENARIO}
    ttft = document["results"]["request_performance"]["aggregate"]["latency"]["time_to_first_token"]
    seconds_p99 = ttft["p99"]
    ttft |= {k: v * 1000 for k, v in ttft.items() if isinstance(v, float)} | {"units": "ms"}
    load = document["scenario"]["load"]["standardized"]
    load |= {"concurrency": 16, "rate_qps": float("inf")}
    (point,) = parsed(document).runs[0].points
    assert point.ttft_p99_ms == pytest.approx(seconds_p99 * 1000)
    assert (point.max_concurrency, point.offered_rate_rps) == (16, None)


def test_a_latency_in_units_fleetplan_cannot_read_is_refused_naming_them():
    document = real_report() | {"scenario": LLMD_SCENARIO}
    latency = document["results"]["request_performance"]["aggregate"]["latency"]
    latency["request_latency"]["units"] = "fortnights"
    with pytest.raises(InputError, match="fortnights"):
        parsed(document)


def test_a_v0_1_report_reads_its_load_from_the_harness_configuration():
    document = {
        "version": "0.1",
        "scenario": {
            "model": {"name": "unknown"},
            "load": {
                "name": "inference-perf",
                "metadata": {"stage": 0},
                "args": {
                    "server": {"type": "vllm", "model_name": "openai/gpt-oss-120b"},
                    "data": {
                        "type": "random",
                        "input_distribution": {"mean": 5000.0, "std_dev": 0.0},
                        "output_distribution": {"mean": 250.0, "std_dev": 0.0},
                    },
                    "load": {"type": "constant", "stages": [{"rate": 45.0, "duration": 120}]},
                },
            },
        },
        "metrics": {
            "time": {"duration": 120.0},
            "requests": {
                "total": 5400,
                "failures": 0,
                "input_length": {"units": "count", "mean": 5151.4},
                "output_length": {"units": "count", "mean": 281.0},
            },
            "latency": {
                "time_to_first_token": {"units": "s", "mean": 1.44, "p99": 3.1},
                "request_latency": {"units": "s", "mean": 3.54, "p99": 7.2},
                "time_per_output_token": {"units": "s/token", "mean": 0.0083},
            },
            "throughput": {
                "requests_per_sec": 45.0,
                "output_tokens_per_sec": 12645.0,
                "total_tokens_per_sec": 244458.0,
            },
        },
    }
    (run,) = parsed(document, gpu="h200", gpu_count=16).runs
    assert (run.model, run.engine, run.dataset, run.input_len, run.output_len) == (
        "openai/gpt-oss-120b",
        "vllm",
        "synthetic",
        5000,
        250,
    )
    (point,) = run.points
    assert point.offered_rate_rps == 45.0 and point.duration_s == 120.0
    assert point.ttft_p99_ms == pytest.approx(3100.0) and point.tpot_mean_ms == pytest.approx(8.3)


STATS = ("mean", "p50", "p90", "p95", "p99")


def _harness(document: dict, tool: str, version) -> dict:
    load = document["scenario"]["load"]["standardized"]
    load |= {"tool": tool, "tool_version": version}
    return document


@pytest.mark.parametrize(
    ("version", "kept"),
    [
        ("0.7.0", True),
        ("0.3.0", False),  # llm-d-benchmark's own v0.2.1 example says inference-perf 0.3.0
        ("v0.4.1", False),
        ("quay.io/inference-perf/inference-perf:v0.2.0", False),
        ("0.5.0", True),
        ("latest", True),  # no release to go by: nothing proves it per message
    ],
)
def test_a_report_of_inference_perf_before_0_5_keeps_no_tpot_or_itl(version, kept):
    """Converted from inference-perf before v0.5.0 (issue 32), a report's TPOT and ITL are per
    streamed message (`inference_perf_tokens`): not stored, and the level says why, by the
    version the report names; TTFT and E2EL are kept either way."""
    scenario = copy.deepcopy(LLMD_SCENARIO)
    result = parsed(_harness(real_report() | {"scenario": scenario}, "inference-perf", version))
    (point,) = result.runs[0].points
    reference = parsed(real_report() | {"scenario": LLMD_SCENARIO}).runs[0].points[0]
    assert reference.tpot_p99_ms is not None and reference.itl_p90_ms is not None
    assert (point.ttft_p99_ms, point.e2el_p50_ms) == (reference.ttft_p99_ms, reference.e2el_p50_ms)
    if kept:
        kept_stats = (reference.tpot_p99_ms, reference.itl_p90_ms)
        assert (point.tpot_p99_ms, point.itl_p90_ms) == kept_stats
        assert not any("TPOT and ITL not stored" in n for n in point.notes)
        assert not any("TPOT and ITL not stored" in w for w in result.warnings)
        return
    stats = [getattr(point, f"{m}_{s}_ms") for m in ("tpot", "itl") for s in STATS]
    assert stats == [None] * len(stats)
    (note,) = [n for n in point.notes if "TPOT and ITL not stored" in n]
    assert f"inference-perf {version}, a release before v0.5.0" in note
    assert note in result.warnings


def test_another_tools_report_keeps_its_tpot_whatever_version_it_says():
    scenario = copy.deepcopy(LLMD_SCENARIO)
    (point,) = (
        parsed(_harness(real_report() | {"scenario": scenario}, "guidellm", "0.3.1")).runs[0].points
    )
    assert point.tpot_p99_ms is not None
    assert not any("TPOT and ITL not stored" in n for n in point.notes)


def test_a_tpot_its_own_figures_prove_per_chunk_is_not_stored_whatever_the_harness_says():
    """The figures' proof (`inference_perf_tokens.per_chunk_proof_of`) on a report's own
    statistics: a TPOT a hundredth of the stage's leaves its requests' time from first token to
    end (E2EL median - TTFT P90, 40 ms here) over 1.5x what TPOT P90 x (output P90 - 1) allows."""
    document = real_report() | {"scenario": LLMD_SCENARIO}
    tpot = document["results"]["request_performance"]["aggregate"]["latency"][
        "time_per_output_token"
    ]
    tpot |= {k: v / 100 for k, v in tpot.items() if isinstance(v, float)}
    result = parsed(document)
    (point,) = result.runs[0].points
    assert point.tpot_p90_ms is None and point.itl_p90_ms is None
    assert point.ttft_p90_ms is not None and point.e2el_p50_ms is not None
    (note,) = [n for n in point.notes if "TPOT and ITL not stored" in n]
    assert "cannot be per output token" in note and "output P90 27.1" in note
    assert note in result.warnings


def v1_report(load: dict, host: dict | None = None) -> dict:
    """A 0.1 report of one level as llm-d-benchmark's converters write it
    (`native_to_br0_1.py`): `scenario.load` is what its harness was told."""
    return {
        "version": "0.1",
        "scenario": {"model": {"name": "Qwen/Qwen3-0.6B"}, "load": load, **(host or {})},
        "metrics": {
            "time": {"duration": 100.0},
            "requests": {"total": 400, "failures": 0},
            "latency": {"time_to_first_token": {"units": "ms", "mean": 40.0, "p99": 90.0}},
            "throughput": {"requests_per_sec": 4.0},
        },
    }


AIPERF_CONFIG = json.loads(
    (
        ROOT / "tests/fixtures/real_clients/aiperf-rate/rate_8.0/profile_export_aiperf.json"
    ).read_text()
)["input_config"]


@pytest.mark.parametrize(
    ("load", "expected"),
    [
        (  # vLLM benchmark_serving (import_vllm_benchmark)
            {
                "name": "vllm-benchmark",
                "args": {
                    "num_prompts": 400,
                    "request_rate": 4.0,
                    "burstiness": 1.0,
                    "max_concurrency": None,
                },
            },
            {"offered_rate_rps": 4.0, "burstiness": 1.0, "max_concurrency": None},
        ),
        (  # all at once, at most 16 in flight: a closed loop
            {"name": "inferencemax", "args": {"request_rate": float("inf"), "max_concurrency": 16}},
            {"offered_rate_rps": None, "max_concurrency": 16},
        ),
        (  # a rate with a cap
            {"name": "vllm-benchmark", "args": {"request_rate": "8", "max_concurrency": 64}},
            {"offered_rate_rps": 8.0, "max_concurrency": 64},
        ),
        (  # GuideLLM's report args (schema 1), its second benchmark
            {
                "name": "guidellm",
                "metadata": {"stage": 1},
                "args": {"profile": "poisson", "rate": [2.0, 4.0]},
            },
            {"offered_rate_rps": 4.0, "burstiness": 1.0},
        ),
        (  # GuideLLM's config (schema 2)
            {
                "name": "guidellm",
                "metadata": {"stage": 1},
                "args": {"spec": {"profile": {"kind": "concurrent", "streams": [1, 4]}}},
            },
            {"offered_rate_rps": None, "max_concurrency": 4},
        ),
        (
            {"name": "guidellm", "args": {"profile": "synchronous"}},
            {"offered_rate_rps": None, "max_concurrency": 1},
        ),
        (  # AIPerf's input_config (import_aiperf), the real 0.13.0 run at 8 req/s
            {"name": "aiperf", "args": AIPERF_CONFIG},
            {"offered_rate_rps": 8.0, "burstiness": 1.0},
        ),
        (  # llm-d-benchmark's own 0.1 example (br_v0_1_example.yaml)
            {
                "name": "inference-perf",
                "type": "long-input",
                "args": {"qps_values": 1.34, "num_users": 15},
            },
            {"offered_rate_rps": 1.34},
        ),
    ],
)
def test_a_v0_1_report_reads_the_load_each_harness_was_given(load, expected):
    """llm-d-benchmark's 0.1 converters put each harness's own settings under
    scenario.load.args: every one that says a load is one level at that load (issue 32)."""
    (point,) = parsed(v1_report(load), gpu="h100-sxm", gpu_count=1).runs[0].points
    for field, value in expected.items():
        assert getattr(point, field) == value, field
    assert point.completed == 400 and point.ttft_p99_ms == pytest.approx(90.0)


@pytest.mark.parametrize(
    "load",
    [
        {"name": "guidellm", "args": {"profile": "sweep", "rate": 10}},  # chosen as it ran
        {"name": "vllm-benchmark", "args": {"num_prompts": 400}},
        {"name": "nop", "args": {}},
    ],
)
def test_a_v0_1_report_whose_settings_say_no_load_is_refused(load):
    with pytest.raises(InputError, match="does not say its load"):
        parsed(v1_report(load), gpu="h100-sxm", gpu_count=1)


def test_a_v0_1_report_counts_the_gpus_of_every_host():
    """Disaggregated: one prefill host of 1 GPU and two decode hosts of 8 (the 0.1 example's
    scenario.host): 17 GPUs serve the level; one label for all, else --gpu names it."""
    h100 = {"model": "NVIDIA-H100-80GB-HBM3", "count": 8}
    hosts = {"host": {"type": ["prefill", "decode", "decode"],
                      "accelerator": [h100 | {"count": 1}, dict(h100), dict(h100)]}}  # fmt: skip
    load = {"name": "vllm-benchmark", "args": {"request_rate": 4.0}}
    (run,) = parsed(v1_report(load, hosts)).runs
    assert (run.gpu_model, run.gpu_count) == ("h100-sxm", 17)
    mixed = {"host": {"accelerator": [dict(h100), {"model": "NVIDIA-H200", "count": 8}]}}
    with pytest.raises(InputError, match="--gpu"):
        parsed(v1_report(load, mixed))


def test_an_inference_perf_lifecycle_report_in_yaml_reads_as_its_json():
    """llm-d-benchmark keeps its converter's golden inference-perf lifecycle report as YAML
    (tests/fixtures/inference_perf_lifecycle.yaml there): the same report, the same level."""
    stage = json.loads((REAL / LIFECYCLE).read_text())

    def imported(name: str, data: bytes):
        result = parse(
            FileInput.from_bytes(name, data),
            ImportOptions(gpu="h100-sxm", gpu_count=1, model="m"),
        )
        assert result.importer == "inference-perf"
        return result.runs[0].points[0]

    as_json = imported(LIFECYCLE, json.dumps(stage).encode())
    as_yaml = imported("inference_perf_lifecycle.yaml", yaml.safe_dump(stage).encode())
    assert as_yaml.ttft_p99_ms == as_json.ttft_p99_ms and as_yaml.ttft_p99_ms is not None
    assert (as_yaml.offered_rate_rps, as_yaml.completed) == (
        as_json.offered_rate_rps,
        as_json.completed,
    )
