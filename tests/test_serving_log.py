"""The console logs of vLLM's `vllm bench serve` and SGLang's `bench_serving` (`... | tee
run.log`): their result banner read as the JSON result of the run, named alone or in a folder
with no JSON beside it. The logs are written in the tools' layout with figures of our own
(benchmarks.inputs.tool_reports); a real SGLang log (benchmaq's Llama-3.1-70B on 8x H100) reads
the same way and is not committed."""

from __future__ import annotations

import json

from benchmarks.inputs.tool_reports import sglang_console_log, vllm_console_log


def _ingest(cli, warehouse_path, path, *options, check=False):
    return cli("ingest", "--warehouse", warehouse_path, *options, path, check=check)


def _rows(cli, warehouse_path) -> list[dict]:
    done = cli("benchmarks", "--warehouse", warehouse_path, "--format", "json", check=True)
    return json.loads(done.stdout)


def test_a_vllm_log_named_alone_is_a_closed_loop_at_its_cap(cli, tmp_path, warehouse_path):
    log = tmp_path / "run.log"
    log.write_text(vllm_console_log())
    done = _ingest(cli, warehouse_path, log, "--gpu", "h100-sxm", "--gpu-count", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "via vllm-serve-json" in done.stdout
    assert "console log's result banner" in done.stdout
    [row] = _rows(cli, warehouse_path)
    assert row["model"] == "acme/Llama-8B" and row["gpu_model"] == "h100-sxm"
    assert row["source_tool"] == "vllm bench serve"  # its Namespace names an endpoint_type
    assert row["offered_rate_rps"] is None and row["max_concurrency"] == 16  # inf with a cap
    assert (row["completed"], row["failed"], row["requests_sent"]) == (198, 2, 200)
    assert row["duration_s"] == 48.06 and row["request_throughput_rps"] == 4.12
    assert row["output_throughput_tps"] == 823.97 and row["total_throughput_tps"] == 4943.82
    assert (row["ttft_mean_ms"], row["ttft_p50_ms"], row["ttft_p99_ms"]) == (95.4, 80.0, 600.0)
    assert (row["tpot_p99_ms"], row["itl_p99_ms"]) == (55.0, 70.2)
    # what the banner does not print stays unknown
    assert row["e2el_p99_ms"] is None and row["ttft_p90_ms"] is None
    assert row["stats_source"] == "reported"
    assert row["input_tokens_mean"] == 1000.0 and row["output_tokens_mean"] == 200.0


def test_a_vllm_log_at_a_rate_without_a_cap_is_an_open_loop(cli, tmp_path, warehouse_path):
    log = tmp_path / "run.txt"
    log.write_text(vllm_console_log(rate=4.0, concurrency=None))
    _ingest(cli, warehouse_path, log, "--gpu", "h100-sxm", "--gpu-count", "1", check=True)
    [row] = _rows(cli, warehouse_path)
    assert row["configured_rate_rps"] == 4.0 and row["max_concurrency"] is None


def test_an_sglang_log_reads_its_load_from_the_banner(cli, tmp_path, warehouse_path):
    log = tmp_path / "bench.txt"
    log.write_text(sglang_console_log())
    done = _ingest(cli, warehouse_path, log, "--gpu", "h100-sxm", "--gpu-count", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "via sglang-bench-serving" in done.stdout
    assert "not stored" in done.stdout and "concurrency" in done.stdout
    [row] = _rows(cli, warehouse_path)
    assert row["engine"] == "sglang" and row["source_tool"] == "sglang bench_serving"
    assert row["model"] == "acme/Qwen-8B" and row["gpu_count"] == 2
    assert row["offered_rate_rps"] is None and row["max_concurrency"] == 32
    assert (row["dataset"], row["input_len"], row["output_len"]) == ("synthetic", 1024, 256)
    assert (row["completed"], row["requests_sent"], row["failed"]) == (400, 400, 0)
    assert (row["e2el_mean_ms"], row["e2el_p99_ms"]) == (6240.0, 9100.0)
    assert (row["itl_p95_ms"], row["itl_p99_ms"]) == (30.0, 61.0)
    assert row["ttft_p99_ms"] == 480.0


def test_an_sglang_log_at_a_rate_and_one_of_a_trace(cli, tmp_path, warehouse_path):
    log = tmp_path / "rate.log"
    log.write_text(sglang_console_log(rate="8.0", concurrency="not set"))
    _ingest(cli, warehouse_path, log, "--gpu", "h100-sxm", "--gpu-count", "1", check=True)
    [row] = _rows(cli, warehouse_path)
    assert row["configured_rate_rps"] == 8.0 and row["max_concurrency"] is None
    trace = tmp_path / "trace.log"
    trace.write_text(sglang_console_log(rate="trace", concurrency="not set"))
    done = _ingest(cli, warehouse_path, trace, "--gpu", "h100-sxm", "--gpu-count", "1")
    assert done.returncode == 1 and "a trace replay" in done.stdout


def test_a_log_states_no_gpu_and_without_arguments_no_model(cli, tmp_path, warehouse_path):
    log = tmp_path / "run.log"
    text = vllm_console_log()
    log.write_text(text)
    done = _ingest(cli, warehouse_path, log)
    assert done.returncode == 1 and "--gpu" in done.stdout
    log.write_text("\n".join(line for line in text.splitlines() if "Namespace(" not in line))
    done = _ingest(cli, warehouse_path, log, "--gpu", "h100-sxm", "--gpu-count", "1")
    assert done.returncode == 1 and "--model" in done.stdout
    options = ("--gpu", "h100-sxm", "--gpu-count", "1", "--model", "acme/Other-8B")
    _ingest(cli, warehouse_path, log, *options, check=True)
    [row] = _rows(cli, warehouse_path)
    assert row["model"] == "acme/Other-8B" and row["max_concurrency"] == 16


def test_a_log_of_several_runs_is_one_level_per_banner(cli, tmp_path, warehouse_path):
    log = tmp_path / "sweep.log"
    log.write_text(vllm_console_log(concurrency=8) + vllm_console_log(concurrency=32))
    _ingest(cli, warehouse_path, log, "--gpu", "h100-sxm", "--gpu-count", "1", check=True)
    assert sorted(r["max_concurrency"] for r in _rows(cli, warehouse_path)) == [8, 32]


def test_in_a_folder_a_log_is_read_only_where_no_json_is_beside_it(cli, tmp_path, warehouse_path):
    alone, beside = tmp_path / "alone", tmp_path / "beside"
    alone.mkdir()
    beside.mkdir()
    (alone / "run.log").write_text(sglang_console_log())
    (beside / "run.log").write_text(sglang_console_log())
    (beside / "notes.json").write_text("{}")
    options = ("--gpu", "h100-sxm", "--gpu-count", "1")
    done = _ingest(cli, warehouse_path, alone, *options)
    assert done.returncode == 0 and "imported  " in done.stdout, done.stdout
    done = _ingest(cli, warehouse_path, beside, *options)
    assert "skipped   " in done.stdout and "run.log" in done.stdout


def test_an_upload_reads_a_log_where_no_json_is_beside_it(warehouse):
    from fleetplan.warehouse.importers.base import ImportOptions
    from fleetplan.warehouse.preview import FileStatus, preview_uploads

    log = vllm_console_log().encode()
    options = ImportOptions(gpu="h100-sxm", gpu_count=1)
    alone = preview_uploads(warehouse, [("a/run.log", log)], options)
    assert [p.status for p in alone] == [FileStatus.READY]
    beside = preview_uploads(warehouse, [("a/run.log", log), ("a/r.json", b"{}")], options)
    assert beside[0].status == FileStatus.SKIPPED
