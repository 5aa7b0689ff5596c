"""Issue 14: only a DuckDB database (or a new path) is a warehouse, and a damaged one is said to
be damaged, at once, never "in use by another process"."""

from __future__ import annotations

import time

import pytest

from benchmarks.inputs.vllm_results import make_result
from fleetplan.cli import main
from fleetplan.core.errors import WarehouseBusyError, WarehouseDamagedError, WarehouseError
from fleetplan.warehouse.db import Warehouse
from tests.support.files import write_json
from tests.support.processes import held_by_another_process

# Every command that takes --warehouse, with the arguments it needs besides.
COMMANDS = [
    ("ingest", "RUN"),
    ("benchmarks",),
    ("build",),
    ("plan", "--scenario", "examples/chat-batch-qwen14b.json"),
    ("capacity", "--model", "m", "--gpu", "h100", "--gpu-count", "1"),
]


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def run_file(tmp_path):
    return write_json(tmp_path / "run.json", make_result(rate=2, seed=1))


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("kind", ["json", "csv"])
def test_a_data_file_given_as_the_warehouse_is_refused_and_left_alone(
    tmp_path, capsys, run_file, command, kind
):
    data = tmp_path / f"x.{kind}"
    data.write_bytes(run_file.read_bytes() if kind == "json" else b"model,gpu_model\na,b\n")
    before = data.read_bytes()
    args = [run_file if arg == "RUN" else arg for arg in command[1:]]
    code, out, err = cli(capsys, command[0], "--warehouse", data, *args)
    assert code == 3, (out, err)
    assert "not a DuckDB database" in err and "--warehouse" in err
    assert "imported" not in out
    assert data.read_bytes() == before


def test_the_environment_variable_is_checked_the_same_way(tmp_path, capsys, run_file, monkeypatch):
    monkeypatch.setenv("FLEETPLAN_WAREHOUSE", str(run_file))
    code, _, err = cli(capsys, "ingest", run_file)
    assert code == 3 and "not a DuckDB database" in err and "FLEETPLAN_WAREHOUSE" in err


def test_a_new_path_and_an_existing_warehouse_are_warehouses(tmp_path, capsys, run_file):
    path = tmp_path / "new" / "wh.duckdb"
    assert cli(capsys, "ingest", "--warehouse", path, run_file)[0] == 0
    code, out, _ = cli(capsys, "ingest", "--warehouse", path, run_file)
    assert code == 0 and "1 already present" in out


def test_a_folder_or_a_path_under_a_file_is_refused_naming_the_option(tmp_path, capsys, run_file):
    code, _, err = cli(capsys, "ingest", "--warehouse", tmp_path, run_file)
    assert code == 3 and "it is a folder" in err and "--warehouse" in err
    code, _, err = cli(capsys, "ingest", "--warehouse", run_file / "wh.duckdb", run_file)
    assert code == 3 and "is a file, not a folder" in err and "Traceback" not in err
    code, _, err = cli(capsys, "ingest", "--warehouse", run_file / "a" / "wh.duckdb", run_file)
    assert code == 3 and "is a file, not a folder" in err


def damage(path):
    """Overwrite a data block of a real warehouse: DuckDB's checksum then fails ("... in block at
    location ..."), a message that contains "lock"."""
    data = bytearray(path.read_bytes())
    data[8192 : 8192 + 256] = bytes(range(256))
    path.write_bytes(bytes(data))


def test_a_damaged_warehouse_is_reported_as_damaged_without_waiting(warehouse_path):
    Warehouse.open(warehouse_path).close()
    damage(warehouse_path)
    for read_only in (False, True):
        started = time.monotonic()
        with pytest.raises(WarehouseDamagedError) as caught:
            Warehouse.open(warehouse_path, read_only=read_only, wait_s=30)
        assert time.monotonic() - started < 5
        message = str(caught.value)
        assert "is damaged" in message and "fleetplan build" in message and "backup" in message
        assert "in use" not in message


def test_a_damaged_warehouse_on_the_command_line(warehouse_path, capsys, run_file):
    Warehouse.open(warehouse_path).close()
    damage(warehouse_path)
    code, _, err = cli(capsys, "ingest", "--warehouse", warehouse_path, run_file)
    assert code == 3 and "damaged" in err and "waiting" not in err


def test_a_busy_warehouse_is_still_busy(warehouse_path):
    Warehouse.open(warehouse_path).close()
    with (
        held_by_another_process(warehouse_path),
        pytest.raises(WarehouseBusyError, match="in use by process"),
    ):
        Warehouse.open(warehouse_path, wait_s=0.2)


def test_an_empty_file_is_not_a_warehouse(tmp_path):
    empty = tmp_path / "empty.duckdb"
    empty.touch()
    with pytest.raises(WarehouseError, match="not a DuckDB database"):
        Warehouse.open(empty)
