"""The Upload page through Streamlit's AppTest: a file without GPU or dataset is labelled in the
page and imported; a run already in the warehouse is said to be present before import and after
it, with nothing left to import; problems are listed in full; file ids are short."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from benchmarks.inputs.vllm_results import make_result
from fleetplan.core.contract import RUN_FILE_FORMAT, RunFile
from fleetplan.services.upload_tables import RANDOM_TOKENS, UploadLabels
from fleetplan.warehouse.db import ENV_VAR
from fleetplan.warehouse.importers.base import FileInput
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.queries import benchmark_points, sources
from tests.support.pages import read_warehouse, seen
from tests.support.paths import MAIN

UNLABELLED = json.dumps(make_result(seed=31, model="acme/unlabelled", metadata={})).encode()


# Every test runs the dashboard in AppTest (tens of seconds each): slow, out of `make test-fast`.
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("fresh_caches")]


def upload_page(monkeypatch, warehouse_path) -> AppTest:
    monkeypatch.setenv(ENV_VAR, str(warehouse_path))
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    at.switch_page("views/upload.py").run()
    assert not at.exception, at.exception
    return at


def table(at: AppTest, column: str):
    """The table on the page that has `column` (AppTest finds tables by order, not key)."""
    return next(df.value for df in at.dataframe if column in df.value.columns)


def upload(at: AppTest, *files: tuple[str, bytes]) -> AppTest:
    at.file_uploader(key="w_upload_files").set_value(
        [(name, data, "application/json") for name, data in files]
    ).run()
    assert not at.exception, at.exception
    return at


def test_a_file_without_gpu_or_dataset_is_labelled_in_the_page(monkeypatch, sample_warehouse_path):
    at = upload(upload_page(monkeypatch, sample_warehouse_path), ("mine.json", UNLABELLED))
    summary = table(at, "status").set_index("file")
    assert summary.loc["mine.json", "status"] == "rejected"
    # the reason names the fields above the upload, in full below the table
    reasons = [seen(w.value) for w in at.warning if "mine.json" in seen(w.value)]
    assert any("choose the GPU and GPUs per server above the upload" in r for r in reasons)
    assert not any("--gpu" in r for r in reasons)
    assert at.button(key="w_upload_commit").disabled

    at.selectbox(key="w_upload_gpu").set_value("rtx-4090")
    at.number_input(key="w_upload_count").set_value(1).run()
    runs = table(at, "traffic")
    assert runs["traffic"].tolist() == ["not labelled"]
    measured = runs.loc[0, "input tokens (mean)"]
    assert measured > 0  # the token shape the user labels from
    at.selectbox(key="w_upload_dataset").set_value(RANDOM_TOKENS).run()
    at.number_input(key="w_upload_input_len").set_value(round(measured))
    at.number_input(key="w_upload_output_len").set_value(20).run()
    assert not at.exception, at.exception
    assert table(at, "status").loc[0, "status"] == "ready"
    assert table(at, "traffic")["traffic"].tolist() == [
        f"synthetic {round(measured)} in / 20 out tokens"
    ]

    at.button(key="w_upload_commit").click().run()
    assert not at.exception, at.exception
    assert any("mine.json" in seen(s.value) for s in at.success)
    stored = read_warehouse(lambda wh: benchmark_points(wh, model="acme/unlabelled"))
    assert stored[
        ["gpu_model", "dataset", "input_len", "output_len"]
    ].drop_duplicates().values.tolist() == [["rtx-4090", "synthetic", round(measured), 20]]
    # right after the import the page says it was imported (it said "already present, nothing
    # added" about the file it had just imported), and offers nothing more to import
    assert any(seen(c.value).startswith("mine.json: imported") for c in at.caption)
    assert not any("already present" in seen(i.value) for i in at.info)
    assert not [b for b in at.button if b.key == "w_upload_commit"]
    at.run()  # and on the next run too
    assert any(seen(c.value).startswith("mine.json: imported") for c in at.caption)


def test_a_run_with_failed_requests_imports_with_a_warning(monkeypatch, warehouse_path):
    failing = json.dumps(make_result(seed=41, failures=11, model="acme/failing")).encode()
    at = upload_page(monkeypatch, warehouse_path)
    at.selectbox(key="w_upload_gpu").set_value("rtx-4090")
    at.number_input(key="w_upload_count").set_value(1)
    upload(at, ("failing.json", failing))
    said = [seen(w.value) for w in at.warning if "failed request" in seen(w.value)]
    assert said and "failing.json: 11 failed request(s)" in said[0], [w.value for w in at.warning]
    at.button(key="w_upload_commit").click().run()
    assert not at.exception, at.exception
    assert any("failing.json" in seen(s.value) for s in at.success)  # imported
    assert any("11 failed request(s)" in seen(w.value) for w in at.warning)  # and warned


def test_runs_already_in_the_warehouse_are_present_before_import(monkeypatch, warehouse_path):
    labels = UploadLabels(gpu="rtx-4090", gpu_count=1).options()
    parsed = parse(FileInput.from_bytes("mine.json", UNLABELLED), labels)
    copy = RunFile(format=RUN_FILE_FORMAT, format_version=1, runs=parsed.runs)
    at = upload_page(monkeypatch, warehouse_path)
    at.selectbox(key="w_upload_gpu").set_value("rtx-4090")
    at.number_input(key="w_upload_count").set_value(1)
    upload(at, ("mine.json", UNLABELLED))
    at.button(key="w_upload_commit").click().run()
    assert not at.exception, at.exception
    # other bytes, the same run: present before import, and the button has nothing to import
    upload(at, ("copy.json", copy.model_dump_json().encode()))
    summary = table(at, "status")
    assert summary.loc[0, "status"] == "already present"
    assert "mine.json" in summary.loc[0, "problem"]
    assert at.button(key="w_upload_commit").disabled
    assert any(
        "copy.json" in seen(i.value) and "already in the warehouse" in seen(i.value)
        for i in at.info
    )
    assert table(at, "in the warehouse").loc[0, "in the warehouse"] == (
        "already present (from mine.json)"
    )
    assert list(read_warehouse(sources)["file_name"]) == ["mine.json"]


def test_imported_files_show_a_short_id(monkeypatch, sample_warehouse_path):
    at = upload_page(monkeypatch, sample_warehouse_path)
    (editor,) = (e.value for e in at.get("data_editor") if e.key == "w_sources")
    assert editor["id"].str.len().max() == 13  # 12 hex digits and an ellipsis
    # the full ids are in the detail below the table
    full = table(at, "source_id")
    assert full["source_id"].str.len().eq(64).all()
