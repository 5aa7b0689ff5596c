"""Ingesting files and folders: one file per transaction, idempotent, bad input changes nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.inputs.vllm_results import make_result
from fleetplan.warehouse.importers.base import ImportOptions
from fleetplan.warehouse.ingest import expand, ingest_paths
from fleetplan.warehouse.preview import FileStatus, preview_uploads
from fleetplan.warehouse.queries import benchmark_points
from tests.support.files import table_snapshot, write_json
from tests.support.paths import ROOT


def ingest(wh, *paths, **options):
    return list(ingest_paths(wh, paths, ImportOptions(**options)))


def test_same_file_twice_adds_nothing_and_says_so(warehouse, tmp_path):
    path = write_json(tmp_path / "r.json", make_result())
    (first,) = ingest(warehouse, path)
    assert first.status is FileStatus.IMPORTED and (first.runs, first.points) == (1, 1)
    before = table_snapshot(warehouse)
    (second,) = ingest(warehouse, path)
    assert second.status is FileStatus.DUPLICATE and "already imported as r.json" in second.message
    copy = tmp_path / "renamed.json"
    shutil.copy(path, copy)
    (third,) = ingest(warehouse, copy)
    assert third.status is FileStatus.DUPLICATE
    assert table_snapshot(warehouse) == before


def test_folder_with_one_corrupt_file_lands_the_good_ones(warehouse, tmp_path):
    folder = tmp_path / "runs"
    (folder / "sub").mkdir(parents=True)
    write_json(folder / "a.json", make_result(seed=1))
    write_json(folder / "sub" / "b.json", make_result(seed=2, rate=8))
    good = json.dumps(make_result(seed=3))
    (folder / "c.json").write_text(good[: len(good) // 2])  # truncated
    (folder / ".hidden.json").write_text("not even json")
    outcomes = {o.file.split("/")[-1]: o for o in ingest(warehouse, folder)}
    assert set(outcomes) == {"a.json", "b.json", "c.json"}
    assert outcomes["c.json"].status is FileStatus.REJECTED
    assert "truncated JSON" in outcomes["c.json"].message
    assert outcomes["a.json"].status is outcomes["b.json"].status is FileStatus.IMPORTED
    assert len(benchmark_points(warehouse)) == 2


def _bad_files():
    good = make_result(seed=4)
    cases = {
        "truncated": json.dumps(good)[:-40],
        "nan": json.dumps(good).replace('"duration": ', '"duration": NaN, "_x": '),
        "negative": json.dumps({**good, "request_throughput": -1.0}),
        "string_number": json.dumps({**good, "duration": "12.5"}),
        "empty": "",
        "not_a_result": json.dumps({"hello": [1, 2, 3]}),
        "wrong_array": json.dumps({**good, "ttfts": good["ttfts"][:3]}),
    }
    return list(cases.items())


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@pytest.mark.parametrize(("case", "text"), _bad_files(), ids=[c for c, _ in _bad_files()])
def test_bad_input_is_rejected_by_name_and_changes_nothing(warehouse, tmp_path, case, text):
    write_json(tmp_path / "ok.json", make_result(seed=9))
    ingest(warehouse, tmp_path / "ok.json")
    before = table_snapshot(warehouse)
    bad = tmp_path / f"{case}.json"
    bad.write_text(text)
    (outcome,) = ingest(warehouse, bad)
    assert outcome.status is FileStatus.REJECTED
    assert outcome.file.endswith(f"{case}.json") and outcome.message
    assert table_snapshot(warehouse) == before


def test_unknown_keys_in_a_fleetplan_run_file_are_rejected(warehouse, tmp_path):
    run_file = {
        "format": "fleetplan.runs",
        "format_version": 1,
        "runs": [
            {
                "tool": "fleetplan collect",
                "model": "m",
                "gpu_model": "rtx-4090",
                "gpu_count": 1,
                "points": [{"offered_rate_rps": 1.0, "completed": 5, "duration_s": 5.0}],
                "colour": "blue",
            }
        ],
    }
    (outcome,) = ingest(warehouse, write_json(tmp_path / "run.json", run_file))
    assert outcome.status is FileStatus.REJECTED
    assert "runs.0.colour" in outcome.message and "Extra inputs" in outcome.message
    run_file["runs"][0].pop("colour")
    (outcome,) = ingest(warehouse, write_json(tmp_path / "run.json", run_file))
    assert outcome.status is FileStatus.IMPORTED


def test_a_run_file_is_all_or_nothing(warehouse, tmp_path):
    good_run = {
        "tool": "t", "model": "m", "gpu_model": "h100-sxm", "gpu_count": 8,
        "points": [{"offered_rate_rps": "inf", "completed": 5, "duration_s": 5.0}],
    }  # fmt: skip
    bad_run = {**good_run, "points": [{"offered_rate_rps": 1.0, "completed": 5, "duration_s": 0}]}
    run_file = {"format": "fleetplan.runs", "format_version": 1, "runs": [good_run, bad_run]}
    (outcome,) = ingest(warehouse, write_json(tmp_path / "two.json", run_file))
    assert outcome.status is FileStatus.REJECTED and "runs.1.points.0.duration_s" in outcome.message
    assert table_snapshot(warehouse)["runs"] == []


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_50_mb_file_is_refused_quickly_unless_the_limit_allows_it(warehouse, tmp_path):
    result = make_result(requests=200, seed=5)
    result["generated_texts"] = ["x" * 260_000] * 200  # ~52 MB of generated text
    path = write_json(tmp_path / "big.json", result)
    assert path.stat().st_size > 50e6
    (outcome,) = ingest(warehouse, path)
    assert outcome.status is FileStatus.REJECTED and "over the" in outcome.message
    assert table_snapshot(warehouse)["sources"] == []
    (outcome,) = ingest(warehouse, path, max_file_bytes=80 * 1024 * 1024)
    assert outcome.status is FileStatus.IMPORTED


def test_unseen_gpu_label_is_stored_verbatim_and_flagged(warehouse, tmp_path):
    meta = {"gpu_name": "Graphcore Bow IPU", "gpu_count": "4"}
    ingest(warehouse, write_json(tmp_path / "ipu.json", make_result(metadata=meta)))
    row = benchmark_points(warehouse).iloc[0]
    assert row["gpu_model"] == "Graphcore Bow IPU" and not row["gpu_known"]
    assert row["gpu_label"] == "Graphcore Bow IPU"


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@pytest.mark.parametrize(
    "name", ["'); DROP TABLE runs; --", '=HYPERLINK("http://x","y")', "모델 ünïcode"]
)  # direction marks and other control characters are refused: tests/test_hardening_inputs.py
def test_names_from_files_are_data(warehouse, tmp_path, name):
    ingest(warehouse, write_json(tmp_path / "n.json", make_result(model=name)))
    frame = benchmark_points(warehouse)
    assert frame["model"].tolist() == [name]
    assert len(benchmark_points(warehouse, model=name)) == 1


def test_missing_path_is_reported(warehouse, tmp_path):
    (outcome,) = ingest(warehouse, tmp_path / "nope.json")
    assert outcome.status is FileStatus.REJECTED and "No such file" in outcome.message


# -- one preview for the command line and the upload page ---------------------------------------


def test_upload_preview_and_command_line_sort_files_alike(warehouse, tmp_path):
    """`fleetplan ingest` and the upload page both go through warehouse.preview: the same files
    get the same status and message (ready is what an ingest then imports)."""
    folder = tmp_path / "run"
    shutil.copytree(ROOT / "tests" / "fixtures" / "formats" / "aiperf-0.13.0", folder)
    write_json(folder / "good.json", make_result(seed=31))
    write_json(folder / "bad.json", {**make_result(seed=32), "duration": "soon"})
    (folder / "empty.json").write_text("")
    options = ImportOptions(gpu="rtx-4090", gpu_count=1)
    uploads = [(path.name, path.read_bytes()) for path in expand([folder])]
    previews = preview_uploads(warehouse, uploads, options)
    assert not table_snapshot(warehouse)["sources"]  # a preview stores nothing
    outcomes = list(ingest_paths(warehouse, [folder], options))

    def seen(status: FileStatus, message: str) -> tuple[FileStatus, str]:
        return status, message.replace(f"{folder}/", "")

    as_uploaded = [
        (p.file, FileStatus.IMPORTED if p.status is FileStatus.READY else p.status)
        for p in previews
    ]
    assert as_uploaded == [(Path(o.file).name, o.status) for o in outcomes]
    for preview, outcome in zip(previews, outcomes, strict=True):
        if preview.status is not FileStatus.READY:
            assert seen(preview.status, preview.message) == seen(outcome.status, outcome.message)
    statuses = {p.file: p.status for p in previews}
    assert statuses["profile_export.jsonl"] is FileStatus.INCLUDED
    assert statuses["inputs.json"] is FileStatus.SKIPPED
    assert statuses["bad.json"] is statuses["empty.json"] is FileStatus.REJECTED
    assert statuses["good.json"] is statuses["profile_export_aiperf.json"] is FileStatus.READY
    # after the ingest, the same bytes preview as duplicates, naming the file that brought them
    again = {p.file: p for p in preview_uploads(warehouse, uploads, options)}
    assert again["good.json"].status is FileStatus.DUPLICATE
    assert again["good.json"].duplicate_of == "good.json"


def test_an_oversized_upload_is_refused_before_it_is_read(warehouse):
    data = json.dumps(make_result(seed=3)).encode()
    small = ImportOptions(max_file_bytes=100)
    (preview,) = preview_uploads(warehouse, [("big.json", data)], small)
    assert preview.status is FileStatus.REJECTED and "over the" in preview.message
    # a per-request file over the limit refuses its summary, as on the command line
    pair = [("x_summary.json", b"{}"), ("x_individual_responses.json", data)]
    summary, companion = preview_uploads(warehouse, pair, small)
    assert summary.status is FileStatus.REJECTED and "its per-request file" in summary.message
    assert companion.status is FileStatus.INCLUDED
