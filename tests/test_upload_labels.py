"""Uploads that never dead-end, without Streamlit: the user's labels (GPU, GPUs per server, traffic)
fill what a file leaves out and are asked for by the page's field names; a run the warehouse
holds already is previewed as present before import, whatever bytes bring it; what the Upload
page shows of each file and run (fleetplan/services/upload_tables.py)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from benchmarks.inputs.vllm_results import dumps_appended, make_result
from fleetplan.core.contract import RUN_FILE_FORMAT, RunFile
from fleetplan.core.errors import InputError
from fleetplan.services.upload_tables import (
    AS_THE_FILE_SAYS,
    RANDOM_TOKENS,
    UploadLabels,
    dataset_choices,
    problems,
    run_rows,
    short_id,
    sources_table,
    summary_row,
    unlabelled_runs,
)
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.ingest import ingest_parsed
from fleetplan.warehouse.labels import SYNTHETIC, label_traffic
from fleetplan.warehouse.preview import FileStatus, preview_uploads
from fleetplan.warehouse.queries import benchmark_points, sources

UNLABELLED = json.dumps(make_result(seed=5, model="acme/mine", metadata={})).encode()
LABELLED = UploadLabels(
    gpu="rtx-4090", gpu_count=2, dataset=RANDOM_TOKENS, input_len=170, output_len=21
)


def one(warehouse, data: bytes, options: ImportOptions, name: str = "mine.json"):
    (preview,) = preview_uploads(warehouse, [(name, data)], options)
    return preview


def test_a_file_without_gpu_asks_for_the_pages_fields_not_flags(warehouse):
    on_page = one(warehouse, UNLABELLED, UploadLabels().options())
    assert on_page.status is FileStatus.REJECTED
    assert "choose the GPU and GPUs per server above the upload" in on_page.message
    assert "--gpu" not in on_page.message
    # the command line keeps its flags
    cli = one(warehouse, UNLABELLED, ImportOptions())
    assert "give --gpu and --gpu-count" in cli.message and "above the upload" not in cli.message
    # a GPU the file contradicts names the page's field
    says_4090 = json.dumps(make_result(seed=6)).encode()
    refused = one(warehouse, says_4090, UploadLabels(gpu="h100-pcie", gpu_count=1).options())
    assert "but the GPU given above says 'h100-pcie'" in refused.message


def test_labels_fill_the_run_and_are_stored(warehouse):
    preview = one(warehouse, UNLABELLED, LABELLED.options())
    assert preview.status is FileStatus.READY, preview.message
    (run,) = preview.parsed.runs
    assert (run.gpu_model, run.gpu_count) == ("rtx-4090", 2)
    assert (run.dataset, run.input_len, run.output_len) == (SYNTHETIC, 170, 21)
    assert ingest_parsed(warehouse, preview.parsed, origin="upload").status is FileStatus.IMPORTED
    stored = benchmark_points(warehouse)
    assert stored[["dataset", "input_len", "output_len"]].drop_duplicates().values.tolist() == [
        [SYNTHETIC, 170, 21]
    ]


def test_random_tokens_need_both_lengths_named_as_on_the_page(warehouse):
    labels = UploadLabels(gpu="rtx-4090", gpu_count=1, dataset=RANDOM_TOKENS, input_len=100)
    preview = one(warehouse, UNLABELLED, labels.options())
    assert preview.status is FileStatus.REJECTED
    assert "choose the Input tokens and Output tokens above the upload" in preview.message


def test_a_label_never_overrides_what_the_file_says():
    result = make_result(seed=7, metadata={"gpu_name": "RTX 4090", "gpu_count": "1"})
    result["dataset_name"] = "sharegpt"
    file = FileInput.from_bytes("said.json", json.dumps(result).encode())
    parsed = parse(file, ImportOptions())
    # the same word fills nothing and is no contradiction
    assert label_traffic(parsed, ImportOptions(dataset="sharegpt")).runs[0].dataset == "sharegpt"
    with pytest.raises(InputError, match="the file says 'sharegpt' but the Dataset given above"):
        label_traffic(parsed, LABELLED.options())
    with pytest.raises(InputError, match="but --dataset says 'sonnet'"):
        label_traffic(parsed, ImportOptions(dataset="sonnet"))


def test_the_labels_as_options():
    assert UploadLabels().options() == ImportOptions(on_page=True)
    named = UploadLabels(model=" acme/x ", dataset="sharegpt", input_len=5, output_len=6)
    # lengths belong to random-token traffic only; a dataset's name stands alone
    assert named.options() == ImportOptions(model="acme/x", dataset="sharegpt", on_page=True)
    assert dataset_choices(["sharegpt", None, SYNTHETIC, "sonnet"]) == [
        AS_THE_FILE_SAYS,
        "sharegpt",
        "sonnet",
        RANDOM_TOKENS,
    ]


def run_file_of(data: bytes, name: str) -> bytes:
    """The runs of a vLLM file as a fleetplan run file: other bytes, the same runs (each keeps
    its origin: the vLLM file and its position)."""
    parsed = parse(FileInput.from_bytes(name, data), LABELLED.options())
    wrapped = RunFile(format=RUN_FILE_FORMAT, format_version=1, runs=parsed.runs)
    return wrapped.model_dump_json().encode()


def test_runs_already_present_are_said_so_before_import(warehouse):
    first = one(warehouse, UNLABELLED, LABELLED.options())
    ingest_parsed(warehouse, first.parsed, origin="upload")
    # the same bytes: present by the file's identity
    again = one(warehouse, UNLABELLED, LABELLED.options())
    assert (
        again.status is FileStatus.DUPLICATE and summary_row(again)["status"] == "already present"
    )
    # other bytes holding the same run: present by the run's identity, named by its file
    copy = one(warehouse, run_file_of(UNLABELLED, "mine.json"), ImportOptions(), "copy.json")
    assert copy.status is FileStatus.DUPLICATE, copy.message
    assert copy.duplicate_of == "mine.json" and "already in the warehouse" in copy.message
    assert summary_row(copy)["status"] == "already present"
    assert run_rows([copy])["in the warehouse"].tolist() == ["already present (from mine.json)"]
    # importing it anyway adds nothing (the store decides as the preview did)
    assert ingest_parsed(warehouse, copy.parsed).status is FileStatus.DUPLICATE
    assert list(sources(warehouse)["file_name"]) == ["mine.json"]


def test_a_file_with_some_runs_present_is_ready_and_says_which(warehouse):
    results = [
        make_result(seed=8, metadata={}),
        make_result(seed=9, model="acme/other", metadata={}),
    ]
    both = dumps_appended(results)
    one_run = run_file_of(both, "both.json")
    wrapped = json.loads(one_run)
    wrapped["runs"] = wrapped["runs"][:1]
    ingest_parsed(
        warehouse,
        one(warehouse, json.dumps(wrapped).encode(), ImportOptions(), "first.json").parsed,
    )
    preview = one(warehouse, both, LABELLED.options(), "both.json")
    assert preview.status is FileStatus.READY and preview.present == {0: "first.json"}
    assert "1 run(s) already present (from first.json) will be skipped" in preview.message
    assert summary_row(preview)["problem"] == "1 run(s) present"
    assert [p[0] for p in problems([preview])] == ["both.json"]
    assert run_rows([preview])["in the warehouse"].tolist() == [
        "already present (from first.json)",
        "new",
    ]


def test_run_rows_show_token_shapes_for_labelling(warehouse):
    options = UploadLabels(gpu="rtx-4090", gpu_count=1).options()
    result = make_result(seed=10, model="acme/mine", metadata={})
    preview = one(warehouse, json.dumps(result).encode(), options)
    (row,) = run_rows([preview]).to_dict("records")
    completed = result["completed"]
    assert row["input tokens (mean)"] == round(result["total_input_tokens"] / completed, 1)
    assert row["output tokens (mean)"] == round(result["total_output_tokens"] / completed, 1)
    assert row["traffic"] == "not labelled" and row["GPU"] == "1x rtx-4090"
    labelled = one(warehouse, json.dumps(result).encode(), LABELLED.options())
    assert run_rows([labelled])["traffic"].tolist() == ["synthetic 170 in / 21 out tokens"]


def test_problems_are_listed_in_full(warehouse):
    long_reason = make_result(seed=11)
    long_reason["duration"] = "soon"
    previews = preview_uploads(
        warehouse, [("bad.json", json.dumps(long_reason).encode())], UploadLabels().options()
    )
    ((file, status, message),) = problems(previews)
    assert (file, status) == ("bad.json", "rejected")
    assert message == previews[0].message and "duration" in message


def test_an_unlabelled_run_of_a_labelled_model_is_warned_about(warehouse):
    options = UploadLabels(gpu="rtx-4090", gpu_count=1).options()
    labelled = one(warehouse, UNLABELLED, LABELLED.options(), "labelled.json")
    ingest_parsed(warehouse, labelled.parsed)
    other = json.dumps(make_result(seed=12, model="acme/mine", metadata={})).encode()
    unlabelled = one(warehouse, other, options, "other.json")
    points = benchmark_points(warehouse)
    (warning,) = unlabelled_runs([unlabelled], points)
    assert "other.json" in warning and "synthetic" in warning and "choose the Dataset" in warning
    assert unlabelled_runs([one(warehouse, other, LABELLED.options(), "x.json")], points) == []


def test_file_ids_are_shortened_with_the_full_value_kept():
    sha = "a" * 64
    assert short_id(sha) == "aaaaaaaaaaaa…"
    table = sources_table(pd.DataFrame({"source_id": [sha], "file_name": ["f.json"]}))
    assert list(table.columns[:3]) == ["delete", "file_name", "id"]
    assert table.loc[0, "source_id"] == sha and table.loc[0, "id"] == "aaaaaaaaaaaa…"


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_command_line_labels_the_same_way(cli, tmp_path):

    path = tmp_path / "mine.json"
    path.write_bytes(UNLABELLED)
    warehouse = tmp_path / "wh.duckdb"
    args = ("ingest", "--warehouse", warehouse, path, "--gpu", "4090", "--gpu-count", "2")
    refused = cli(*args, "--dataset", "synthetic", "--input-len", "170")
    assert refused.returncode == 1 and "give --input-len and --output-len" in refused.stdout
    cli(*args, "--dataset", "synthetic", "--input-len", "170", "--output-len", "21", check=True)
    from fleetplan.warehouse.db import Warehouse

    with Warehouse.open(warehouse) as wh:
        stored = benchmark_points(wh)[["gpu_count", "dataset", "input_len", "output_len"]]
    assert stored.drop_duplicates().values.tolist() == [[2, SYNTHETIC, 170, 21]]
