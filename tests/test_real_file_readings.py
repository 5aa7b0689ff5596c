"""Readings found on real files of other repositories (2026-12-07 hunt, files not committed:
their sources are in the session note), each rebuilt here on a fixture of our own:

- a GenAI-Perf run with `streaming: false` writes the whole request's time as its TTFT;
- SGLang's `lora_bench` writes a median ITL of 0 ms and no other ITL statistic;
- SGLang files name the model by the path it was loaded from (`/workspace/llama-3.1-70b`), and a
  router's GenAI-Perf run names it `auto`: neither is a name `--model` contradicts;
- `--max-concurrency 100 --request-rate inf` with 100 prompts is a burst, not a closed loop.
"""

from __future__ import annotations

import json
import math

import pytest

from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from tests.support.paths import ROOT

FORMATS = ROOT / "tests" / "fixtures" / "formats"
VLLM = FORMATS / "vllm-bench-serve-0.32.0" / "vllm-bench-serve.json"
GENAI = (
    FORMATS
    / "genai-perf-0.0.16"
    / "tiny-llama-openai-completions-request_rate4.0"
    / "profile_export_genai_perf.json"
)


def _vllm(**changes) -> dict:
    first = json.loads(VLLM.read_text().splitlines()[0])
    return first | changes


def _parse(document: dict, **options):
    data = json.dumps(document).encode()
    return parse(FileInput.from_bytes("r.json", data), ImportOptions(**options))


def test_a_run_that_did_not_stream_keeps_no_token_timings():
    export = json.loads(GENAI.read_text())
    export["time_to_first_token"] = dict(export["request_latency"])
    parsed = _parse(export, gpu="h100-sxm", gpu_count=1)
    point = parsed.runs[0].points[0]
    assert point.ttft_p99_ms is None and point.ttft_mean_ms is None
    assert point.tpot_p50_ms is None and point.itl_p50_ms is None
    assert point.e2el_p99_ms == pytest.approx(export["request_latency"]["p99"])
    assert any("did not stream" in w for w in parsed.warnings)
    assert any("did not stream" in n for n in point.notes)


def test_a_streamed_run_keeps_its_ttft():
    parsed = _parse(json.loads(GENAI.read_text()), gpu="h100-sxm", gpu_count=1)
    point = parsed.runs[0].points[0]
    assert point.ttft_p99_ms is not None and point.tpot_p50_ms is not None
    assert not any("did not stream" in w for w in parsed.warnings)


def test_an_itl_of_zero_at_every_statistic_is_unknown_a_zero_median_beside_more_is_kept():
    arrays = ("input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times")
    bare = {k: v for k, v in _vllm().items() if k not in arrays}
    only_zero = bare | {"median_itl_ms": 0.0, "mean_itl_ms": None, "p99_itl_ms": None}
    only_zero = {k: v for k, v in only_zero.items() if v is not None or "itl" not in k}
    parsed = _parse(only_zero)
    point = parsed.runs[0].points[0]
    assert point.itl_p50_ms is None and point.tpot_p50_ms is not None
    assert any("gaps between streamed chunks are 0 ms" in w for w in parsed.warnings)
    kept = _parse(bare | {"median_itl_ms": 0.0}).runs[0].points[0]
    assert kept.itl_p50_ms == 0.0 and kept.itl_p99_ms == pytest.approx(bare["p99_itl_ms"])


@pytest.mark.parametrize(
    ("label", "named"),
    [
        ("/workspace/llama-3.1-70b", "llama-3.1-70b"),
        ("/models/Qwen3-32B/", "Qwen3-32B"),
        (
            "/root/.cache/huggingface/hub/models--meta-llama--Llama-3.1-8B/snapshots/0e9e39f",
            "meta-llama/Llama-3.1-8B",
        ),
    ],
)
def test_a_model_loaded_from_a_path_is_named_by_the_path_or_by_the_user(label, named):
    assert _parse(_vllm(model_id=label)).runs[0].model == named
    given = _parse(_vllm(model_id=label), model="meta-llama/Llama-3.1-70B").runs[0]
    assert given.model == "meta-llama/Llama-3.1-70B"


def test_a_routers_alias_names_no_model_and_a_name_still_contradicts():
    with pytest.raises(InputError, match="does not name the model"):
        _parse(_vllm(model_id="auto"))
    assert _parse(_vllm(model_id="auto"), model="org/m").runs[0].model == "org/m"
    with pytest.raises(InputError, match="the file says 'tiny-llama' but --model says"):
        _parse(_vllm(), model="org/m")


def test_a_cap_at_or_above_the_requests_is_a_burst_not_a_closed_loop():
    burst = _parse(_vllm(request_rate="inf", max_concurrency=20))  # 20 prompts
    point = burst.runs[0].points[0]
    assert point.offered_rate_rps is not None and math.isinf(point.offered_rate_rps)
    assert any("never closed the loop" in w for w in burst.warnings)
    closed = _parse(_vllm(request_rate="inf", max_concurrency=4)).runs[0].points[0]
    assert closed.offered_rate_rps is None and closed.max_concurrency == 4


def test_a_success_that_streamed_no_token_is_not_timed_at_zero():
    """vLLM 0.6.0 (LambdaLabsML's H100 results): 3 of 10 successes with 0 output tokens and a
    TTFT of 0; their zeros pulled the file's own mean TTFT down to 44 ms from 63."""
    document = _vllm()
    ttfts, lens, itls = document["ttfts"], document["output_lens"], document["itls"]
    for i in (2, 5):
        ttfts[i], lens[i], itls[i] = 0.0, 0, []
    document["total_output_tokens"] = sum(lens)
    for key in ("latencies", "start_times"):
        del document[key]  # vLLM 0.6.0 wrote neither
    parsed = _parse(document)
    point = parsed.runs[0].points[0]
    timed = [t for t in ttfts if t > 0]
    assert point.ttft_mean_ms == pytest.approx(1000 * sum(timed) / len(timed))
    assert point.completed == 20
    assert any("2 of 20 completed requests streamed no token" in w for w in parsed.warnings)


def test_vllm_0_6_names_the_e2el_latency():
    arrays = ("input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "errors")
    document = {k: v for k, v in _vllm().items() if k not in arrays and "e2el" not in k}
    document |= {"mean_latency_ms": 290.35, "median_latency_ms": 87.64, "p99_latency_ms": 1030.5}
    point = _parse(document).runs[0].points[0]
    assert (point.e2el_mean_ms, point.e2el_p50_ms, point.e2el_p99_ms) == (290.35, 87.64, 1030.5)


@pytest.mark.parametrize(
    ("gpu", "words"),
    [("tpu-v6e", "not a GPU model fleetplan knows"), ("h100", "say which")],
)
def test_a_gpu_fleetplan_does_not_know_is_stored_as_written_and_said(gpu, words):
    """vllm-tpu's and vllm-ascend's files, or `--gpu h100`, imported silently before: the runs
    are kept as written, and the import says no plan can use them until the GPU is named."""
    parsed = _parse(_vllm(gpu_name=None, gpu_count=None), gpu=gpu, gpu_count=4)
    assert parsed.runs[0].gpu_model == gpu and not parsed.runs[0].gpu_known
    (said,) = [w for w in parsed.warnings if f"GPU {gpu!r}" in w]
    assert words in said and "no plan can use it" in said
    known = _parse(_vllm(gpu_name=None, gpu_count=None), gpu="h100-sxm", gpu_count=4)
    assert not any("no plan can use it" in w for w in known.warnings)


def test_a_prefill_decode_routers_file_names_its_model_gpus_and_variant():
    """SGLang's bench_serving against its prefill/decode router (TonyLi15/sglang-benchmark):
    `server_info` holds each prefill and decode server's own info, not the server's keys; the
    model was asked for ("does not name the model") and the split was lost."""
    line = json.loads((FORMATS / "sglang-0.5.23" / "sglang.jsonl").read_text().splitlines()[0])
    server = {"model_path": "Qwen/Qwen2.5-3B-Instruct", "tp_size": 2, "dp_size": 1}
    line |= {
        "backend": "sglang",
        "server_info": {
            "prefill": [server | {"version": "0.5.5"}],
            "decode": [server | {"version": "0.5.5"}, server | {"version": "0.5.5"}],
        },
    }
    data = json.dumps(line).encode()
    (run,) = parse(FileInput.from_bytes("pd.jsonl", data), ImportOptions(gpu="gh200")).runs
    assert (run.model, run.gpu_count) == ("Qwen/Qwen2.5-3B-Instruct", 6)
    assert run.engine_version == "0.5.5"
    assert run.variant == "prefill/decode disaggregated: 1 prefill and 2 decode server(s)"


@pytest.mark.parametrize(
    ("spec", "shape"),
    [
        ('{"type": "emulated", "prompt_tokens": 32, "output_tokens": 16}', (32, 16)),
        ('{"prompt_tokens":32,"output_tokens":16}', (32, 16)),
        ('{"prompt_tokens": 32, "prompt_tokens_stdev": 8, "output_tokens": 16}', None),
    ],
)
def test_guidellms_data_given_as_json_is_its_traffic(spec, shape):
    """GuideLLM 0.2-0.5 run with `--data '{"prompt_tokens": 512, ...}'` (jhurlocker's and
    danielkorat's real reports) left the traffic unknown: only `prompt_tokens=N,...` was read."""
    text = (FORMATS / "guidellm-0.3.1" / "benchmarks.json").read_text()
    text = text.replace('"prompt_tokens=32,output_tokens=16"', json.dumps(spec))
    data = text.encode()
    options = ImportOptions(gpu="h100-sxm", gpu_count=1)
    run = parse(FileInput.from_bytes("benchmarks.json", data), options).runs[0]
    if shape is None:
        assert run.input_len is None and run.dataset is None
    else:
        assert (run.dataset, run.input_len, run.output_len) == ("synthetic", *shape)


def test_a_sweeps_server_settings_are_its_variant_and_framework_its_engine():
    """`vllm bench sweep serve` writes the server's --serve-params beside each level
    (max_num_seqs 4 and 8 were one server before); `--metadata framework=sgl` measured SGLang
    with vLLM's client (stored as vLLM before)."""
    four, eight = (_parse(_vllm(max_num_seqs=n, run_number=0)) for n in (4, 8))
    assert (
        four.runs[0].variant == "--max-num-seqs=4" and eight.runs[0].variant == "--max-num-seqs=8"
    )
    assert not any("ignored keys" in w for w in four.warnings)
    both = _parse(_vllm(max_num_seqs=4, enable_prefix_caching=False))
    assert both.runs[0].variant == "--max-num-seqs=4 --enable-prefix-caching=false"
    assert _parse(_vllm(framework="sgl")).runs[0].engine == "sglang"
    assert _parse(_vllm()).runs[0].engine == "vllm" and _parse(_vllm()).runs[0].variant is None


@pytest.mark.parametrize(
    ("document", "words"),
    [
        (
            {"elapsed_time": 71.9, "num_requests": 200, "total_num_tokens": 86204,
             "requests_per_second": 2.78, "tokens_per_second": 1199.0},
            "offline throughput benchmark",
        ),
        (
            {"avg_latency": 7.1, "latencies": [7.0, 7.2], "percentiles": {"50": 7.1}},
            "offline latency benchmark",
        ),
        (
            {"run_name": "cuda_graph", "batch_size": 8, "input_len": 256, "output_len": 32,
             "prefill_latency": 0.05, "median_decode_latency": 0.009},
            "bench_one_batch",
        ),
    ],
)  # fmt: skip
def test_offline_benchmarks_beside_serving_results_are_skipped_naming_what_they_are(
    document, words
):
    """vLLM's perf suites keep throughput_*.json and latency_*.json beside serving_*.json, and
    SGLang's bench_one_batch beside bench_serving: each stopped a folder ("not a format")."""
    from fleetplan.core.errors import NotResultsError

    with pytest.raises(NotResultsError, match=words):
        _parse(document)


@pytest.mark.parametrize(
    "document",
    [
        [{"Test name": "serving_llama8B_tp1_qps_2", "Request rate (req/s)": 2.0,
          "Tput (req/s)": 1.93, "Output Tput (tok/s)": 410.2, "TTFT (ms)": 61.5,
          "TPOT (ms)": 21.7, "ITL (ms)": 21.1},
         {"Test name": "serving_llama8B_tp1_qps_inf", "Request rate (req/s)": "inf",
          "Tput (req/s)": 7.2, "Output Tput (tok/s)": 1530.0, "TTFT (ms)": 900.1,
          "TPOT (ms)": 48.0, "ITL (ms)": 40.3}],
        {"Test name": {"0": "serving_llama8B_tp1_qps_2", "1": "serving_llama8B_tp1_qps_inf"},
         "Tput (req/s)": {"0": 1.93, "1": 7.2}, "Mean TTFT (ms)": {"0": 61.5, "1": 900.1}},
    ],
    ids=["rows", "columns"],
)  # fmt: skip
def test_vllms_summary_table_is_skipped_naming_the_results_it_summarises(document):
    """vllm-ascend's nightly benchmark_results.json (rows of its markdown table) was 'not a
    format' (a JSON list): it is a summary of serving_*.json files, skipped, pointing at them."""
    from fleetplan.core.errors import NotResultsError

    with pytest.raises(NotResultsError) as error:
        _parse(document)
    assert "vLLM's benchmark summary table" in error.value.reason
    assert "(serving_llama8B_tp1_qps_2.json and 1 more)" in error.value.reason


def _multi_turn(**changes) -> dict:
    """A multi-turn result of vLLM's benchmark (`mode` multi_turn): its load in
    multi_turn_concurrency, no request_rate nor max_concurrency, an ISO 8601 date."""
    dropped = ("request_rate", "max_concurrency", "gpu_name", "gpu_count")
    single = {k: v for k, v in _vllm().items() if k not in dropped}
    return single | {
        "date": "2026-09-04T20:33:17Z", "mode": "multi_turn", "num_conversations": 8,
        "turns_per_conversation": 3, "multi_turn_concurrency": 4, "inter_turn_delay_ms": 0,
        "conversations_completed": 8, "conversations_failed": 0,
    } | changes  # fmt: skip


def test_a_multi_turn_run_is_a_closed_loop_at_its_conversations():
    """bigyellowduck's multi-turn result was refused ('request_rate missing, and no
    max_concurrency either', after its ISO date): its conversations, each sending a turn when
    the last answered, are a closed loop at multi_turn_concurrency."""
    parsed = _parse(_multi_turn(), gpu="h100-sxm", gpu_count=1)
    point = parsed.runs[0].points[0]
    assert point.max_concurrency == 4 and point.offered_rate_rps is None
    assert any("a multi-turn run (mode multi_turn)" in w for w in parsed.warnings)
    assert not any("multi_turn_concurrency" in w and "ignored" in w for w in parsed.warnings)
    assert parsed.runs[0].created_at.isoformat().startswith("2026-09-04T20:33:17")


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"inter_turn_delay_ms": 500}, "inter_turn_delay_ms"),
     ({"multi_turn_concurrency": None}, "multi_turn_concurrency")],
    ids=["delayed-turns", "no-concurrency"],
)  # fmt: skip
def test_a_multi_turn_run_without_a_closed_loop_is_refused_naming_why(changes, field):
    with pytest.raises(InputError) as error:
        _parse(_multi_turn(**changes), gpu="h100-sxm", gpu_count=1)
    assert error.value.field == field


def test_a_trimmed_vllm_result_and_a_console_log_say_what_they_are():
    """vllm-ascend's trimmed serving results (latencies, no counts) were 'not a format'; an
    SGLang console log named explicitly was 'invalid YAML at line 3'."""
    from fleetplan.core.errors import UnknownFormatError

    trimmed = {k: v for k, v in _vllm().items() if k not in ("duration", "completed")}
    trimmed = {k: v for k, v in trimmed.items() if "throughput" not in k and "total_" not in k}
    with pytest.raises(InputError, match="a vLLM serving result without duration, completed"):
        _parse(trimmed)
    log = b"BENCHMARK: tp8_dp1\n=====\nCommand: python -m sglang.bench_serving --port 30000\n====\n"
    with pytest.raises(UnknownFormatError, match="text \\(a log or notes\\)"):
        parse(FileInput.from_bytes("run.txt", log), ImportOptions())
