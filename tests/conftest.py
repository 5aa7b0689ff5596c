from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests

from collectors.vllm_server import free_port
from warehouse.db import Warehouse

ROOT = Path(__file__).resolve().parents[1]
IONET_ENV = "FLEETPLAN_IONET_RESULTS"


def ionet_results_dir() -> Path | None:
    """The raw io.net results: $FLEETPLAN_IONET_RESULTS, else shared/data/ionet-aibc2025/results
    beside the checkout or beside one of its parent folders."""
    candidates = [os.environ.get(IONET_ENV)]
    candidates += [folder / "shared/data/ionet-aibc2025/results" for folder in ROOT.parents]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir() and any(Path(candidate).glob("*.json")):
            return Path(candidate)
    return None


@pytest.fixture
def ionet_dir() -> Path:
    found = ionet_results_dir()
    if found is None:
        pytest.skip(f"raw io.net results not found (set ${IONET_ENV} to their folder)")
    return found


@pytest.fixture
def warehouse_path(tmp_path: Path) -> Path:
    return tmp_path / "wh.duckdb"


@pytest.fixture
def warehouse(warehouse_path: Path):
    with Warehouse.open(warehouse_path) as wh:
        yield wh


@pytest.fixture(scope="session")
def _sample_warehouse_template(tmp_path_factory) -> Path:
    from warehouse.sample_data import build

    path = tmp_path_factory.mktemp("sample") / "sample.duckdb"
    with Warehouse.open(path) as wh:
        outcomes = list(build(wh))
    assert all(getattr(o, "status", "imported") == "imported" for o in outcomes[1:]), outcomes
    return path


@pytest.fixture
def sample_warehouse_path(_sample_warehouse_template: Path, tmp_path: Path) -> Path:
    """A private copy of a warehouse built from sample_data/ (the build runs once per session)."""
    path = tmp_path / "sample.duckdb"
    shutil.copy(_sample_warehouse_template, path)
    return path


@contextmanager
def held_by_another_process(path: Path, seconds: float = 60) -> Iterator[subprocess.Popen]:
    """Another process opens the warehouse file and holds it (DuckDB: one process per file)."""
    code = textwrap.dedent(f"""
        import time, duckdb
        con = duckdb.connect({str(path)!r})
        print("held", flush=True)
        time.sleep({seconds})
        con.close()
    """)
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait()


@contextmanager
def served_dashboard(warehouse: Path) -> Iterator[tuple[str, subprocess.Popen]]:
    """`fleetplan app` serving `warehouse` on a free port, as a real process: (URL, process)."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fleetplan.cli",
            "app",
            "--port",
            str(port),
            "--headless",
            "--warehouse",
            str(warehouse),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if requests.get(f"{url}/_stcore/health", timeout=2).ok:
                    break
            except requests.ConnectionError:
                pass
            assert process.poll() is None, process.stdout.read()
            assert time.monotonic() < deadline, "the dashboard did not start within 90 s"
            time.sleep(0.5)
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.fixture
def dashboard_url(sample_warehouse_path: Path) -> Iterator[str]:
    """`fleetplan app` serving a copy of the sample warehouse on a free port."""
    with served_dashboard(sample_warehouse_path) as (url, _):
        yield url


def write_json(path: Path, value: object) -> Path:
    path.write_text(json.dumps(value))
    return path


def table_snapshot(wh: Warehouse) -> dict[str, list]:
    """Every row of the benchmark tables, to check that a rejected import changed nothing."""
    cur = wh.cursor()
    return {
        table: cur.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()  # noqa: S608
        for table in ("sources", "runs", "points")
    }


STREAM_SERVER = ROOT / "tests" / "stream_server.py"


@pytest.fixture
def stream_server():
    started = []

    def start(ttft_ms: float = 50, tpot_ms: float = 10, fault: str = "none") -> str:
        port = free_port()
        process = subprocess.Popen(
            [
                sys.executable,
                str(STREAM_SERVER),
                "--port",
                str(port),
                "--ttft-ms",
                str(ttft_ms),
                "--tpot-ms",
                str(tpot_ms),
                "--fault",
                fault,
            ]
        )
        started.append(process)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{url}/v1/models", timeout=1).ok:
                    return url
            except requests.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError("the test server did not start")

    yield start
    for process in started:
        process.kill()
        process.wait()
