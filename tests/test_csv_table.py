"""The canonical CSV table: exported, edited, imported again, losslessly."""

from __future__ import annotations

import pandas as pd
import pytest

from fleetplan.core.errors import InputError
from fleetplan.core.tabular import to_csv
from fleetplan.warehouse.columns import CANONICAL_COLUMNS, LOAD_COLUMNS
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.importers.base import FileInput
from fleetplan.warehouse.importers.csv_table import DERIVED, JUDGED
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.ingest import ingest_paths
from fleetplan.warehouse.preview import FileStatus
from fleetplan.warehouse.queries import benchmark_points


def exported(warehouse_path) -> pd.DataFrame:
    with Warehouse.open(warehouse_path, read_only=True) as wh:
        return benchmark_points(wh)


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    keep = [c for c in CANONICAL_COLUMNS if c not in DERIVED]
    return (
        frame[keep]
        .sort_values(["source_sha256", "source_index", "offered_rate_rps"])
        .reset_index(drop=True)
    )


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_export_imports_back_losslessly(cli, sample_warehouse_path, tmp_path):
    text = cli("benchmarks", "--warehouse", sample_warehouse_path, check=True).stdout
    path = tmp_path / "table.csv"
    path.write_text(text)
    fresh = tmp_path / "fresh.duckdb"
    with Warehouse.open(fresh) as wh:
        (outcome,) = ingest_paths(wh, [path])
    assert outcome.status is FileStatus.IMPORTED and outcome.points == 130
    before, after = comparable(exported(sample_warehouse_path)), comparable(exported(fresh))
    # the load columns are judged again at store, from the same figures: the same values
    assert set(LOAD_COLUMNS) == JUDGED and set(before.columns) >= JUDGED
    assert before["stable"].notna().sum() >= 50 and before["load_reason"].notna().all()
    pd.testing.assert_frame_equal(before, after, check_dtype=False)
    # and into the warehouse it came from: every run is already there
    with Warehouse.open(sample_warehouse_path) as wh:
        (again,) = ingest_paths(wh, [path])
    assert again.status is FileStatus.DUPLICATE and "already in the warehouse" in again.message


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_edited_load_columns_are_judged_again(sample_warehouse_path, tmp_path):
    frame = exported(sample_warehouse_path)
    edited = frame.assign(
        sustained_rps=99.0, stable=pd.array([None] * len(frame), "boolean"), load_reason="=hm"
    )
    edited["load_basis"] = "send times"  # a claim the table cannot back: it has no send times
    path = tmp_path / "edited.csv"
    path.write_text(to_csv(edited))
    fresh = tmp_path / "fresh.duckdb"
    with Warehouse.open(fresh) as wh:
        (outcome,) = ingest_paths(wh, [path])
    assert outcome.status is FileStatus.IMPORTED
    columns = list(LOAD_COLUMNS)
    again = comparable(exported(fresh))[columns]
    pd.testing.assert_frame_equal(comparable(frame)[columns], again, check_dtype=False)


def test_formula_names_survive_the_round_trip(tmp_path):
    frame = pd.DataFrame(
        [
            {
                "model": '=HYPERLINK("http://x","y")',
                "gpu_model": "4090",
                "gpu_count": 2,
                "offered_rate_rps": float("inf"),
                "completed": 10,
                "duration_s": 2.5,
                "complete": True,
            }
        ]
    )
    parsed = parse(FileInput.from_bytes("t.csv", to_csv(frame).encode()))
    (run,) = parsed.runs
    assert run.model == '=HYPERLINK("http://x","y")'  # the apostrophe the export added is gone
    assert (run.gpu_model, run.gpu_label, run.gpu_count) == ("rtx-4090", "4090", 2)
    assert run.points[0].offered_rate_rps == float("inf")


def test_template_is_a_valid_empty_table_and_its_example_row_imports(cli, tmp_path):
    text = cli("template", check=True).stdout
    with pytest.raises(InputError, match="no rows"):
        parse(FileInput.from_bytes("template.csv", text.encode()))
    lines = text.splitlines()
    example = next(line for line in lines if line.startswith("# ,"))
    filled = "\n".join([*lines, example[2:]]) + "\n"
    (run,) = parse(FileInput.from_bytes("filled.csv", filled.encode())).runs
    assert run.model == "nvidia/AceMath-7B-Instruct" and run.points[0].completed == 200


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("run_id,", "run_idx,", 1), "unknown column"),
        (lambda t: t.replace(",duration_s,", ",duration_x,", 1), "unknown column"),
        (lambda t: t.replace(",200,200,0,", ",200,two hundred,0,", 1), "whole number"),
        (lambda t: t.replace(",0,True,", ",0,maybe,", 1), "true or false"),
    ],
)
def test_bad_cells_name_the_row_and_column(cli, sample_warehouse_path, edit, message):
    text = cli("benchmarks", "--warehouse", sample_warehouse_path, check=True).stdout
    with pytest.raises(InputError, match=message):
        parse(FileInput.from_bytes("bad.csv", edit(text).encode()))
