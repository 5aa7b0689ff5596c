"""SGLang's `bench_serving` JSONL (one run per line, appended), in its 2024 and its current key
sets, written here the way sglang 0.5.23's `sglang/benchmark/serving.py` writes them (`json.dumps`
of its `result` dict: Python's inf as the bare token `Infinity`)."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.inputs.shared_data import tool_outputs_dir
from benchmarks.inputs.tool_reports import sglang_jsonl, sglang_line
from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from tests.support.paths import ROOT


def parsed(data: bytes, **options):
    return parse(
        FileInput.from_bytes("sglang_1203_200_512_128.jsonl", data), ImportOptions(**options)
    )


def test_a_rate_sweep_is_one_run_of_levels_with_the_servers_model_and_gpus():
    data = sglang_jsonl(sglang_line(2.0), sglang_line(4.0), sglang_line(8.0))
    result = parsed(data, gpu="h100-sxm")
    assert result.importer == "sglang-bench-serving"
    (run,) = result.runs
    assert (run.tool, run.engine, run.engine_version) == (
        "sglang bench_serving",
        "sglang",
        "0.5.23",
    )
    assert (run.model, run.gpu_model, run.gpu_count, run.tensor_parallel_size) == (
        "Qwen/Qwen3-8B",
        "h100-sxm",
        2,
        2,
    )
    assert (run.dataset, run.input_len, run.output_len) == ("synthetic", 512, 128)
    assert [p.offered_rate_rps for p in run.points] == [2.0, 4.0, 8.0]
    point = run.points[0]
    line = sglang_line(2.0)
    assert point.e2el_p99_ms == pytest.approx(line["p99_e2e_latency_ms"])
    assert point.ttft_p50_ms == pytest.approx(line["median_ttft_ms"])
    assert point.tpot_p90_ms == pytest.approx(line["p90_tpot_ms"])
    assert point.itl_p95_ms == pytest.approx(line["p95_itl_ms"])
    assert point.total_throughput_tps == pytest.approx(line["total_throughput"])
    assert point.output_tokens_mean == pytest.approx(128)
    assert any("not stored" in w and "accept_length" in w for w in result.warnings)


def test_an_unlimited_rate_with_max_concurrency_is_a_closed_loop_written_as_infinity():
    data = sglang_jsonl(
        sglang_line(math.inf, concurrency=16), sglang_line(math.inf, concurrency=64)
    )
    assert b"Infinity" in data  # as Python's json.dumps writes inf
    (run,) = parsed(data, gpu="h100-sxm").runs
    # a closed loop at its concurrency, not a burst: no rate of its own
    assert [(p.offered_rate_rps, p.max_concurrency) for p in run.points] == [(None, 16), (None, 64)]


def test_the_2024_key_set_imports_and_plans_with_the_counts():
    old = {
        key: sglang_line(4.0)[key]
        for key in (
            "backend",
            "dataset_name",
            "request_rate",
            "max_concurrency",
            "total_input_tokens",
            "total_output_tokens",
            "total_output_tokens_retokenized",
            "mean_e2e_latency_ms",
            "median_e2e_latency_ms",
            "median_ttft_ms",
            "median_itl_ms",
            "output_throughput",
            "sharegpt_output_len",
            "random_input_len",
            "random_output_len",
            "duration",
            "completed",
        )
    } | {"backend": "sglang", "random_range_ratio": 0.0}
    (run,) = parsed(
        sglang_jsonl(old), gpu="h200", gpu_count=8, model="meta-llama/Llama-3.3-70B"
    ).runs
    (point,) = run.points
    assert (run.model, run.gpu_count, run.dataset, run.input_len) == (
        "meta-llama/Llama-3.3-70B",
        8,
        "random",
        None,
    )
    assert point.request_throughput_rps == pytest.approx(old["completed"] / old["duration"])
    assert point.ttft_p50_ms == pytest.approx(old["median_ttft_ms"]) and point.ttft_p99_ms is None


def test_lines_of_other_random_lengths_are_other_runs():
    data = sglang_jsonl(
        sglang_line(4.0), sglang_line(4.0, random_input_len=2048, total_input_tokens=2048 * 200)
    )
    runs = parsed(data, gpu="h100-sxm").runs
    assert [(r.input_len, r.output_len) for r in runs] == [(512, 128), (2048, 128)]


def test_a_trace_replay_is_refused_naming_it():
    with pytest.raises(InputError, match="a trace replay") as caught:
        parsed(sglang_jsonl(sglang_line(4.0, request_rate="trace")), gpu="h100-sxm")
    assert caught.value.field == "request_rate"


def test_no_gpu_is_asked_for():
    with pytest.raises(InputError, match="--gpu"):
        parsed(sglang_jsonl(sglang_line(4.0)))


SHARED = tool_outputs_dir() / "sglang-h200-benchmarks" if tool_outputs_dir() else None


@pytest.mark.skipif(
    SHARED is None or not SHARED.is_dir(),
    reason="datacrunch-research/h200-benchmarks' sglang/outputs are not in ../shared",
)
def test_the_public_h200_outputs_import():
    for path in sorted(SHARED.glob("*.jsonl")):
        result = parse(
            FileInput.from_bytes(path.name, path.read_bytes()),
            ImportOptions(gpu="h200", gpu_count=8, model="from-the-readme"),
        )
        assert result.importer == "sglang-bench-serving" and result.points >= 1


# -- the files sglang 0.5.23's own client wrote here (tests/fixtures/formats/README.md) ----------

REAL = ROOT / "tests" / "fixtures" / "formats" / "sglang-0.5.23"


def real(name: str, **options):
    path = REAL / name
    return parse(FileInput.from_bytes(path.name, path.read_bytes()), ImportOptions(**options))


def test_the_real_clients_rate_and_concurrency_runs_import_as_one_run():
    result = real("sglang.jsonl", gpu="cpu", gpu_count=1, model="tiny-llama")
    (run,) = result.runs
    assert (run.tool, run.engine, run.model) == ("sglang bench_serving", "vllm", "tiny-llama")
    assert run.engine_version is None  # a vLLM server behind --backend vllm: unknown here
    assert (run.dataset, run.input_len, run.output_len) == ("synthetic", 32, 16)
    loads = [(p.offered_rate_rps, p.max_concurrency) for p in run.points]
    assert loads == [(2.0, None), (4.0, None), (None, 4)]  # the closed loop at its concurrency
    first = run.points[0]
    assert first.completed == 30 and first.duration_s == pytest.approx(11.5818, rel=1e-4)
    assert first.ttft_p99_ms == pytest.approx(34.4660, rel=1e-4)  # as its console printed
    assert first.e2el_p50_ms == pytest.approx(48.9470, rel=1e-4)


def test_what_the_real_file_does_not_say_is_asked_for_naming_the_flag():
    with pytest.raises(InputError) as error:
        real("sglang.jsonl", gpu="cpu", gpu_count=1)
    assert "--model" in str(error.value)
    with pytest.raises(InputError) as error:
        real("sglang.jsonl", gpu="cpu", model="tiny-llama")
    said = str(error.value)
    assert "--gpu-count" in said and "server_info" in said and "vllm bench serve" not in said


def test_the_real_per_request_details_are_what_is_stored():
    result = real("sglang-details.jsonl", gpu="cpu", gpu_count=1, model="tiny-llama")
    ((point,),) = [run.points for run in result.runs]
    line = json.loads((REAL / "sglang-details.jsonl").read_text())
    assert point.completed == len(line["ttfts"]) == 40
    # the median TTFT from the requests' own times, as the file's own figure has it
    assert point.ttft_p50_ms == pytest.approx(line["median_ttft_ms"], rel=1e-6)
    # its TPOT counts the time after the last token (the end of the response) too: fleetplan's,
    # from the tokens' own times, is stored, and the difference said
    assert point.tpot_mean_ms < line["mean_tpot_ms"]
    assert any("mean_tpot_ms" in w and "per-request" in w for w in result.warnings)
    assert "generated_texts" in result.warnings[0]  # listed as not stored
