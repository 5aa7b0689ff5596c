"""The vLLM result importer, on files built the way vLLM writes them."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from benchmarks.inputs.vllm_results import dumps_appended, make_result
from fleetplan.core.contract import StatsSource
from fleetplan.core.errors import InputError, UnknownFormatError
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse


def parse_bytes(data: bytes, name: str = "result.json", **options):
    return parse(FileInput.from_bytes(name, data), ImportOptions(**options))


def parse_obj(obj, name: str = "result.json", **options):
    return parse_bytes(json.dumps(obj).encode(), name, **options)


def test_detailed_result_statistics_are_recomputed_and_match_vllm():
    result = make_result(requests=80, failures=3, seed=1)
    parsed = parse_obj(result)
    assert parsed.warnings == ()
    (run,) = parsed.runs
    (point,) = run.points
    assert point.stats_source is StatsSource.RECOMPUTED
    assert point.completed == 77 and point.failed == 3 and point.requests_sent == 80
    for metric in ("ttft", "tpot", "itl", "e2el"):
        for stat, key in (("mean", "mean"), ("p50", "p50"), ("p99", "p99")):
            assert getattr(point, f"{metric}_{stat}_ms") == pytest.approx(
                result[f"{key}_{metric}_ms"], rel=1e-9
            )
    assert point.output_tokens_mean == pytest.approx(result["total_output_tokens"] / 77)
    assert run.gpu_model == "rtx-4090" and run.gpu_count == 1 and run.gpu_label.startswith("NVIDIA")
    assert run.tool == "vllm bench serve"


def test_recomputation_flags_a_statistic_that_disagrees_with_the_requests():
    result = make_result(seed=2)
    true_p99 = result["p99_ttft_ms"]
    result["p99_ttft_ms"] = true_p99 * 1.5
    parsed = parse_obj(result)
    assert any("p99_ttft_ms" in w and "per-request" in w for w in parsed.warnings)
    # fleetplan stores what the requests say, by its own definitions
    assert parsed.runs[0].points[0].ttft_p99_ms == pytest.approx(true_p99)


def test_tpot_is_per_request_and_differs_from_pooled_itl():
    # One long request with slow chunks and many short fast ones: TPOT (mean over requests)
    # and ITL (pooled over chunks) must come out different, as defined.
    result = make_result(requests=2, seed=3)
    result["output_lens"] = [101, 3]
    result["itls"] = [[0.010] * 100, [0.100, 0.100]]
    result["ttfts"] = [0.05, 0.05]
    result["total_output_tokens"] = 104
    # a file must agree with itself (warehouse.consistency): the 1.05 s request fits in its
    # duration, and its throughputs follow its tokens
    result["duration"] = 2.0
    result["request_throughput"] = 2 / 2.0
    result["output_throughput"] = 104 / result["duration"]
    result["total_token_throughput"] = (result["total_input_tokens"] + 104) / result["duration"]
    for key in [k for k in result if k.endswith("_ms")]:
        del result[key]
    point = parse_obj(result).runs[0].points[0]
    assert point.tpot_mean_ms == pytest.approx((10.0 + 100.0) / 2)
    assert point.itl_mean_ms == pytest.approx((100 * 10.0 + 2 * 100.0) / 102)
    assert point.e2el_p50_ms == pytest.approx((1050.0 + 250.0) / 2)


def test_summary_only_file_keeps_reported_statistics_and_nulls_what_it_lacks():
    result = make_result(detailed=False, percentiles=(99,), metrics=("ttft", "tpot", "itl"))
    point = parse_obj(result).runs[0].points[0]
    assert point.stats_source is StatsSource.REPORTED
    assert point.ttft_p99_ms == pytest.approx(result["p99_ttft_ms"])
    assert point.ttft_p50_ms == pytest.approx(result["median_ttft_ms"])  # median is p50
    assert point.ttft_p90_ms is None and point.e2el_p99_ms is None


def test_per_request_arrays_given_as_null_are_no_arrays():
    """A result whose ttfts is null (found by the fuzz, 12-08: it raised AttributeError) keeps
    its reported statistics, as one without the arrays does."""
    result = make_result(detailed=False, percentiles=(99,), metrics=("ttft", "tpot", "itl"))
    point = parse_obj(result | {"ttfts": None}).runs[0].points[0]
    assert point.stats_source is StatsSource.REPORTED
    assert point.ttft_p99_ms == pytest.approx(result["p99_ttft_ms"])


def test_appended_objects_form_one_run_per_setup_and_a_repeat_starts_a_new_run():
    sweep = [make_result(rate=r, seed=i, detailed=False) for i, r in enumerate((1, 2, 4, "inf"))]
    repeat = make_result(rate=4, seed=9, detailed=False)
    other_gpu = make_result(
        rate=1, seed=10, detailed=False,
        metadata={"gpu_name": "NVIDIA H100 PCIe", "gpu_count": "2"},
    )  # fmt: skip
    parsed = parse_bytes(dumps_appended([*sweep, repeat, other_gpu]))
    assert [len(run.points) for run in parsed.runs] == [4, 1, 1]
    rates = [p.offered_rate_rps for p in parsed.runs[0].points]
    assert rates[:3] == [1.0, 2.0, 4.0] and math.isinf(rates[3])
    assert [run.source_index for run in parsed.runs] == [0, 1, 2]
    assert parsed.runs[2].gpu_model == "h100-pcie" and parsed.runs[2].gpu_count == 2


def test_sweep_summary_list_is_read():
    summary = [make_result(rate=r, seed=r, detailed=False) for r in (1, 2)]
    parsed = parse_obj(summary, name="summary.json")
    assert parsed.points == 2


def test_old_benchmark_serving_variant_with_stray_colon_key_and_no_failed():
    result = make_result(new_style=False, detailed=False, failures=0)
    assert "request_goodput:" in result and "failed" not in result
    parsed = parse_obj(result)
    (run,) = parsed.runs
    assert run.tool == "vllm benchmark_serving.py"
    assert run.points[0].failed == 0
    assert parsed.warnings == ()


def test_every_request_failed_gives_no_latencies():
    result = make_result(requests=5, failures=5, detailed=False)
    parsed = parse_obj(result)
    point = parsed.runs[0].points[0]
    assert point.completed == 0 and point.failed == 5
    assert point.ttft_p99_ms is None and point.tpot_mean_ms is None
    assert any("no request completed" in w for w in parsed.warnings)


def test_gpu_from_the_io_net_file_name_when_metadata_is_missing():
    result = make_result(metadata={}, detailed=False)
    name = "vllm_200prompts16qps_Meta-Llama-3-8B-Instruct_sharegpt_4xNVIDIA-GeForce-RTX-4090.json"
    (run,) = parse_obj(result, name=name).runs
    assert (run.gpu_model, run.gpu_count, run.dataset) == ("rtx-4090", 4, "sharegpt")


def test_missing_gpu_is_asked_for_not_guessed():
    result = make_result(metadata={}, detailed=False)
    with pytest.raises(InputError) as caught:
        parse_obj(result)
    assert caught.value.field == "gpu_name" and "--gpu" in str(caught.value)
    (run,) = parse_obj(result, gpu="h100-sxm", gpu_count=8).runs
    assert (run.gpu_model, run.gpu_count) == ("h100-sxm", 8)


def test_a_flag_that_contradicts_the_file_is_refused():
    result = make_result(detailed=False)
    with pytest.raises(InputError, match="--gpu says"):
        parse_obj(result, gpu="h100-pcie")
    # the same GPU spelt differently is no contradiction
    assert parse_obj(result, gpu="rtx-4090").runs[0].gpu_model == "rtx-4090"


def test_unknown_gpu_label_is_kept_verbatim_and_flagged():
    result = make_result(
        detailed=False, metadata={"gpu_name": "Quantum Tensor X9", "gpu_count": "1"}
    )
    (run,) = parse_obj(result).runs
    assert run.gpu_model == "Quantum Tensor X9" and run.gpu_known is False


def test_metadata_strings_are_kept_and_unknown_non_text_keys_reported():
    result = make_result(detailed=False)
    result["team"] = "inference"
    result["my_counter"] = 7
    parsed = parse_obj(result)
    assert parsed.runs[0].metadata["team"] == "inference"
    assert any("ignored keys my_counter" in w for w in parsed.warnings)


@pytest.mark.parametrize(
    ("mutate", "field", "expected"),
    [
        (lambda r: r.update(p99_ttft_ms=float("nan")), "p99_ttft_ms", "finite"),
        (lambda r: r.update(duration=-3.0), "duration", ">= 0"),
        (lambda r: r.update(completed="50"), "completed", "expected a number"),
        (lambda r: r.update(request_rate="fast"), "request_rate", "'inf'"),
        (lambda r: r.update(completed=2.5), "completed", "whole number"),
        (lambda r: r.pop("duration"), "duration", "missing"),
        (lambda r: r.update(ttfts=r["ttfts"][:-1]), "output_lens", "entries"),
        (lambda r: r.update(itls="oops"), "itls", "lists of chunk gaps"),
        (lambda r: r.update(ttfts=["a"] * len(r["ttfts"])), "ttfts", "numbers"),
        (lambda r: r.update(total_output_tokens=1), "total_output_tokens", "sum to"),
        (lambda r: r.update(total_input_tokens=7), "total_input_tokens", "sum to"),
        (lambda r: r.update(gpu_count="two"), "gpu_count", "whole number"),
    ],
)
def test_bad_values_are_rejected_naming_the_field(mutate, field, expected):
    result = make_result(seed=5)
    mutate(result)
    with pytest.raises(InputError) as caught:
        parse_obj(result)
    assert caught.value.field == field
    assert expected in str(caught.value)
    assert "result.json" in str(caught.value)


def test_nan_literal_in_json_is_rejected():
    data = json.dumps(make_result(detailed=False)).replace('"duration": ', '"duration": NaN, "x": ')
    with pytest.raises(InputError, match="finite"):
        parse_bytes(data.encode())


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"   \n ", "empty"),
        (b'{"duration": 1.0, "request_throughput"', "truncated JSON"),
        (b"\xff\xfe\x00garbage", "UTF-8"),
        (b"[" * 100_000, "nested too deeply"),
    ],
)
def test_unreadable_files_get_a_clear_message(data, message):
    with pytest.raises(InputError, match=message):
        parse_bytes(data)


def test_format_is_detected_from_content_not_name():
    with pytest.raises(UnknownFormatError, match="keys"):
        parse_obj(
            {"hello": "world"}, name="vllm_200prompts16qps_x_sharegpt_1xNVIDIA-H100-PCIe.json"
        )
    result = make_result(detailed=False)
    assert parse_obj(result, name="notes.txt").points == 1


def test_file_over_the_size_limit_is_refused_before_parsing():
    data = json.dumps(make_result(detailed=False)).encode()
    with pytest.raises(InputError, match="limit"):
        parse_bytes(data, max_file_bytes=100)


def test_percentiles_that_decrease_are_rejected():
    result = make_result(detailed=False)
    result["p99_ttft_ms"] = result["p50_ttft_ms"] / 2
    with pytest.raises(InputError, match="not increasing"):
        parse_obj(result)


def test_large_detailed_file_parses_with_exact_counts():
    result = make_result(requests=5000, seed=11, max_output=60)
    parsed = parse_obj(result)
    point = parsed.runs[0].points[0]
    assert point.completed == 5000
    assert point.itl_p99_ms == pytest.approx(result["p99_itl_ms"])
    assert np.isclose(point.request_throughput_rps, result["request_throughput"])


def test_arrays_that_cannot_be_used_are_reported_and_the_reported_statistics_kept():
    result = make_result(seed=12)
    del result["output_lens"]
    parsed = parse_obj(result)
    assert parsed.runs[0].points[0].stats_source is StatsSource.REPORTED
    assert any("per-request arrays not used" in w and "output_lens" in w for w in parsed.warnings)
