"""A key given twice in one object of a result file is refused, at any depth, for every importer
family (issue 21: "refuse duplicate keys everywhere fleetplan reads JSON or YAML"): the message
names the file and the key's path, and nothing is stored. Each file is one that imports without
the repeated key, and the first of the two is a bogus value the second overwrites, so that
without the check the file imports as if nothing were wrong (the last wins)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from benchmarks.inputs.vllm_results import make_result
from fleetplan.core.errors import InputError
from fleetplan.core.strict import duplicate_key
from fleetplan.warehouse.importers.base import ImportOptions
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.preview import FileStatus
from fleetplan.warehouse.queries import benchmark_points

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ROOT / "tests" / "fixtures" / "formats"
RUN_FILE = ROOT / "sample_data" / "benchmarks" / "ionet-aibc2025.json"
GPU = ImportOptions(gpu="RTX 4090", gpu_count=1)
BOGUS = 123456789


def twice(value: Any, path: tuple[str | int, ...]) -> str:
    """`value` as JSON text, with the key at `path` written twice: first BOGUS, then its own."""
    if isinstance(value, dict):
        parts = []
        for key, child in value.items():
            here = path[1:] if path and path[0] == key else ()
            if path == (key,):
                parts.append(f"{json.dumps(key)}: {BOGUS}")
            parts.append(f"{json.dumps(key)}: {twice(child, here) if here else json.dumps(child)}")
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, list) and path:
        return "[" + ", ".join(
            twice(child, path[1:]) if i == path[0] else json.dumps(child)
            for i, child in enumerate(value)
        ) + "]"  # fmt: skip
    return json.dumps(value)


def ingest(warehouse, folder: Path, options: ImportOptions = GPU) -> dict[str, Any]:
    return {Path(o.file).name: o for o in ingest_paths(warehouse, [folder], options)}


def assert_refused(outcome, name: str, path: str, key: str) -> None:
    assert outcome.status == FileStatus.REJECTED, outcome
    assert f"the key '{key}' is given twice in one object, at {path}" in outcome.message
    assert name in outcome.file


def vllm_levels() -> list[dict]:
    return [make_result(requests=40, rate=rate, seed=i) for i, rate in enumerate((2.0, 4.0))]


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        (("completed",), "completed"),  # top level
        (("ttfts",), "ttfts"),  # a per-request list, the whole of it overwritten
    ],
)
def test_a_vllm_bench_file_with_a_key_twice_is_refused(warehouse, tmp_path, path, shown):
    level = make_result(requests=40, rate=2.0, seed=1)
    (tmp_path / "result.json").write_text(twice(level, path))
    outcome = ingest(warehouse, tmp_path)["result.json"]
    assert_refused(outcome, "result.json", shown, path[-1])
    assert benchmark_points(warehouse).empty


def test_a_key_twice_in_the_second_appended_vllm_level_names_that_level(warehouse, tmp_path):
    first, second = vllm_levels()
    text = json.dumps(first) + "\n" + twice(second, ("request_rate",)) + "\n"
    (tmp_path / "result.json").write_text(text)
    outcome = ingest(warehouse, tmp_path)["result.json"]
    assert_refused(outcome, "result.json", "request_rate", "request_rate")
    assert "value 2 (line 2)" in outcome.message
    assert benchmark_points(warehouse).empty


def test_the_same_vllm_levels_without_a_key_twice_import(warehouse, tmp_path):
    (tmp_path / "result.json").write_text("\n".join(json.dumps(v) for v in vllm_levels()))
    assert ingest(warehouse, tmp_path)["result.json"].status == FileStatus.IMPORTED


GUIDELLM = FORMATS / "guidellm-0.8.1" / "benchmarks.json"


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        (("metadata",), "metadata"),
        (("benchmarks", 1, "duration"), "benchmarks[1].duration"),  # in a level
        (
            ("benchmarks", 0, "requests", "successful", 3, "request_id"),
            "benchmarks[0].requests.successful[3].request_id",  # in a per-request list
        ),
    ],
)
def test_a_guidellm_file_with_a_key_twice_is_refused(warehouse, tmp_path, path, shown):
    (tmp_path / "benchmarks.json").write_text(twice(json.loads(GUIDELLM.read_text()), path))
    outcome = ingest(warehouse, tmp_path)["benchmarks.json"]
    assert_refused(outcome, "benchmarks.json", shown, path[-1])
    assert benchmark_points(warehouse).empty


def test_the_guidellm_file_written_the_same_way_without_a_key_twice_imports(warehouse, tmp_path):
    (tmp_path / "benchmarks.json").write_text(twice(json.loads(GUIDELLM.read_text()), ()))
    assert ingest(warehouse, tmp_path)["benchmarks.json"].status == FileStatus.IMPORTED


AIPERF = FORMATS / "aiperf-0.13.0"


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        (("request_count",), "request_count"),
        (("time_to_first_token", "p99"), "time_to_first_token.p99"),
    ],
)
def test_an_aiperf_export_with_a_key_twice_is_refused(warehouse, tmp_path, path, shown):
    folder = tmp_path / "aiperf"
    shutil.copytree(AIPERF, folder)
    summary = folder / "profile_export_aiperf.json"
    summary.write_text(twice(json.loads(summary.read_text()), path))
    outcome = ingest(warehouse, folder)["profile_export_aiperf.json"]
    assert_refused(outcome, "profile_export_aiperf.json", shown, path[-1])
    assert benchmark_points(warehouse).empty


def test_an_aiperf_per_request_line_with_a_key_twice_is_refused(warehouse, tmp_path):
    folder = tmp_path / "aiperf"
    shutil.copytree(AIPERF, folder)
    records = folder / "profile_export.jsonl"
    lines = records.read_text().splitlines()
    lines[4] = twice(json.loads(lines[4]), ("metadata", "request_start_ns"))
    records.write_text("\n".join(lines) + "\n")
    outcomes = ingest(warehouse, folder)
    outcome = outcomes["profile_export_aiperf.json"]
    assert outcome.status == FileStatus.REJECTED, outcomes
    assert "profile_export.jsonl" in outcome.message
    assert (
        "value 5 (line 5): the key 'request_start_ns' is given twice in one object, "
        "at metadata.request_start_ns" in outcome.message
    )
    assert benchmark_points(warehouse).empty


def test_the_aiperf_folder_unchanged_imports(warehouse, tmp_path):
    folder = tmp_path / "aiperf"
    shutil.copytree(AIPERF, folder)
    assert ingest(warehouse, folder)["profile_export_aiperf.json"].status == FileStatus.IMPORTED


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        (("format_version",), "format_version"),
        (("runs", 2, "points", 0, "ttft_p99_ms"), "runs[2].points[0].ttft_p99_ms"),
    ],
)
def test_a_fleetplan_run_file_with_a_key_twice_is_refused(warehouse, tmp_path, path, shown):
    (tmp_path / "runs.json").write_text(twice(json.loads(RUN_FILE.read_text()), path))
    outcome = ingest(warehouse, tmp_path, ImportOptions())["runs.json"]
    assert_refused(outcome, "runs.json", shown, path[-1])
    assert benchmark_points(warehouse).empty


@pytest.mark.parametrize(
    "text",
    [
        '{"a": "x\\":1", "b": 2}',  # `":` inside a string: the cheap count is unsure, read strictly
        '{"a\\\\": 1, "b": {"c": [1, 2, {"d": 3}]}}',  # a key ending in a backslash
        '{"a": 1e400, "b": NaN}',
        '{"a\\u003a": "b\\u003Ac", "d": "\\\\u003a"}',  # escaped colons, and a text of one
        '{"a": 18446744073709551616, "b": [1, 2]}',  # an integer orjson does not write
        '[{"a": 1}, {"a": 2}]',  # the same key in two objects is not twice in one
    ],
)
def test_files_without_a_key_twice_are_not_refused(warehouse, tmp_path, text):
    from fleetplan.warehouse.importers.document import read_document

    assert read_document(text.encode(), name="x.json", max_values=1000).kind == "json"
    assert duplicate_key(text) is None


def test_a_key_twice_behind_a_string_holding_quote_colon_is_found():
    from fleetplan.warehouse.importers.document import read_document

    text = b'{"a": "x\\":1", "b": {"c": 1, "c": 2}}'
    with pytest.raises(InputError, match=r"the key 'c' is given twice in one object, at b\.c"):
        read_document(text, name="x.json", max_values=1000)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        (b'{"a\\u003a": 1, "b": {"c": 1, "c": 2}}', "b.c"),  # an escaped colon kept
        (b'{"a": {"x": {"y": 1}}, "a": 2}', "a"),  # a dropped object took its colons with it
        (b'{"a": 1, "a": 1}', "a"),  # the same value twice is twice all the same
        (b'{"a": 18446744073709551616, "a": 2}', "a"),
        (b'\xef\xbb\xbf{"n": NaN, "n": 1}', "n"),  # a BOM and NaN: the slow reader's file
    ],
)
def test_a_key_twice_is_found_whatever_else_the_file_holds(text, path):
    from fleetplan.warehouse.importers.document import read_document

    with pytest.raises(InputError, match=f"is given twice in one object, at {path}$"):
        read_document(text, name="x.json", max_values=1000)


def test_a_model_config_with_a_key_twice_is_refused_naming_it(tmp_path):
    from fleetplan.services.envelope import architecture_from_file

    path = tmp_path / "config.json"
    path.write_text('{"num_hidden_layers": 32, "num_hidden_layers": 2, "torch_dtype": "float16"}')
    with pytest.raises(InputError, match="the key 'num_hidden_layers' is given twice") as caught:
        architecture_from_file(path, "m")
    assert caught.value.file == str(path)


def test_a_plan_file_with_a_key_twice_is_refused_by_simulate(tmp_path, capsys):
    from fleetplan.cli import main

    path = tmp_path / "plan.json"
    path.write_text('{"scenario_name": "a", "scenario_name": "b"}')
    assert main(["simulate", "--plan", str(path)]) == 1
    assert "the key 'scenario_name' is given twice in one object" in capsys.readouterr().err


def test_the_campaign_progress_and_a_run_metadata_cell_refuse_a_key_twice(tmp_path):
    """The collector's own progress file and a CSV's run_metadata cell are JSON read by fleetplan
    too: a key given twice there is refused, naming it, not taken last-wins."""
    from fleetplan.collectors.ray_campaign.resume import ResumeState
    from fleetplan.warehouse.importers.csv_table import metadata_cell

    progress = tmp_path / "campaign-c.json"
    progress.write_text('{"jobs": {}, "jobs": {"x": {"state": "done"}}}')
    with pytest.raises(InputError, match="unreadable campaign progress: the key 'jobs'"):
        ResumeState(progress, None, restart=False)
    with pytest.raises(InputError, match="row 2: the key 'campaign' is given twice"):
        metadata_cell('{"campaign": "a", "campaign": "b"}', "row 2", "runs.csv")
    assert metadata_cell('{"campaign": "a"}', "row 2", "runs.csv") == {"campaign": "a"}
