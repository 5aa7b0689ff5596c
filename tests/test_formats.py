"""Real output files of other benchmark tools import by definition, with the figures the tools
reported: those fleetplan's own runs of the tools wrote (tests/fixtures/formats, see its README)
and those copied from the tools' repositories (../shared/data/tool-outputs, see its NOTICE.md;
those tests skip when it is absent)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.inputs.shared_data import tool_outputs_dir
from fleetplan.core.errors import InputError, NotResultsError
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.preview import FileStatus
from fleetplan.warehouse.queries import benchmark_points
from tests.support.paths import ROOT

FORMATS = ROOT / "tests" / "fixtures" / "formats"
# In ../shared/data/tool-outputs (the `tool_outputs` fixture): files from the tools' repositories.
LLMPERF = "llmperf-2023-08-31"
LLMPERF_SUMMARY = "01-ai-Yi-1-5-34B-Chat_550_150_summary.json"
LLMPERF_REQUESTS = "01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json"
AIPERF_REPO = "aiperf-repo-example"
# genai-bench's files beside its levels: the experiment's metadata and its Excel summary
GENAI_BENCH = {
    "experiment_metadata.json",
    "gb-0.0.5_summary.xlsx",
    "gb-0.0.5-ms-warmup_summary.xlsx",
}


def read(path: Path, **options):
    return parse(FileInput.from_bytes(path.name, path.read_bytes()), ImportOptions(**options))


# -- LLMPerf ------------------------------------------------------------------------------------


def test_llmperfs_leaderboard_layout_pairs_summary_and_individual_by_name(
    warehouse, tmp_path, tool_outputs
):
    """ray-project/llmperf-leaderboard keeps raw_data/summary/X.json beside
    raw_data/individual/X.json: the same pair as LLMPerf's own names, in two folders."""
    raw = tmp_path / "raw_data"
    for folder, name in (("summary", LLMPERF_SUMMARY), ("individual", LLMPERF_REQUESTS)):
        (raw / folder).mkdir(parents=True)
        shutil.copy(tool_outputs / LLMPERF / name, raw / folder / "yi_34b.json")
    options = ImportOptions(gpu="NVIDIA A10G", gpu_count=4)
    outcomes = {
        str(Path(o.file).relative_to(raw)): o for o in ingest_paths(warehouse, [raw], options)
    }
    assert outcomes["summary/yi_34b.json"].status is FileStatus.IMPORTED
    assert outcomes["individual/yi_34b.json"].status is FileStatus.INCLUDED
    row = benchmark_points(warehouse).iloc[0]
    assert row["stats_source"] == "recomputed" and 40 < row["tpot_p50_ms"] < 60


def test_llmperf_folder_imports_the_summary_with_its_requests(warehouse, tmp_path, tool_outputs):
    folder = tmp_path / "llmperf"
    shutil.copytree(tool_outputs / LLMPERF, folder, ignore=shutil.ignore_patterns("*.md"))
    outcomes = {
        Path(o.file).name: o
        for o in ingest_paths(warehouse, [folder], ImportOptions(gpu="NVIDIA A10G", gpu_count=4))
    }
    assert outcomes[LLMPERF_SUMMARY].status is FileStatus.IMPORTED
    assert outcomes[LLMPERF_REQUESTS].status is FileStatus.INCLUDED
    row = benchmark_points(warehouse).iloc[0]
    # figures as LLMPerf reported them in the summary
    assert row["request_throughput_rps"] == pytest.approx(24.32544640710275 / 60)
    assert row["output_throughput_tps"] == pytest.approx(64.53540931804359)
    assert row["completed"] == 100 and row["failed"] == 0 and row["max_concurrency"] == 4
    assert row["ttft_p99_ms"] == pytest.approx(2246.308106680317, rel=1e-6)
    assert row["e2el_mean_ms"] == pytest.approx(9475.706080719974, rel=1e-6)
    # recomputed from the requests: TPOT, which the summary cannot give
    assert row["stats_source"] == "recomputed" and 40 < row["tpot_p50_ms"] < 60
    assert row["itl_p50_ms"] != row["itl_p50_ms"]  # NaN: LLMPerf's ITL includes TTFT: not stored
    assert (row["gpu_model"], row["gpu_count"], row["model"]) == (
        "a10g",
        4,
        "01-ai/Yi-1.5-34B-Chat",
    )
    assert (row["input_len"], row["output_len"]) == (550, 150)


def test_llmperf_summary_alone_and_requests_alone(tool_outputs):
    summary, requests = (
        tool_outputs / LLMPERF / name for name in (LLMPERF_SUMMARY, LLMPERF_REQUESTS)
    )
    parsed = read(summary, gpu="a10g", gpu_count=4)
    point = parsed.runs[0].points[0]
    assert point.tpot_p50_ms is None and point.ttft_p99_ms == pytest.approx(2246.308106680317)
    assert any("TPOT unknown" in w for w in parsed.warnings)
    with pytest.raises(InputError, match="together with its"):
        read(requests, gpu="a10g", gpu_count=4)
    with pytest.raises(InputError, match="does not record the hardware"):
        read(summary)


# -- what the tools printed (console captures in each folder; see the README) ------------------


def near(printed: float, decimals: int):
    """A full-precision value that the console showed rounded to `decimals` places."""
    return pytest.approx(printed, abs=0.5 * 10**-decimals + 1e-9)


def point_figures(point) -> dict:
    return point.model_dump()


# -- GuideLLM: each layout, JSON and YAML ---------------------------------------------------------

# (folder, version in file, figures per benchmark as printed: requests completed, duration s,
#  TTFT ms, ITL ms (our TPOT), at the statistics each version's console shows)
GUIDELLM = [
    (
        "guidellm-0.3.1",
        None,  # 0.3 does not write its version into the report
        [
            {
                "completed": 15,
                "duration": (6.6, 1),
                "rps": 2.26,
                "ttft": {"mean": 75.2, "p50": 69.7, "p99": 254.8},
                "tpot": {"mean": 5.7, "p50": 6.4, "p99": 8.4},
                "e2el_mean_s": 0.16,
            },
            {
                "completed": 15,
                "duration": (3.1, 1),
                "rps": 4.92,
                "ttft": {"mean": 64.8, "p50": 40.6, "p99": 149.5},
                "tpot": {"mean": 5.6, "p50": 6.4, "p99": 17.5},
                "e2el_mean_s": 0.15,
            },
        ],
    ),
    (
        "guidellm-0.4.0",
        None,
        [
            {
                "completed": 10,
                "duration": (10.0, 1),
                "rps": 1.0,
                "ttft": {"p50": 12.7, "p95": 31.9},
                "tpot": {"p50": 2.0, "p95": 6.3},
            },
            {
                "completed": 10,
                "duration": (2.5, 1),
                "rps": 3.9,
                "ttft": {"p50": 13.1, "p95": 19.3},
                "tpot": {"p50": 2.1, "p95": 4.9},
            },
        ],
    ),
    (
        "guidellm-0.6.1",
        "0.6.1",
        [
            {
                "completed": 10,
                "duration": (4.5, 1),
                "rps": 2.2,
                "ttft": {"p50": 12.3, "p95": 14.4},
                "tpot": {"p50": 1.9, "p95": 2.8},
            },
            {
                "completed": 10,
                "duration": (4.3, 1),
                "rps": 2.3,
                "ttft": {"p50": 12.6, "p95": 21.1},
                "tpot": {"p50": 1.6, "p95": 4.0},
            },
        ],
    ),
    (
        "guidellm-0.8.1",
        "0.8.1",
        [
            {
                "completed": 7,
                "duration": (3.1, 1),
                "rps": 2.3,
                "ttft": {"mean": 15.4, "p50": 10.9, "p95": 26.4},
                "tpot": {"mean": 3.2, "p50": 3.0, "p95": 5.2},
            },
            {
                "completed": 7,
                "duration": (1.5, 1),
                "rps": 4.6,
                "ttft": {"mean": 14.0, "p50": 14.4, "p95": 15.9},
                "tpot": {"mean": 1.7, "p50": 1.5, "p95": 3.0},
            },
        ],
    ),
]


@pytest.mark.parametrize(("folder", "version", "printed"), GUIDELLM, ids=[g[0] for g in GUIDELLM])
def test_guidellm_reports_match_what_guidellm_printed(folder, version, printed):
    parsed = read(FORMATS / folder / "benchmarks.json", gpu="RTX 4090", gpu_count=1)
    assert parsed.importer == "guidellm" and len(parsed.runs) == 1
    run = parsed.runs[0]
    assert (run.tool, run.tool_version, run.model) == ("guidellm", version, "tiny-llama")
    assert (run.dataset, run.input_len, run.output_len) == ("synthetic", 32, 16)
    # constant@2, constant@4 as configured; stored at the rate its request_start_time says
    # each was really sent at (0.4 and 0.6 sent the second level at about half of it: said so)
    assert [p.configured_rate_rps for p in run.points] == [2.0, 4.0]
    for point in run.points:
        if point.requests is None:  # 0.3 keeps no per-request timings: the configured rate
            assert point.offered_rate_rps == point.configured_rate_rps
            continue
        starts = point.requests.start_s
        sent = (len(starts) - 1) / (max(starts) - min(starts))
        assert point.offered_rate_rps == pytest.approx(sent)
        apart = abs(sent - point.configured_rate_rps) > 0.05 * point.configured_rate_rps
        assert any("configured at" in note for note in point.notes) == apart
    assert len(run.points) > 0  # a loop over nothing asserts nothing
    for point, shown in zip(run.points, printed, strict=True):
        assert point.completed == point.requests_sent == shown["completed"] and point.failed == 0
        assert point.duration_s == near(*shown["duration"])
        # throughput by our definition (successful requests over the measured duration), which
        # GuideLLM's time-averaged rate approaches
        assert point.request_throughput_rps == pytest.approx(point.completed / point.duration_s)
        assert point.request_throughput_rps == pytest.approx(shown["rps"], rel=0.03, abs=0.05)
        assert point.output_throughput_tps == pytest.approx(16 * point.completed / point.duration_s)
        for ours in ("ttft", "tpot"):  # GuideLLM's "ITL" is our TPOT
            assert len(shown[ours]) > 0  # a loop over nothing asserts nothing
            for stat, value in shown[ours].items():
                assert getattr(point, f"{ours}_{stat}_ms") == near(value, 1), (ours, stat)
        if "e2el_mean_s" in shown:
            assert point.e2el_mean_ms / 1000 == near(shown["e2el_mean_s"], 2)
        assert point.itl_mean_ms is None  # GuideLLM has no chunk-gap ITL


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@pytest.mark.parametrize("folder", ["guidellm-0.3.1", "guidellm-0.4.0", "guidellm-0.6.1"])
def test_guidellm_yaml_holds_the_same_runs_as_json(folder):
    from_json = read(FORMATS / folder / "benchmarks.json", gpu="RTX 4090", gpu_count=1)
    from_yaml = read(FORMATS / folder / "benchmarks.yaml", gpu="RTX 4090", gpu_count=1)
    assert [p.model_dump() for p in from_yaml.runs[0].points] == [
        p.model_dump() for p in from_json.runs[0].points
    ]


def test_guidellm_warnings_are_passed_on():
    parsed = read(FORMATS / "guidellm-0.8.1" / "benchmarks.json", gpu="RTX 4090", gpu_count=1)
    assert any("GuideLLM warned: mean generation delay" in w for w in parsed.warnings)
    with pytest.raises(InputError, match="GuideLLM does not record the hardware"):
        read(FORMATS / "guidellm-0.8.1" / "benchmarks.json")


# -- AIPerf and GenAI-Perf ------------------------------------------------------------------------

# as printed: request throughput, output token throughput (2 decimals); TTFT, request latency
# and "inter token latency" (our TPOT) in ms at avg / p99 / p90
AIPERF = [
    (
        "aiperf-0.1.1",
        None,
        6.10,
        121.09,
        (12.87, 59.38, 14.25),
        (41.96, 69.07, 59.31),
        (1.56, 2.89, 2.23),
    ),
    (
        "aiperf-0.2.0",
        None,
        5.98,
        116.60,
        (13.90, 39.69, 21.91),
        (76.26, 361.43, 88.61),
        (3.51, 20.03, 3.89),
    ),
    (
        "aiperf-0.13.0",
        "0.13.0",
        3.31,
        66.88,
        (13.32, 30.98, 20.94),
        (47.51, 125.87, 82.95),
        (1.79, 5.30, 3.32),
    ),
]


@pytest.mark.parametrize(
    ("folder", "version", "rps", "out_tps", "ttft", "e2el", "tpot"),
    AIPERF,
    ids=[a[0] for a in AIPERF],
)
def test_aiperf_exports_match_what_aiperf_printed(folder, version, rps, out_tps, ttft, e2el, tpot):
    parsed = read(FORMATS / folder / "profile_export_aiperf.json", gpu="RTX 4090", gpu_count=1)
    run, point = parsed.runs[0], parsed.runs[0].points[0]
    assert (run.tool, run.tool_version, run.model) == ("aiperf", version, "tiny-llama")
    assert (run.input_len, run.output_len) == (32, 16)
    # --request-rate 4 with AIPerf's default (poisson) arrivals
    assert (point.offered_rate_rps, point.burstiness, point.max_concurrency) == (4.0, 1.0, None)
    assert point.completed == 20 and point.stats_source.value == "reported"
    assert point.request_throughput_rps == near(rps, 2)
    assert point.output_throughput_tps == near(out_tps, 2)
    for ours, shown in (("ttft", ttft), ("e2el", e2el), ("tpot", tpot)):
        for stat, value in zip(("mean", "p99", "p90"), shown, strict=True):
            assert getattr(point, f"{ours}_{stat}_ms") == near(value, 2), (ours, stat)


@pytest.mark.parametrize("folder", ["aiperf-0.2.0", "aiperf-0.13.0"])
def test_aiperf_with_its_per_request_file_recomputes_latencies(folder, warehouse, tmp_path):
    copy = tmp_path / folder
    shutil.copytree(FORMATS / folder, copy)
    outcomes = {
        Path(o.file).name: o
        for o in ingest_paths(warehouse, [copy], ImportOptions(gpu="RTX 4090", gpu_count=1))
    }
    assert outcomes["profile_export_aiperf.json"].status is FileStatus.IMPORTED
    assert outcomes["profile_export.jsonl"].status is FileStatus.INCLUDED
    assert outcomes["inputs.json"].status is FileStatus.SKIPPED
    assert outcomes["profile_export_aiperf.csv"].status is FileStatus.SKIPPED
    assert not [o for o in outcomes.values() if o.status is FileStatus.REJECTED]
    assert not any("differs" in w for w in outcomes["profile_export_aiperf.json"].warnings)
    row = benchmark_points(warehouse).iloc[0]
    assert row["stats_source"] == "recomputed"
    summary = read(copy / "profile_export_aiperf.json", gpu="RTX 4090", gpu_count=1)
    reported = summary.runs[0].points[0]
    # the means agree with what AIPerf reported; percentiles come from the same requests
    for field in ("ttft_mean_ms", "tpot_mean_ms", "itl_mean_ms", "e2el_mean_ms"):
        assert row[field] == pytest.approx(getattr(reported, field), rel=1e-3), field
    assert row["ttft_p99_ms"] == pytest.approx(reported.ttft_p99_ms, rel=0.05)
    assert row["request_throughput_rps"] == pytest.approx(reported.request_throughput_rps)


def test_aiperf_per_request_file_alone_is_refused_with_the_file_to_use():
    with pytest.raises(InputError, match=r"together with the profile_export_aiperf\.json"):
        read(FORMATS / "aiperf-0.13.0" / "profile_export.jsonl", gpu="RTX 4090", gpu_count=1)


def test_aiperf_per_request_file_from_another_run_is_refused(tool_outputs):
    summary = tool_outputs / AIPERF_REPO / "examples-artifacts-run1"
    data = (summary / "profile_export_aiperf.json").read_bytes()
    companion = (FORMATS / "aiperf-0.13.0" / "profile_export.jsonl").read_bytes()
    options = ImportOptions(gpu="H100", gpu_count=1, companions={"profile_export.jsonl": companion})
    with pytest.raises(InputError, match="not the same run"):
        parse(FileInput.from_bytes("profile_export_aiperf.json", data), options)


def test_genai_perf_export_matches_what_genai_perf_printed():
    folder = FORMATS / "genai-perf-0.0.16" / "tiny-llama-openai-completions-request_rate4.0"
    parsed = read(folder / "profile_export_genai_perf.json", gpu="RTX 4090", gpu_count=1)
    run, point = parsed.runs[0], parsed.runs[0].points[0]
    assert (run.tool, run.model, run.input_len, run.output_len) == (
        "genai-perf",
        "tiny-llama",
        32,
        16,
    )
    assert point.offered_rate_rps == 4.0 and point.completed == 20
    assert point.burstiness is None  # perf_analyzer's arrival distribution is not in the file
    assert point.request_throughput_rps == near(4.18, 2)
    assert point.output_throughput_tps == near(84.87, 2)
    for ours, shown in (
        ("ttft", (11.21, 38.42, 13.77)),
        ("e2el", (30.58, 42.78, 34.53)),
        ("tpot", (1.04, 1.62, 1.33)),
    ):
        for stat, value in zip(("mean", "p99", "p90"), shown, strict=True):
            assert getattr(point, f"{ours}_{stat}_ms") == near(value, 2), (ours, stat)
    with pytest.raises(InputError, match=r"read with the profile_export_genai_perf\.json"):
        read(folder / "profile_export.json", gpu="RTX 4090", gpu_count=1)


def _with_telemetry(metrics: dict) -> bytes:
    """The real AIPerf 0.13.0 export with a telemetry block laid out as AIPerf documents it."""
    export = json.loads((FORMATS / "aiperf-0.13.0" / "profile_export_aiperf.json").read_text())
    gpu = {"gpu_index": 0, "gpu_name": "NVIDIA H100 80GB HBM3", "metrics": metrics}
    export["telemetry_data"]["endpoints"] = {"localhost:9401": {"gpus": {"gpu_0": gpu}}}
    return json.dumps(export).encode()


def test_aiperf_gpu_telemetry_gives_energy_and_the_gpu():
    data = _with_telemetry(
        {
            "gpu_power_usage": {"unit": "W", "avg": 348.69, "min": 120.57, "max": 386.02},
            "energy_consumption": {
                "unit": "MJ",
                "avg": 0.2378,
                "min": 0.229901671,
                "max": 0.246497393,
            },
        }
    )
    parsed = parse(FileInput.from_bytes("e.json", data), ImportOptions(gpu_count=1))
    run, point = parsed.runs[0], parsed.runs[0].points[0]
    assert run.gpu_model == "h100-sxm" and run.gpu_count == 1
    assert point.gpu_energy_j == pytest.approx((0.246497393 - 0.229901671) * 1e6)
    assert point.avg_power_w == pytest.approx(348.69)
    assert point.energy_method.value == "nvml_counter"
    # mJ is not MJ; a unit we do not know leaves the energy unknown rather than guessed
    millis = _with_telemetry({"energy_consumption": {"unit": "mJ", "min": 1000.0, "max": 5000.0}})
    point = parse(FileInput.from_bytes("e.json", millis), ImportOptions(gpu_count=1)).runs[0]
    assert point.points[0].gpu_energy_j == pytest.approx(4.0)
    odd = _with_telemetry({"energy_consumption": {"unit": "BTU", "min": 1.0, "max": 5.0}})
    point = parse(FileInput.from_bytes("e.json", odd), ImportOptions(gpu_count=1)).runs[0]
    assert point.points[0].gpu_energy_j is None


# -- vllm bench serve, two results appended to one file ---------------------------------------


def test_vllm_bench_serve_appended_results_match_what_it_printed():
    parsed = read(FORMATS / "vllm-bench-serve-0.32.0" / "vllm-bench-serve.json")
    # two levels of one setup: one run with two points
    assert len(parsed.runs) == 1 and parsed.runs[0].tool == "vllm bench serve"
    run = parsed.runs[0]
    # vLLM 0.32 records the device itself; on this CPU host it says "cpu", a device of the catalog
    assert (run.gpu_label, run.gpu_known, run.gpu_count) == ("cpu", True, 1)
    printed = [  # rps, output tok/s, total tok/s, TTFT mean/median/p99, TPOT mean, ITL mean
        (4.0, 3.98, 31.81, 159.83, (18.83, 16.80, 56.33), 6.12, 6.54),
        (8.0, 7.93, 63.44, 318.79, (14.36, 10.24, 75.06), 2.23, 2.23),
    ]
    assert len(run.points) > 0  # a loop over nothing asserts nothing
    for point, (rate, rps, out, total, ttft, tpot, itl) in zip(run.points, printed, strict=True):
        # the rate it was asked for, and the rate its start_times say it really sent at
        assert (point.configured_rate_rps, point.burstiness, point.completed) == (rate, 1.0, 20)
        assert point.requests is not None and len(point.requests.start_s) == 20
        span = max(point.requests.start_s) - min(point.requests.start_s)
        assert point.offered_rate_rps == pytest.approx(19 / span) != rate
        assert point.request_throughput_rps == near(rps, 2)
        assert point.output_throughput_tps == near(out, 2)
        assert point.total_throughput_tps == near(total, 2)
        for stat, value in zip(("mean", "p50", "p99"), ttft, strict=True):
            assert getattr(point, f"ttft_{stat}_ms") == near(value, 2)
        assert point.tpot_mean_ms == near(tpot, 2) and point.itl_mean_ms == near(itl, 2)
    with pytest.raises(InputError, match="the file says 'cpu' but --gpu says"):
        read(FORMATS / "vllm-bench-serve-0.32.0" / "vllm-bench-serve.json", gpu="RTX 4090")


# -- a whole folder of everything the tools wrote ----------------------------------------------


def every_tool_folder() -> tuple[list[Path], dict[FileStatus, int]]:
    """The folders of every tool's files: fleetplan's own runs, and the files from the tools'
    repositories when ../shared/data/tool-outputs is there; with what they add to the counts."""
    shared = tool_outputs_dir()
    if shared is None:
        return [FORMATS], {}
    # aiperf-repo-example: two exports; llmperf: a summary with its per-request file
    return [FORMATS, shared / AIPERF_REPO, shared / LLMPERF], {FileStatus.IMPORTED: 3}


@pytest.mark.slow  # imports a folder of every tool's outputs: about 10 s
def test_folder_of_every_tool_imports_results_and_passes_over_the_rest(warehouse):
    options = ImportOptions(gpu="RTX 4090", gpu_count=1)
    folders, shared = every_tool_folder()
    outcomes = list(ingest_paths(warehouse, folders, options))
    by_status: dict[FileStatus, list[str]] = {}
    # The folders of the tools' options that change what a level means (a rate with a cap, a
    # ramp, a trace replayed, even gaps), run 2026-12-07: each has its own tests
    # (tests/test_level_options.py); here, nothing of theirs is refused and each imports.
    options_folders = {
        "vllm-bench-serve-0.32.0-options": 8,
        "aiperf-0.13.0-rate-and-cap": 1,
        "guidellm-0.8.1-replay": 1,
        "guidellm-0.8.1-rate-and-cap": 1,
        "inference-perf-0.7.0-constant": 2,
    }
    options_outcomes = []
    for outcome in outcomes:
        root = next(f for f in folders if Path(outcome.file).is_relative_to(f))
        name = Path(outcome.file).relative_to(root if root == FORMATS else root.parent)
        if root == FORMATS and name.parts[0] in options_folders:
            options_outcomes.append((name.parts[0], outcome))
            continue
        by_status.setdefault(outcome.status, []).append(str(name))
    assert all(o.status is not FileStatus.REJECTED for _, o in options_outcomes)
    for folder, count in options_folders.items():
        imported_there = [o for f, o in options_outcomes if f == folder]
        assert sum(o.status is FileStatus.IMPORTED for o in imported_there) == count, folder
    # the refusals: vLLM's file says "cpu" while --gpu says RTX 4090; SGLang's client against a
    # vLLM server names no model (asked for: --model)
    assert by_status.get(FileStatus.REJECTED) == [
        "sglang-0.5.23/sglang-details.jsonl",
        "sglang-0.5.23/sglang.jsonl",
        "vllm-bench-serve-0.32.0/vllm-bench-serve.json",
    ]
    refused = [o for o in outcomes if o.file.endswith(".jsonl") and "sglang" in o.file]
    assert refused and all("--model" in o.message for o in refused)
    imported = by_status[FileStatus.IMPORTED]
    # 8, and genai-bench 0.0.5's levels: 4 in its experiment, 1 in the one with a warm-up
    assert len(imported) == 8 + 5 + shared.get(FileStatus.IMPORTED, 0), imported
    # GuideLLM's YAML report beside its JSON one is the same run in other bytes: present already
    yaml = [f"guidellm-{v}/benchmarks.yaml" for v in ("0.3.1", "0.4.0", "0.6.1")]
    assert by_status[FileStatus.DUPLICATE] == yaml
    assert all(
        name.endswith(
            (
                "benchmarks.json",
                "benchmarks.yaml",
                "_aiperf.json",
                "_genai_perf.json",
                "_summary.json",
            )
        )
        or (name.startswith("genai-bench-0.0.5") and name.endswith("s.json"))
        for name in imported
    )
    included = ["aiperf-0.13.0/profile_export.jsonl", "aiperf-0.2.0/profile_export.jsonl"]
    if shared:
        included.append(f"{LLMPERF}/{LLMPERF_REQUESTS}")
    assert sorted(by_status[FileStatus.INCLUDED]) == included
    # notes and logs beside the results are listed as skipped, saying what they are, not read
    notes = [o for o in outcomes if o.file.endswith((".txt", ".md"))]
    assert notes and all(o.status is FileStatus.SKIPPED and "not read" in o.message for o in notes)
    assert all(
        Path(name).name
        in {"inputs.json", "server_metrics_export.json", "profile_export.json"} | GENAI_BENCH
        or name.endswith((".csv", ".txt", ".md"))
        for name in by_status[FileStatus.SKIPPED]
    )
    # genai-bench's metadata (read with each level) and its Excel summary, in both folders
    assert sum(n.endswith("experiment_metadata.json") for n in by_status[FileStatus.SKIPPED]) == 2
    assert sum(n.endswith("_summary.xlsx") for n in by_status[FileStatus.SKIPPED]) == 2
    # again: every imported file is recognised as already present, nothing doubles
    points = len(benchmark_points(warehouse))
    again = list(ingest_paths(warehouse, folders, options))
    duplicates = len(imported) + sum(options_folders.values()) + len(yaml)
    assert sum(o.status is FileStatus.DUPLICATE for o in again) == duplicates
    assert len(benchmark_points(warehouse)) == points


def test_text_and_other_csv_files_get_a_message_that_says_what_they_are(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("Run on Tuesday with the new driver\n")
    with pytest.raises(InputError, match="not a result file: text that is not JSON"):
        read(notes)
    other = tmp_path / "sheet.csv"
    other.write_text("when,who,what\n1,2,3\n")
    with pytest.raises(InputError, match="a CSV table without fleetplan's columns"):
        read(other)
    with pytest.raises(InputError, match="GuideLLM's CSV view of a report"):
        read(FORMATS / "guidellm-0.6.1" / "benchmarks.csv")


def test_genai_perf_gpu_telemetry_gives_energy_per_gpu_summed():
    folder = FORMATS / "genai-perf-0.0.16" / "tiny-llama-openai-completions-request_rate4.0"
    export = json.loads((folder / "profile_export_genai_perf.json").read_text())
    # GenAI-Perf's layout: telemetry_stats.<metric>.gpuN, energy in MJ (its DCGM collector)
    export["telemetry_stats"] = {
        "gpu_power_usage": {"unit": "W", "gpu0": {"avg": 300.0}, "gpu1": {"avg": 310.0}},
        "energy_consumption": {
            "unit": "MJ",
            "gpu0": {"avg": 6.3, "min": 6.2, "max": 6.4},
            "gpu1": {"avg": 7.3, "min": 7.25, "max": 7.35},
        },
    }
    data = json.dumps(export).encode()
    parsed = parse(FileInput.from_bytes("e.json", data), ImportOptions(gpu="H100", gpu_count=2))
    point = parsed.runs[0].points[0]
    assert point.gpu_energy_j == pytest.approx((0.2 + 0.1) * 1e6)
    assert point.avg_power_w == pytest.approx(610.0)
    assert point.energy_method.value == "nvml_counter"


def test_llmperf_summaries_kept_by_concurrency_in_one_file_are_one_run(tool_outputs):
    """philschmid/llmperf-bench keeps a sweep's LLMPerf summaries in one `..._results.json`,
    keyed by concurrency ("not a format" before); its condensed `..._summary.json` view is
    skipped, naming the file to import."""
    summary = json.loads((tool_outputs / LLMPERF / LLMPERF_SUMMARY).read_text())
    sweep = {str(c): summary | {"num_concurrent_requests": c} for c in (4, 8, 16)}
    options = ImportOptions(gpu="NVIDIA A10G", gpu_count=4)
    parsed = parse(FileInput.from_bytes("m_tp_1_results.json", json.dumps(sweep).encode()), options)
    (run,) = parsed.runs
    assert [p.max_concurrency for p in run.points] == [4, 8, 16]
    assert len(parsed.warnings) == len(set(parsed.warnings))
    view = {str(c): {"concurrency": c, "first-time-to-token_mean_in_ms": 40.0} for c in (1, 4)}
    with pytest.raises(NotResultsError, match=r"import the \.\.\._results\.json beside it"):
        parse(FileInput.from_bytes("m_tp_1_summary.json", json.dumps(view).encode()), options)
