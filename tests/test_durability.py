"""Ingests as real processes: kill -9 in the middle of a large file leaves the warehouse as it was
before that file, and two ingests started together both land, the second waiting with a clear
message (nothing lost, nothing doubled)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.inputs.tables import typed_in_table
from benchmarks.inputs.vllm_results import make_result
from fleetplan.warehouse.db import Warehouse
from tests.support.files import table_snapshot, write_json
from tests.support.processes import fleetplan

ROWS = 40_000  # about 29 MB of CSV: under the 32 MB limit, long enough to stop half way
# Where the moment to act on is the file's reading (the warehouse is held from before it), a
# quarter as many rows leave seconds to act in and cost a quarter of the parsing.
READ_ROWS = 10_000


def big_table(path: Path, rows: int = ROWS) -> Path:
    path.write_text(typed_in_table(rows))
    return path


def ingest(warehouse: Path, *paths: Path, wait: float = 60) -> subprocess.Popen:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fleetplan",
            "-v",
            "ingest",
            "--warehouse",
            str(warehouse),
            "--wait",
            str(wait),
            *map(str, paths),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_line(stream, needle: str) -> list[str]:
    seen = []
    for line in stream:
        seen.append(line)
        if needle in line:
            return seen
    raise AssertionError(f"{needle!r} never came; the process wrote: {''.join(seen)[-2000:]}")


def snapshot(path: Path) -> dict:
    with Warehouse.open(path, wait_s=30) as warehouse:
        return table_snapshot(warehouse)


def counts(path: Path) -> tuple[int, int, int]:
    with Warehouse.open(path, wait_s=30) as warehouse:
        return tuple(
            warehouse.connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608
            for table in ("sources", "runs", "points")
        )


@pytest.fixture(scope="module")
def big_file(tmp_path_factory) -> Path:
    return big_table(tmp_path_factory.mktemp("big") / "big.csv")


@pytest.fixture(scope="module")
def read_file(tmp_path_factory) -> Path:
    """A file whose reading is the moment a test acts in (`READ_ROWS` rows)."""
    return big_table(tmp_path_factory.mktemp("read") / "big.csv", READ_ROWS)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("moment", ["while parsing", "while storing"])
def test_kill_9_mid_ingest_leaves_the_warehouse_as_before(tmp_path, request, moment):
    # while storing: the inserts of 40,000 points take long enough to be stopped in
    rows = READ_ROWS if moment == "while parsing" else ROWS
    big_file = request.getfixturevalue("read_file" if moment == "while parsing" else "big_file")
    warehouse = tmp_path / "w.duckdb"
    small = write_json(tmp_path / "small.json", make_result(rate=2, seed=1))
    done = fleetplan("ingest", "--warehouse", warehouse, small)
    assert done.returncode == 0, done.stderr
    before = snapshot(warehouse)

    process = ingest(warehouse, big_file)
    if moment == "while parsing":
        # the warehouse is open (the process holds it) and the file is being read
        wait_for_line(process.stderr, "reading ")
    else:
        # the transaction is open and the inserts have begun
        wait_for_line(process.stderr, f"storing big.csv: {rows // 8} run(s), {rows} point(s)")
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL
    assert "imported" not in process.stdout.read()  # it never got to report the file stored

    # the warehouse opens cleanly and holds exactly what it held before
    assert snapshot(warehouse) == before
    # ... and the same file then imports whole, once
    again = fleetplan("ingest", "--warehouse", warehouse, big_file)
    assert again.returncode == 0, again.stderr
    assert f"{rows // 8} run(s), {rows} point(s)" in again.stdout
    assert counts(warehouse) == (2, rows // 8 + 1, rows + 1)


@pytest.mark.timeout(600)
def test_two_ingests_at_once_both_land_once(tmp_path, read_file):
    warehouse = tmp_path / "w.duckdb"
    a = write_json(tmp_path / "a.json", make_result(rate=1, seed=1))
    b = write_json(tmp_path / "b.json", make_result(rate=2, seed=2))
    first = ingest(warehouse, read_file, a)
    wait_for_line(first.stderr, "reading ")  # the first one holds the warehouse
    # Held still while the second starts: on a busy machine the first could otherwise finish
    # before the second's interpreter has even started, and there would be nothing to wait for.
    os.kill(first.pid, signal.SIGSTOP)
    try:
        second = ingest(warehouse, a, b)  # started while the first is still at work
        # the second says what it is waiting for before the first goes on (read up to its last
        # line: communicate() below reads the pipe itself, past what this reader buffered)
        seen = wait_for_line(second.stderr, "waiting up to 60 s")
    finally:
        os.kill(first.pid, signal.SIGCONT)
    out_first, err_first = first.communicate(timeout=300)
    out_second, err_rest = second.communicate(timeout=300)
    err_second = "".join(seen) + err_rest
    assert first.returncode == 0, err_first
    assert second.returncode == 0, err_second
    assert "is in use by process" in err_second  # ... then did its work
    assert "2 imported, 0 already present" in out_first
    assert "1 imported, 1 already present" in out_second  # a.json came first from the other
    # nothing lost, nothing doubled: big + a + b
    assert counts(warehouse) == (3, READ_ROWS // 8 + 2, READ_ROWS + 2)


def test_a_second_ingest_that_cannot_wait_long_enough_changes_nothing(cli, tmp_path, read_file):
    warehouse = tmp_path / "w.duckdb"
    first = ingest(warehouse, read_file)
    wait_for_line(first.stderr, "reading ")
    late = tmp_path / "late.json"
    write_json(late, make_result(rate=4, seed=4))
    second = cli("ingest", "--warehouse", warehouse, "--wait", "0", late)
    first.communicate(timeout=300)
    assert second.returncode != 0
    assert "is in use by process" in second.stderr and "Traceback" not in second.stderr
    # only the first's file; rerun the second
    assert counts(warehouse) == (1, READ_ROWS // 8, READ_ROWS)
