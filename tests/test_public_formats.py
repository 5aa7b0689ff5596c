"""The files people have (issue 20): inference-perf stage reports and InferenceX results from
their public repositories (read from ../shared/data/tool-outputs, never copied here), GenAI-Perf
exports whose stated figures disagree, GPU counts in labels, a warehouse made by ingest alone."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks.inputs.fuzzing import seed_files
from benchmarks.inputs.shared_data import tool_outputs_dir
from benchmarks.inputs.vllm_results import make_result
from fleetplan.core.contract import EnergyMethod, Point
from fleetplan.core.errors import InputError, NotResultsError
from fleetplan.core.gpus import gpu_count_in_label
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.preview import FileStatus
from fleetplan.warehouse.queries import benchmark_points

SHARED = tool_outputs_dir()
needs_shared = pytest.mark.skipif(SHARED is None, reason="../shared/data/tool-outputs is absent")
H100_7B = "inference-sim-training-h100/20260217-155451-llama-2-7b-tp1-codegen"
H100_70B = "inference-sim-training-h100/20260217-202857-llama-2-70b-tp4-general"
GLM = "inferencex-token-position-h200/glm-5/glm5_fp8_vllm_tp8_isl10240_osl128_conc16.json"
TOGETHER = "inferencex-together-b200/vllm/gptoss-fp4/1k1k/untuned/conc128.json"
SGLANG = "inferencex-together-b200/sglang/dsr1-fp4/1k1k/tuned/conc128.json"


def read(path: Path, **options) -> object:
    return parse(FileInput.from_bytes(str(path), path.read_bytes()), ImportOptions(**options))


# -- inference-perf --------------------------------------------------------------------------


@needs_shared
def test_an_inference_perf_folder_imports_its_stages_with_the_servers_settings(warehouse):
    folder = SHARED / H100_70B
    outcomes = {
        Path(o.file).name: o
        for o in ingest_paths(warehouse, [folder], ImportOptions(gpu="h100-sxm"))
    }
    assert not [o for o in outcomes.values() if o.status is FileStatus.REJECTED]
    assert outcomes["stage_0_lifecycle_metrics.json"].status is FileStatus.IMPORTED
    assert outcomes["stage_1_lifecycle_metrics.json"].status is FileStatus.IMPORTED
    summary = outcomes["summary_lifecycle_metrics.json"]
    assert summary.status is FileStatus.SKIPPED and "not a level" in summary.message
    for name in ("config.yaml", "exp-config.yaml", "profile.yaml"):
        assert outcomes[name].status is FileStatus.SKIPPED, outcomes[name]
        assert "not results" in outcomes[name].message
    rows = sorted(benchmark_points(warehouse).to_dict("records"), key=lambda r: r["level_index"])
    rows = sorted(rows, key=lambda r: r["configured_rate_rps"])
    # the model from config.yaml, 4 GPUs from exp-config.yaml's tensor_parallelism
    assert {(r["model"], r["gpu_model"], r["gpu_count"]) for r in rows} == {
        ("meta-llama/Llama-2-70b-hf", "h100-sxm", 4)
    }
    low, high = rows
    # requested 8 and 20 req/s, achieved (really sent) 8.00127 and 20.0002
    assert (low["configured_rate_rps"], high["configured_rate_rps"]) == (8.0, 20.0)
    assert low["offered_rate_rps"] == pytest.approx(8.00127, rel=1e-5)
    assert high["offered_rate_rps"] == pytest.approx(20.0002, rel=1e-5)
    # every percentile, seconds to ms: TTFT p50 0.0551921 s, p99 0.120615 s
    assert low["ttft_p50_ms"] == pytest.approx(55.1921, rel=1e-5)
    assert low["ttft_p99_ms"] == pytest.approx(120.615, rel=1e-5)
    # ... but not its TPOT (p99 0.0128055 s) or ITL, which this inference-perf (before v0.5.0:
    # no benchmark_time_seconds) took per streamed message (4.6 s from first token to end over
    # 250 tokens is 18.5 ms a token, not 9.45, its P90), at every stage
    assert all(math.isnan(r["tpot_p99_ms"]) and math.isnan(r["itl_p99_ms"]) for r in rows)
    assert all("before v0.5.0" in r["notes"] for r in rows)
    assert low["completed"] == 4800 and low["failed"] == 0
    assert low["output_throughput_tps"] == pytest.approx(1955.05, rel=1e-5)
    assert all(r["e2el_p99_ms"] for r in rows)
    # its shared-prefix data: 10 groups of 10 prompts, cycled through each stage's requests
    assert all(json.loads(r["run_metadata"])["distinct_prompts"] == "100" for r in rows)


@needs_shared
def test_an_inference_perf_stage_without_its_config_asks_for_the_model(tmp_path):
    stage = SHARED / H100_7B / "results" / "stage_0_lifecycle_metrics.json"
    with pytest.raises(InputError, match="does not name the model: give --model"):
        read(stage, gpu="h100-sxm", gpu_count=1)
    (run,) = read(stage, gpu="h100-sxm", gpu_count=1, model="m").runs
    assert run.points[0].configured_rate_rps == 5.0
    assert run.points[0].offered_rate_rps == pytest.approx(5.000059, rel=1e-6)


@needs_shared
def test_the_inference_perf_summary_is_not_a_level():
    summary = SHARED / H100_7B / "results" / "summary_lifecycle_metrics.json"
    with pytest.raises(NotResultsError, match="summary over all stages"):
        read(summary, gpu="h100-sxm", gpu_count=1, model="m")


@needs_shared
def test_every_inference_perf_stage_of_the_shared_runs_imports():
    stages = sorted(
        (SHARED / "inference-sim-training-h100").rglob("stage_*_lifecycle_metrics.json")
    )
    assert len(stages) >= 20
    counted = 0
    for stage in stages:
        context = {
            "config.yaml": (stage.parent / "config.yaml").read_bytes(),
            "exp-config.yaml": (stage.parent.parent / "exp-config.yaml").read_bytes(),
        }
        options = ImportOptions(gpu="h100-sxm", companions=context)
        parsed = parse(FileInput.from_bytes(str(stage), stage.read_bytes()), options)
        point = parsed.runs[0].points[0]
        assert point.ttft_p99_ms and point.e2el_p99_ms
        # the version these runs were made with (before v0.5.0: no benchmark_time_seconds)
        # timed streamed messages, not tokens: no TPOT or ITL at any stage, and the note says
        # why (`importers/inference_perf_tokens`)
        assert point.tpot_p99_ms is None and point.itl_p99_ms is None, stage
        (why,) = [n for n in point.notes if "TPOT and ITL not stored" in n]
        assert "before v0.5.0" in why
        # where the figures alone prove it too (two messages a token), read as a newer report:
        # most stages
        newer = json.loads(stage.read_bytes()) | {"benchmark_time_seconds": 1.0}
        data = json.dumps(newer).encode()
        again = parse(FileInput.from_bytes(str(stage), data), options).runs[0].points[0]
        counted += again.tpot_p99_ms is None
    assert counted >= len(stages) // 2


# -- InferenceX --------------------------------------------------------------------------------


@needs_shared
def test_inferencex_trimmed_results_keep_their_latencies_in_ms():
    (run,) = read(SHARED / GLM, gpu="h200").runs
    point = run.points[0]
    # median_ttft 3.13824 s, p99_ttft 16.5618 s, p99_tpot 0.196229 s in the file
    assert point.ttft_p50_ms == pytest.approx(3138.2447, rel=1e-6)
    assert point.ttft_p99_ms == pytest.approx(16561.81, rel=1e-6)
    assert point.tpot_p99_ms == pytest.approx(196.2292, rel=1e-6)
    assert point.e2el_p99_ms == pytest.approx(30149.85, rel=1e-6)
    # --max-concurrency 16 with request_rate inf: a closed loop, not a burst
    assert (point.max_concurrency, point.offered_rate_rps) == (16, None)
    # 8 GPUs from the file's name (tp8), fp8, and the fixed random shape
    assert (run.gpu_model, run.gpu_count, run.tensor_parallel_size, run.dtype) == (
        "h200",
        8,
        8,
        "fp8",
    )
    assert (run.dataset, run.input_len, run.output_len) == ("random", 10240, 128)


@needs_shared
def test_every_inferencex_file_imports_with_its_p99s():
    files = sorted(SHARED.glob("inferencex-*/**/*.json"))
    assert len(files) >= 170
    for path in files:
        gpu = "h200" if "h200" in str(path) else None
        (run,) = read(path, gpu=gpu).runs
        point = run.points[0]
        assert point.ttft_p99_ms and point.tpot_p99_ms and point.max_concurrency, path


@needs_shared
def test_the_together_runner_layout_carries_its_measured_power():
    (run,) = read(SHARED / SGLANG).runs
    point = run.points[0]
    assert (run.gpu_model, run.gpu_count, run.engine) == ("b200", 8, "sglang")
    assert (point.max_concurrency, point.completed) == (128, 1277)
    assert point.ttft_p99_ms == pytest.approx(1667.4339, rel=1e-6)
    assert point.tpot_p99_ms == pytest.approx(36.47419, rel=1e-6)
    # the host's 8 GPUs are the server's: their total average power, over the level
    assert point.avg_power_w == 4573.9
    assert point.energy_method is EnergyMethod.POWER_INTEGRATION
    assert point.gpu_energy_j == pytest.approx(4573.9 * point.duration_s)
    # a TP4 server sampled on an 8-GPU host: the mean per GPU x 4, with a warning
    parsed = read(SHARED / TOGETHER)
    (run,) = parsed.runs
    assert run.gpu_count == 4 and run.points[0].avg_power_w == pytest.approx(334.5 * 4)
    assert any("idle GPUs" in w for w in parsed.warnings)


def test_a_latency_a_reader_cannot_map_is_refused_naming_it():
    result = make_result(detailed=False)
    seconds = {k: v for k, v in result.items() if not k.endswith("_ms")}
    with pytest.raises(InputError) as caught:  # a trimmed file with a percentile we cannot map
        parse(
            FileInput.from_bytes("r.json", json.dumps(seconds | {"p75_ttft": 0.2}).encode()),
            ImportOptions(gpu="h200", gpu_count=8),
        )
    assert caught.value.field == "p75_ttft" and "refused rather than dropped" in str(caught.value)
    # a vLLM result with one latency in seconds among its ms keys: refused, never dropped
    with pytest.raises(InputError) as caught:
        parse(
            FileInput.from_bytes("v.json", json.dumps(result | {"median_ttft": 0.2}).encode()),
            ImportOptions(gpu="h200", gpu_count=8),
        )
    assert caught.value.field == "median_ttft"


# -- consistency: only stated figures, counting differences kept ---------------------------------


def genai_perf_25(output_tps: float) -> bytes:
    """A GenAI-Perf 25.x profile export with the figures of issue 20 (openai/gpt-oss-20b): 66
    requests, 124.394 output tokens (mean), a request throughput that gives 209.822 s, and no
    duration of its own."""
    _name, data = seed_files()["genai-perf"]
    document = json.loads(data)
    document["request_count"]["avg"] = 66.0
    document["request_throughput"]["avg"] = 66 / 209.822
    document["output_sequence_length"]["avg"] = 124.394
    document["output_token_throughput"]["avg"] = output_tps
    document.pop("benchmark_duration", None)
    return json.dumps(document).encode()


def genai_perf_export(
    *, completed: int, output_tokens: float, rps: float, output_tps: float, sent_at: float
) -> bytes:
    """A GenAI-Perf 25.x profile export with these figures and no duration of its own."""
    _name, data = seed_files()["genai-perf"]
    document = json.loads(data)
    document["request_count"]["avg"] = float(completed)
    document["request_throughput"]["avg"] = rps
    document["output_sequence_length"]["avg"] = output_tokens
    document["output_token_throughput"]["avg"] = output_tps
    document["input_config"]["perf_analyzer"]["stimulus"] = {"request_rate": sent_at}
    document.pop("benchmark_duration", None)
    return json.dumps(document).encode()


def _imported(data: bytes) -> tuple[Point, tuple[str, ...]]:
    parsed = parse(
        FileInput.from_bytes("profile_export_genai_perf.json", data),
        ImportOptions(gpu="h100-sxm", gpu_count=1),
    )
    return parsed.runs[0].points[0], parsed.warnings


def test_a_real_genai_perf_export_whose_figures_count_differently_imports_with_a_note():
    point, warnings = _imported(genai_perf_25(25.8248))
    # the counts as stated; the output throughput a plan uses is theirs: 124.394 x 66 / 209.822
    assert point.output_tokens_mean == 124.394
    assert point.completed == 66 and point.duration_s == pytest.approx(209.822)
    assert point.output_throughput_tps == pytest.approx(124.394 * 66 / 209.822)
    (note,) = [n for n in point.notes if "output throughput" in n]
    assert "output throughput 25.8248 tok/s as the file states" in note and "both kept" in note
    assert "fleetplan plans with 39.1284" in note
    assert "duration" not in note  # fleetplan's own derivation is not held against the file
    assert any("output throughput 25.8248" in w for w in warnings)


@pytest.mark.parametrize(
    ("completed", "tokens", "rps", "stated"),
    [
        (66, 124.394, 66 / 209.822, 25824.8),  # a thousand times the counts: still a note
        (47, 73.5143, 0.470103, 12.0958),  # GenAI-Perf 25.07, openai/gpt-oss-20b (issue 32): 2.9x
    ],
)
def test_a_genai_perf_output_throughput_apart_by_any_ratio_is_a_note(
    completed, tokens, rps, stated
):
    data = genai_perf_export(
        completed=completed, output_tokens=tokens, rps=rps, output_tps=stated, sent_at=rps
    )
    point, _warnings = _imported(data)
    assert point.output_throughput_tps == pytest.approx(tokens * rps)
    assert point.request_throughput_rps == pytest.approx(rps)
    (note,) = point.notes
    assert f"output throughput {stated:.6g} tok/s as the file states" in note
    assert f"fleetplan plans with {tokens * rps:.6g}" in note


def test_a_genai_perf_request_throughput_above_its_send_rate_is_refused():
    data = genai_perf_export(
        completed=66, output_tokens=124.394, rps=66 / 209.822 * 1000, output_tps=25.8, sent_at=0.3
    )
    with pytest.raises(InputError, match="no server completes requests faster than they are sent"):
        _imported(data)


# -- GPUs, the catalog and the warehouse -------------------------------------------------------


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("4xNVIDIA_L40S", ("NVIDIA_L40S", 4)),
        ("8x H100", ("H100", 8)),
        ("2 x RTX 4090", ("RTX 4090", 2)),
        ("NVIDIA L40S", None),
        ("x4090", None),
        # after the name: SkyPilot's and Modal's accelerator:count, an x and a count
        ("H100:8", ("H100", 8)),
        ("A100-80GB:4", ("A100-80GB", 4)),
        ("nvidia-h100-80gb:8", ("nvidia-h100-80gb", 8)),
        ("H100x8", ("H100", 8)),
        ("A10G x 4", ("A10G", 4)),
        ("RTX 4090x2", ("RTX 4090", 2)),
        # names that end in an x or in digits are names
        ("RTX 4090", None),
        ("Radeon RX 580", None),
        ("MI300X 8", None),
        ("GB200 NVL72", None),
        ("NVIDIA H100 80GB HBM3", None),
        ("H100:0", None),
        ("Quantum Tensor X9", None),
        ("H100 x8", ("H100", 8)),
    ],
)
def test_a_gpu_count_in_the_label_is_read(label, expected):
    assert gpu_count_in_label(label) == expected


def test_a_vllm_file_whose_gpu_label_counts_its_gpus_needs_no_gpu_count():
    result = make_result(detailed=False) | {"gpu_name": "4xNVIDIA_L40S"}
    result.pop("gpu_count", None)
    (run,) = parse(FileInput.from_bytes("r.json", json.dumps(result).encode())).runs
    assert (run.gpu_model, run.gpu_count, run.gpu_label) == ("l40s", 4, "NVIDIA_L40S")


def test_a_warehouse_made_by_ingest_alone_knows_its_gpus(cli, tmp_path, warehouse_path):

    path = tmp_path / "r.json"
    path.write_text(json.dumps(make_result(detailed=False) | {"gpu_name": "cpu"}))
    done = cli("ingest", "--warehouse", warehouse_path, path, "--gpu-count", "1")
    assert done.returncode == 0, done
    import duckdb

    with duckdb.connect(str(warehouse_path), read_only=True) as raw:
        gpus = {row[0] for row in raw.execute("SELECT gpu_id FROM gpu_catalog").fetchall()}
        power = raw.execute(
            "SELECT rated_power_w FROM gpu_catalog WHERE gpu_id = 'rtx-4090'"
        ).fetchone()
    assert {"rtx-4090", "h100-sxm", "cpu"} <= gpus and power == (450.0,)


def test_nothing_imported_leaves_no_warehouse_file_behind(cli, tmp_path):

    target = tmp_path / "new.duckdb"
    notes = tmp_path / "notes.json"
    notes.write_text('{"hello": 1}')
    done = cli("ingest", "--warehouse", target, notes)
    assert done.returncode == 1 and "rejected" in done.stdout
    assert not target.exists()


def test_closed_loop_vllm_levels_are_not_bursts():
    result = make_result(detailed=False) | {"request_rate": "inf", "max_concurrency": 8}
    (run,) = parse(
        FileInput.from_bytes("r.json", json.dumps(result).encode()),
        ImportOptions(gpu="rtx-4090", gpu_count=1),
    ).runs
    point = run.points[0]
    assert point.offered_rate_rps is None and point.max_concurrency == 8
    assert math.isinf(point.configured_rate_rps)


def test_cpu_runs_plan_and_say_their_energy_is_unknown(cli, tmp_path, warehouse_path):
    from tests.support.paths import ROOT

    runs = ROOT / "tests" / "fixtures" / "real_clients" / "vllm-rate"
    if not runs.is_dir():
        pytest.skip("the real clients' outputs are not here")
    cli("ingest", "--warehouse", warehouse_path, runs, check=True)
    scenario = tmp_path / "cpu.json"
    scenario.write_text(
        json.dumps(
            {
                "name": "cpu",
                "model": "tiny-llama",
                "classes": [{"name": "chat", "rate_rps": 10.0, "ttft_p99_ms": 2000}],
                "gpus": [{"gpu_model": "cpu", "hourly_usd": 0.1, "site": "dc"}],
                "sites": [
                    {"name": "dc", "electricity_usd_per_kwh": 0.12, "grid_gco2_per_kwh": 350}
                ],
            }
        )
    )
    done = cli("plan", "--warehouse", warehouse_path, "--scenario", scenario)
    assert done.returncode == 0, done
    assert "x 1x cpu" in done.stdout and "energy unknown" in done.stdout
    capacity = cli(
        "capacity",
        "--warehouse",
        warehouse_path,
        "--model",
        "tiny-llama",
        "--gpu",
        "cpu",
        "--gpu-count",
        "1",
        "--ttft-p99",
        "2000",
    )
    assert (
        capacity.returncode == 0
        and "tiny-llama on 1x cpu (vllm), unlabelled traffic\n" in capacity.stdout
    )


def test_a_zip_of_a_tools_output_folder_previews_as_the_folder_imports(warehouse, tmp_path):
    import io
    import zipfile

    from fleetplan.warehouse.preview import preview_uploads
    from tests.support.paths import ROOT

    folder = ROOT / "tests" / "fixtures" / "real_clients" / "aiperf-rate"
    if not folder.is_dir():
        pytest.skip("the real clients' outputs are not here")
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, f"aiperf-rate/{path.relative_to(folder)}")
    previews = preview_uploads(warehouse, [("run.zip", packed.getvalue())], CPU_OPTIONS)
    uploaded = {p.file.removeprefix("run.zip/aiperf-rate/"): p.status for p in previews}
    imported = {
        str(Path(o.file).relative_to(folder)): o.status
        for o in ingest_paths(warehouse, [folder], CPU_OPTIONS)
    }
    # the same files with the same status (hidden files left out of both), ready is imported
    same = {k: FileStatus.IMPORTED if v is FileStatus.READY else v for k, v in uploaded.items()}
    assert same == imported
    assert list(same.values()).count(FileStatus.IMPORTED) == 4
    assert FileStatus.REJECTED not in same.values()


CPU_OPTIONS = ImportOptions(gpu="cpu", gpu_count=1)


def test_an_inference_perf_stage_takes_its_gpu_count_from_kubernetes_manifests(tmp_path, warehouse):
    """manifests.yaml beside the results (several `---` documents, as `kubectl get -o yaml`
    writes them): the server's `nvidia.com/gpu` limit is its GPUs per server, and the manifests
    file itself is skipped as what it is, not rejected as broken YAML."""
    shutil = pytest.importorskip("shutil")
    run = Path(__file__).resolve().parent / "fixtures" / "real_clients" / "inference-perf-rate"
    for name in ("stage_0_lifecycle_metrics.json", "config.yaml"):
        shutil.copy(run / name, tmp_path / name)
    (tmp_path / "manifests.yaml").write_text(
        "apiVersion: v1\nkind: Service\nmetadata: {name: vllm}\n---\n"
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: vllm}\nspec:\n  template:\n"
        "    spec:\n      containers:\n      - name: vllm\n        resources:\n"
        '          limits: {"nvidia.com/gpu": 2, memory: 64Gi}\n'
    )
    outcomes = {
        Path(o.file).name: o
        for o in ingest_paths(warehouse, [tmp_path], ImportOptions(gpu="h100-sxm"))
    }
    assert outcomes["stage_0_lifecycle_metrics.json"].status is FileStatus.IMPORTED, outcomes
    assert outcomes["manifests.yaml"].status is FileStatus.SKIPPED
    (row,) = benchmark_points(warehouse).to_dict("records")
    assert (row["gpu_model"], row["gpu_count"]) == ("h100-sxm", 2)


@needs_shared
def test_a_stage_whose_exp_config_names_no_gpu_says_so_not_to_keep_it():
    """The upload's advice (issue 36): the experiment's exp-config.yaml was there and names
    its model and tensor parallelism but no GPU; the message says it names none, instead of
    asking to keep it beside the results."""
    stage = sorted((SHARED / "inference-sim-training-h100").glob("*/results/stage_0_*.json"))[0]
    context = {
        "config.yaml": (stage.parent / "config.yaml").read_bytes(),
        "exp-config.yaml": (stage.parent.parent / "exp-config.yaml").read_bytes(),
    }
    with pytest.raises(InputError) as refused:
        parse(
            FileInput.from_bytes(str(stage), stage.read_bytes()), ImportOptions(companions=context)
        )
    assert "exp-config.yaml beside the results name no GPU model" in str(refused.value)
    assert "keep the experiment's exp-config.yaml" not in str(refused.value)
    alone = {"config.yaml": context["config.yaml"]}  # the experiment's file not there: keep it
    with pytest.raises(InputError, match=r"keep the experiment's exp-config\.yaml"):
        parse(FileInput.from_bytes(str(stage), stage.read_bytes()), ImportOptions(companions=alone))
