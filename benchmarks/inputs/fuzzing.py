"""Mutations of real result files, for the fuzz test and `benchmarks/fuzz.py`: truncation, type
swaps, huge numbers, NaN and infinity, deep nesting, unicode, very long arrays, byte flips."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.inputs.shared_data import ROOT, tool_outputs_dir

FORMATS = ROOT / "tests" / "fixtures" / "formats"
SHARED = tool_outputs_dir()  # other tools' files from their repositories, or None
REAL_CLIENTS = ROOT / "tests" / "fixtures" / "real_clients"  # fleetplan's own runs of the clients


def seed_files() -> dict[str, tuple[str, bytes]]:
    """One real file of every format: {label: (file name, bytes)}. LLMPerf's, and AIPerf's from
    its repository, come from ../shared/data/tool-outputs, when it is there."""
    from benchmarks.inputs.tool_reports import (
        LLM_LOAD_TEST_CONFIG,
        REAL_CLIENTS_PARTIAL,
        genai_bench_level,
        inferencex_session_result,
        llm_load_test_requests,
        llmd_report,
        mlperf_server_summary,
        sglang_console_log,
        sglang_jsonl,
        sglang_line,
        trtllm_report,
        trtllm_text_log,
        vllm_console_log,
    )
    from benchmarks.inputs.vllm_results import make_result

    gap = FORMATS / "genai-perf-0.0.16"
    files = {
        "vllm": ("vllm.json", json.dumps(make_result(requests=20, seed=3)).encode()),
        "vllm-bench-appended": _as_on_a_4090(FORMATS / "vllm-bench-serve-0.32.0"),
        "fleetplan-run": ("sample.json", _sample_run_file()),
        "csv-table": ("table.csv", _csv_table()),
        "genai-perf": next(_files(gap, "profile_export_genai_perf.json")),
        "guidellm-yaml": next(_files(FORMATS / "guidellm-0.3.1", "benchmarks.yaml")),
    }
    if (REAL_CLIENTS / "inference-perf-rate").is_dir():  # fleetplan's own run of it
        stage = REAL_CLIENTS / "inference-perf-rate" / "stage_0_lifecycle_metrics.json"
        files["inference-perf"] = (stage.name, stage.read_bytes())
        partial = (REAL_CLIENTS / "inference-perf-rate" / REAL_CLIENTS_PARTIAL).read_bytes()
        files["llm-d-report"] = ("br.yaml", llmd_report(partial, accelerator=False))
    # written the way the tools write them (benchmarks.inputs.tool_reports), the GPU the fuzz's
    files["sglang"] = (
        "sglang.jsonl",
        sglang_jsonl(
            *(sglang_line(r, server_info={"model_path": "Qwen/Qwen3-8B"}) for r in (2.0, 4.0))
        ),
    )
    files["trtllm-bench"] = ("report.json", json.dumps(trtllm_report(), indent=4).encode())
    files["genai-bench"] = (
        "D100_100_text-to-text_num_concurrency_4_time_120s.json",
        json.dumps(genai_bench_level()).encode(),
    )
    rows, _ = llm_load_test_requests()
    output = {"results": rows, "config": LLM_LOAD_TEST_CONFIG, "summary": {}}
    files["llm-load-test"] = ("output.json", json.dumps(output).encode())
    files["mlperf"] = ("mlperf_log_summary.txt", mlperf_server_summary().encode())
    files["trtllm-bench-log"] = ("trtllm.log", trtllm_text_log().encode())
    files["vllm-console-log"] = ("vllm_serve.log", vllm_console_log().encode())
    files["sglang-console-log"] = ("bench_serving.txt", sglang_console_log().encode())
    # on the GPU the fuzz and the consistency check name, as the together runner's seed is
    sessions = inferencex_session_result() | {"hw": "rtx-4090"}
    files["inferencex-sessions"] = ("agentic.json", json.dumps(sessions).encode())
    if SHARED is not None:
        files |= _inferencex(SHARED)
        files["llmperf"] = next(_files(SHARED / "llmperf-2023-08-31", "*_summary.json"))
        aiperf = SHARED / "aiperf-repo-example"
        files["aiperf"] = next(_files(aiperf, "profile_export_aiperf.json"))
        files["ml-energy"] = _ml_energy_on_a_4090(SHARED / "ml-energy-leaderboard")
    for label, pattern in (("guidellm", "guidellm-*"), ("aiperf", "aiperf-0.*")):
        for folder in sorted(FORMATS.glob(pattern)):
            for name, data in _files(folder, "*.json*"):
                files.setdefault(f"{label}:{folder.name}:{name}", (name, data))
    return files


def _inferencex(shared: Path) -> dict[str, tuple[str, bytes]]:
    """Both InferenceX layouts, the together runner's GPU read as the one the fuzz names."""
    trimmed = shared / "inferencex-token-position-h200" / "glm-5"
    together = shared / "inferencex-together-b200" / "vllm" / "gptoss-fp4" / "1k1k" / "untuned"
    name, data = next(_files(together, "conc64.json"))
    return {
        "inferencex-trimmed": next(_files(trimmed, "*conc16.json")),
        "inferencex-together": (name, data.replace(b'"hw": "b200"', b'"hw": "rtx-4090"')),
    }


# Files read together: the first is imported, the second rides along as its companion (each
# a name and its bytes).
Pair = tuple[tuple[str, bytes], tuple[str, bytes]]


def _read(*paths: Path) -> tuple[tuple[str, bytes], ...]:
    return tuple((path.name, path.read_bytes()) for path in paths)


def _genai_perf_2024() -> Pair:
    """fleetplan's GenAI-Perf 0.0.16 run as 2024's GenAI-Perf wrote it: a summary without its
    request count, read with perf_analyzer's raw export (profile_export.json) beside it."""
    folder = FORMATS / "genai-perf-0.0.16" / "tiny-llama-openai-completions-request_rate4.0"
    summary = json.loads((folder / "profile_export_genai_perf.json").read_bytes())
    summary.pop("request_count", None)
    data = json.dumps(summary, indent=2).encode()
    return ("profile_export_genai_perf.json", data), _read(folder / "profile_export.json")[0]


def seed_pairs() -> dict[str, Pair]:
    """The pairs the fuzz mutates one file of."""
    pairs: dict[str, Pair] = {
        "aiperf-pair": _read(
            FORMATS / "aiperf-0.13.0" / "profile_export_aiperf.json",
            FORMATS / "aiperf-0.13.0" / "profile_export.jsonl",
        ),
        "genai-perf-2024-pair": _genai_perf_2024(),
    }
    if (REAL_CLIENTS / "inference-perf-rate").is_dir():  # a stage and the config beside it
        pairs["inference-perf-pair"] = _read(
            REAL_CLIENTS / "inference-perf-rate" / "stage_1_lifecycle_metrics.json",
            REAL_CLIENTS / "inference-perf-rate" / "config.yaml",
        )
    if SHARED is not None:
        pairs["llmperf-pair"] = _read(
            SHARED / "llmperf-2023-08-31" / "01-ai-Yi-1-5-34B-Chat_550_150_summary.json",
            SHARED
            / "llmperf-2023-08-31"
            / "01-ai-Yi-1-5-34B-Chat_550_150_individual_responses.json",
        )
    return pairs


def _as_on_a_4090(folder: Path) -> tuple[str, bytes]:
    """The real appended vLLM file, its "cpu" device read as the GPU the fuzz options name."""
    name, data = next(_files(folder, "*.json"))
    return name, data.replace(b'"gpu_name": "cpu"', b'"gpu_name": "NVIDIA GeForce RTX 4090"')


def _ml_energy_on_a_4090(folder: Path) -> tuple[str, bytes]:
    """ML.ENERGY's GPQA file, its H100 configurations only, their GPU read as the one the fuzz
    options name (the file lists several GPUs; the options name one)."""
    name, data = next(_files(folder, "*gpqa.json"))
    document = json.loads(data)
    configs = [c for c in document["configurations"] if c["gpu_model"] == "H100"]
    for config in configs:
        config["gpu_model"] = "NVIDIA GeForce RTX 4090"
    return name, json.dumps({**document, "configurations": configs}, indent=1).encode()


def _csv_table() -> bytes:
    """The template's example row as two load levels of a run typed in by hand."""
    from benchmarks.inputs.tables import typed_in_table

    return typed_in_table(2).encode()


def _files(folder: Path, pattern: str):
    for path in sorted(folder.rglob(pattern)):
        yield path.name, path.read_bytes()


def _sample_run_file() -> bytes:
    from fleetplan.warehouse.sample_data import IONET_FILE, sample_dir

    text = (sample_dir() / "benchmarks" / IONET_FILE).read_text()
    head, _, rest = text.partition('"runs": [\n')
    first = rest.split("\n", 1)[0].rstrip(",")
    return (head + '"runs": [\n' + first + "\n]}\n").encode()


def _walk(value: Any, pick: Callable[[list], Any], path: tuple = ()) -> list[tuple]:
    """Every (container, key) pair in a JSON value, to choose one from."""
    slots = []
    if isinstance(value, dict):
        for key, child in value.items():
            slots.append((value, key))
            slots += _walk(child, pick)
    elif isinstance(value, list):
        for index, child in enumerate(value[:50]):
            slots.append((value, index))
            slots += _walk(child, pick)
    return slots


REPLACEMENTS = [
    lambda rng, old: str(old),
    lambda rng, old: None,
    lambda rng, old: [old, old],
    lambda rng, old: {"x": old},
    lambda rng, old: -1,
    lambda rng, old: 10**400,
    lambda rng, old: 1e308,
    lambda rng, old: float("nan"),
    lambda rng, old: float("inf"),
    lambda rng, old: True,
    lambda rng, old: "",
    lambda rng, old: "\u202e\u0000💥" * 50,
    lambda rng, old: '=HYPERLINK("http://x")',
    lambda rng, old: list(range(1_000_000)),
]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One random mutation of a file's bytes."""
    kind = rng.choice(["truncate", "swap", "swap", "swap", "nest", "flip", "unicode"])
    if kind == "truncate":
        return data[: rng.randrange(len(data) + 1)]
    if kind == "flip":
        out = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            out[rng.randrange(len(out))] = rng.randrange(256)
        return bytes(out)
    if kind == "nest":
        depth = rng.choice([10, 1000, 100_000])
        return b"[" * depth + data + b"]" * depth
    try:
        values = json.loads(data)
    except ValueError:
        return _mutate_text(data, rng) if kind != "unicode" else data[::-1]
    if kind == "unicode":
        return json.dumps(values, ensure_ascii=False).replace('"', '"\u0301', 3).encode("utf-8")
    slots = _walk(values, rng.choice)
    if not slots:
        return data
    container, key = rng.choice(slots)
    container[key] = rng.choice(REPLACEMENTS)(rng, container[key])
    return json.dumps(values, allow_nan=True).encode()


TEXT_CELLS = [
    "",
    "nan",
    "inf",
    "-1",
    "1e400",
    "9" * 400,
    "x",
    '"',
    "true",
    "{",
    "- [",
    "&a *a",
    '=HYPERLINK("http://x")',
    "\u202e💥",
]


def _mutate_text(data: bytes, rng: random.Random) -> bytes:
    """CSV, YAML and JSON lines: one value (between separators) replaced."""
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    row = rng.randrange(len(lines))
    cells = lines[row].split(",") if "," in lines[row] else lines[row].split(": ")
    cells[rng.randrange(len(cells))] = rng.choice(TEXT_CELLS)
    lines[row] = ("," if "," in lines[row] else ": ").join(cells)
    return "\n".join(lines).encode()
