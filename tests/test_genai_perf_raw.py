"""GenAI-Perf 2024 runs (0.0.x with perf_analyzer 2.4x): the summary
(profile_export_genai_perf.json) states no request count or duration, which perf_analyzer's raw
export beside it gives (named by the summary's input_config.profile_export_file). Two real runs of
NVIDIA's course (FernandoDorado/sizing-llm-inference-nvidia) were refused ("no request count or
duration"); not committed: these files are laid out as theirs, with our own figures. Read as a
folder, its raw export gives 53 requests over 35.49 s, and 53 / 35.49 s is the summary's own
1.4933 req/s."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.preview import FileStatus, preview_uploads
from fleetplan.warehouse.queries import benchmark_points
from tests.support.files import write_json
from tests.support.paths import ROOT

SUMMARY = "profile_export_genai_perf.json"
RAW = "200_50.json"  # as GenAI-Perf 2024 was told: --profile-export-file <dir>/200_50.json
OPTIONS = ImportOptions(gpu="h100-sxm", gpu_count=1)
T0 = 1_730_000_000_000_000_000  # ns since the epoch: past a float's exact integers
GAP_NS = 500_000_000  # a request every 0.5 s
# each request's responses (ns after it was sent): the role-only chunk, three of text, [DONE]
CHUNKS = (
    (20_000_000, ""),
    (40_000_000, "Hello"),
    (60_000_000, " there"),
    (80_000_000, " friend"),
    (81_000_000, None),
)


def _chunk(text: str | None) -> dict:
    if text is None:
        return {"response": "data: [DONE]\n\n"}
    delta = {"content": text} if text else {"role": "assistant"}
    body = {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
    return {"response": f"data: {json.dumps(body)}\n\n"}


def raw_export(n: int = 6, mode: str = "concurrency", value: float = 2) -> dict:
    requests = []
    for i in range(n):
        sent = T0 + i * GAP_NS
        requests.append(
            {
                "timestamp": sent,
                "request_inputs": {"payload": json.dumps({"messages": [], "stream": True})},
                "response_timestamps": [sent + after for after, _ in CHUNKS],
                "response_outputs": [_chunk(text) for _, text in CHUNKS],
            }
        )
    last = T0 + (n - 1) * GAP_NS + 81_000_000
    return {
        "experiments": [
            {
                "experiment": {"mode": mode, "value": value},
                "requests": requests,
                "window_boundaries": [T0 - 1000, last + 400_000_000],
            }
        ],
        "version": "2.48.0",
        "service_kind": "openai",
        "endpoint": "v1/chat/completions",
    }


def duration_s(n: int = 6) -> float:
    """GenAI-Perf's benchmark duration: first request sent to the last response with text."""
    return ((n - 1) * GAP_NS + 80_000_000) / 1e9


def summary(n: int = 6, *, concurrency: int | None = 2, rate: float | None = None) -> dict:
    """The summary as GenAI-Perf 2024 writes it: no request_count, flat input_config."""
    rps, duration = n / duration_s(n), duration_s(n)

    def stat(unit: str, value: float) -> dict:
        keys = ("avg", "p99", "p95", "p90", "p75", "p50", "p25", "max", "min")
        return {"unit": unit, **dict.fromkeys(keys, value), "std": 0.0}

    return {
        "request_throughput": {"unit": "requests/sec", "avg": rps},
        "request_latency": stat("ms", 80.0),
        "time_to_first_token": stat("ms", 40.0),
        "inter_token_latency": stat("ms", 20.0),
        "output_token_throughput": {"unit": "tokens/sec", "avg": 3 * n / duration},
        "output_token_throughput_per_request": stat("tokens/sec", 37.5),
        "output_sequence_length": stat("tokens", 3.0),
        "input_sequence_length": stat("tokens", 100.0),
        "input_config": {
            "model": ["acme/chat-8b"],
            "endpoint_type": "chat",
            "service_kind": "openai",
            "streaming": True,
            "synthetic_input_tokens_mean": 100,
            "synthetic_input_tokens_stddev": 0,
            "output_tokens_mean": 3,
            "output_tokens_stddev": 0,
            "concurrency": concurrency,
            "request_rate": rate,
            "prompt_source": "synthetic",
            "profile_export_file": f"artifacts/acme-chat-8b-openai-chat-concurrency2/{RAW}",
        },
    }


CSV = """Metric,avg,min,max,p99,p95,p90,p75,p50,p25
Time To First Token (ms),40.00,40.00,40.00,40.00,40.00,40.00,40.00,40.00,40.00
Request Latency (ms),80.00,80.00,80.00,80.00,80.00,80.00,80.00,80.00,80.00

Metric,Value
Output Token Throughput (per sec),6.98
Request Throughput (per sec),2.33
"""


def run_folder(tmp_path: Path, raw: dict | None = None, raw_name: str = RAW, **settings) -> Path:
    folder = tmp_path / "acme-chat-8b-openai-chat-concurrency2"
    folder.mkdir()
    write_json(folder / SUMMARY, summary(**settings))
    if raw is not None:
        write_json(folder / raw_name, raw)
    write_json(folder / "llm_inputs.json", {"data": [{"payload": [{"messages": []}]}]})
    (folder / "profile_export_genai_perf.csv").write_text(CSV)
    return folder


def test_a_folder_imports_with_the_count_and_duration_of_its_raw_export(cli, tmp_path):
    folder = run_folder(tmp_path, raw_export())
    warehouse = tmp_path / "wh.duckdb"
    done = cli("ingest", "--warehouse", warehouse, "--gpu", "h100-sxm", "--gpu-count", "1", folder)
    assert done.returncode == 0, done
    assert "1 imported, 0 already present, 0 rejected, 3 skipped" in done.stdout
    assert f"{RAW}: perf_analyzer's raw profile export" in done.stdout
    assert "not imported alone" in done.stdout
    said = f"request count and duration from perf_analyzer's raw export {RAW}"
    assert said in done.stdout and "6 requests answered, over 2.58 s" in done.stdout
    assert "1 measurement window(s) span 2.98" in done.stdout
    assert "differs" not in done.stdout
    shown = cli("benchmarks", "--warehouse", warehouse, "--format", "json", check=True)
    (row,) = json.loads(shown.stdout)
    assert (row["model"], row["max_concurrency"], row["completed"]) == ("acme/chat-8b", 2, 6)
    assert row["duration_s"] == pytest.approx(duration_s())
    assert row["request_throughput_rps"] == pytest.approx(6 / duration_s())
    assert (row["ttft_p99_ms"], row["e2el_mean_ms"], row["tpot_p99_ms"]) == (40.0, 80.0, 20.0)
    assert row["stats_source"] == "reported"


def test_a_summary_alone_is_refused_naming_the_raw_export_that_would_import_it(cli, tmp_path):
    folder = run_folder(tmp_path)
    with pytest.raises(InputError, match=rf"raw export beside them, {RAW} \(its input_config"):
        parse(FileInput.from_bytes(SUMMARY, (folder / SUMMARY).read_bytes()), OPTIONS)
    warehouse = tmp_path / "wh.duckdb"
    done = cli("ingest", "--warehouse", warehouse, "--gpu", "h100-sxm", "--gpu-count", "1", folder)
    assert done.returncode == 1 and "0 imported, 0 already present, 1 rejected" in done.stdout
    assert f"{RAW} (its input_config.profile_export_file), not found beside it" in done.stdout


def test_a_summary_given_alone_finds_its_raw_export_beside_it_on_disk(warehouse, tmp_path):
    folder = run_folder(tmp_path, raw_export())
    (outcome,) = ingest_paths(warehouse, [folder / SUMMARY], OPTIONS)
    assert outcome.status is FileStatus.IMPORTED, outcome.message
    assert benchmark_points(warehouse).iloc[0]["completed"] == 6


def test_a_raw_export_under_another_name_is_found_by_its_shape(warehouse, tmp_path):
    folder = run_folder(tmp_path, raw_export(), raw_name="renamed.json")
    outcomes = {Path(o.file).name: o for o in ingest_paths(warehouse, [folder], OPTIONS)}
    assert outcomes[SUMMARY].status is FileStatus.IMPORTED, outcomes[SUMMARY].message
    assert outcomes["renamed.json"].status is FileStatus.SKIPPED
    assert any("raw export renamed.json" in w for w in outcomes[SUMMARY].warnings)


def test_the_raw_export_alone_is_not_imported_and_says_to_give_its_summary(warehouse, tmp_path):
    path = write_json(tmp_path / RAW, raw_export())
    (outcome,) = ingest_paths(warehouse, [path], OPTIONS)
    assert outcome.status is FileStatus.SKIPPED
    assert "not imported alone" in outcome.message and SUMMARY in outcome.message
    assert benchmark_points(warehouse).empty


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (raw_export(mode="concurrency", value=8), "concurrency 8, but the summary's"),
        (raw_export(mode="request_rate", value=2.0), "request_rate 2, but the summary's"),
        (raw_export(n=9), r"give 2\.2\d+ req/s, but the summary states 2\.3\d+: not the same run"),
    ],
    ids=["another-concurrency", "a-rate-level", "more-requests"],
)
def test_a_raw_export_of_another_run_is_refused(raw, message, tmp_path):
    data = json.dumps(summary()).encode()
    options = ImportOptions(gpu="h100-sxm", gpu_count=1, companions={RAW: json.dumps(raw).encode()})
    with pytest.raises(InputError, match=message):
        parse(FileInput.from_bytes(SUMMARY, data), options)


def test_a_rate_level_is_stored_at_the_rate_its_requests_were_sent(tmp_path):
    raw = raw_export(n=11, mode="request_rate", value=1.5)
    options = ImportOptions(gpu="h100-sxm", gpu_count=1, companions={RAW: json.dumps(raw).encode()})
    data = json.dumps(summary(11, concurrency=None, rate=1.5)).encode()
    point = parse(FileInput.from_bytes(SUMMARY, data), options).runs[0].points[0]
    # a request every 0.5 s: sent at 2 req/s, though 1.5 was asked for
    assert (point.offered_rate_rps, point.configured_rate_rps) == (2.0, 1.5)
    assert point.completed == 11 and point.duration_s == pytest.approx(duration_s(11))


def test_an_upload_of_the_zipped_folder_previews_as_the_folder_imports(warehouse, tmp_path):
    folder = run_folder(tmp_path, raw_export())
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        for path in sorted(folder.iterdir()):
            archive.write(path, f"run/{path.name}")
    previews = {
        Path(p.file).name: p
        for p in preview_uploads(warehouse, [("run.zip", packed.getvalue())], OPTIONS)
    }
    assert previews[SUMMARY].status is FileStatus.READY, previews[SUMMARY].message
    assert previews[SUMMARY].parsed.runs[0].points[0].completed == 6
    assert previews[RAW].status is FileStatus.SKIPPED
    alone = preview_uploads(warehouse, [(SUMMARY, (folder / SUMMARY).read_bytes())], OPTIONS)
    assert alone[0].status is FileStatus.REJECTED and RAW in alone[0].message


def test_genai_perfs_own_run_without_its_count_reads_the_same_from_its_raw_export(tmp_path):
    """Our GenAI-Perf 0.0.16 run (tests/fixtures/formats) with what 2024's summaries lack taken
    out: its raw export gives the count and the duration the tool's throughput was stated over."""
    run = ROOT / "tests" / "fixtures" / "formats" / "genai-perf-0.0.16"
    folder = tmp_path / "run"
    shutil.copytree(run / "tiny-llama-openai-completions-request_rate4.0", folder)
    export = json.loads((folder / SUMMARY).read_text())
    stated = export.pop("request_count")["avg"]
    write_json(folder / SUMMARY, export)
    options = ImportOptions(
        gpu="rtx-4090",
        gpu_count=1,
        companions={"profile_export.json": (folder / "profile_export.json").read_bytes()},
    )
    parsed = parse(FileInput.from_bytes(SUMMARY, (folder / SUMMARY).read_bytes()), options)
    point = parsed.runs[0].points[0]
    assert point.completed == stated == 20
    rps = export["request_throughput"]["avg"]
    assert point.completed / point.duration_s == pytest.approx(rps, rel=1e-9)
    assert not any("differs" in w for w in parsed.warnings)


def test_an_aiperf_summary_without_a_count_is_not_asked_for_a_raw_export():
    export = summary()
    export["input_config"] = {"loadgen": {"concurrency": 2}, "model_names": ["acme/chat-8b"]}
    data = json.dumps(export).encode()
    with pytest.raises(InputError, match="no request count or duration: nothing to store"):
        parse(FileInput.from_bytes("profile_export_aiperf.json", data), OPTIONS)
