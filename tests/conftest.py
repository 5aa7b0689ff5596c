from __future__ import annotations

import gc
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks.inputs.shared_data import IONET_ENV, ionet_results_dir, tool_outputs_dir
from fleetplan.warehouse.db import Warehouse
from tests.support.paths import ROOT
from tests.support.processes import local_servers, served_dashboard
from tests.support.slow import mark_process_tests


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_process_tests(items)  # a test that starts a process is slow (tests/support/slow.py)


@pytest.fixture
def ionet_dir() -> Path:
    found = ionet_results_dir()
    if found is None:
        pytest.skip(f"raw io.net results not found (set ${IONET_ENV} to their folder)")
    return found


@pytest.fixture
def tool_outputs() -> Path:
    """Other tools' real output files beside the checkout (shared/data/tool-outputs)."""
    found = tool_outputs_dir()
    if found is None:
        pytest.skip("other tools' outputs not found: shared/data/tool-outputs beside the checkout")
    return found


@pytest.fixture
def warehouse_path(tmp_path: Path) -> Path:
    return tmp_path / "wh.duckdb"


@pytest.fixture
def warehouse(warehouse_path: Path):
    with Warehouse.open(warehouse_path) as wh:
        yield wh


@pytest.fixture(scope="session")
def sample_warehouse_template(tmp_path_factory) -> Path:
    """The warehouse built from sample_data/, once per session: read it (read_only=True) or copy
    it (`sample_warehouse_path`), never write it."""
    from fleetplan.warehouse.sample_data import build

    path = tmp_path_factory.mktemp("sample") / "sample.duckdb"
    with Warehouse.open(path) as wh:
        outcomes = list(build(wh))
    assert all(getattr(o, "status", "imported") == "imported" for o in outcomes[1:]), outcomes
    path.chmod(0o444)  # a test that writes it fails, instead of changing the others' data
    return path


@pytest.fixture
def sample_warehouse_path(sample_warehouse_template: Path, tmp_path: Path) -> Path:
    """A private copy of a warehouse built from sample_data/ (the build runs once per session)."""
    path = tmp_path / "sample.duckdb"
    shutil.copyfile(sample_warehouse_template, path)
    return path


@dataclass(frozen=True)
class SampleTables:
    """The sample warehouse's tables, read once per session; each read gives a copy, so that no
    test changes what another reads."""

    frames: dict

    def __getattr__(self, name: str):
        try:
            return self.frames[name].copy()
        except KeyError:
            raise AttributeError(name) from None

    def __getitem__(self, name: str):
        return getattr(self, name)


@pytest.fixture(scope="session")
def sample_tables(sample_warehouse_template: Path) -> SampleTables:
    """`points`, `catalog`, `prices`, `regions` and `origins` of the sample warehouse."""
    from fleetplan.warehouse.queries import (
        benchmark_points,
        gpu_catalog,
        gpu_prices,
        regions,
        run_origins,
    )

    with Warehouse.open(sample_warehouse_template, read_only=True) as wh:
        return SampleTables(
            {
                "points": benchmark_points(wh),
                "catalog": gpu_catalog(wh),
                "prices": gpu_prices(wh),
                "regions": regions(wh),
                "origins": run_origins(wh),
            }
        )


@pytest.fixture
def dashboard_url(sample_warehouse_path: Path) -> Iterator[str]:
    """`fleetplan app` serving a copy of the sample warehouse on a free port."""
    with served_dashboard(sample_warehouse_path) as (url, _):
        yield url


@pytest.fixture(scope="module")
def shared_dashboard_url(sample_warehouse_template: Path, tmp_path_factory) -> Iterator[str]:
    """`fleetplan app` serving a copy of the sample warehouse for a module's tests, each in a
    browser context (a Streamlit session) of its own: for tests that change no data."""
    path = tmp_path_factory.mktemp("dashboard") / "sample.duckdb"
    shutil.copyfile(sample_warehouse_template, path)
    with served_dashboard(path) as (url, _):
        yield url


STREAM_SERVER = ROOT / "benchmarks" / "inputs" / "stream_server.py"


@pytest.fixture
def stream_server():
    """`start(ttft_ms, tpot_ms, fault, slots)` -> the URL of a benchmarks/inputs/stream_server."""
    with local_servers(STREAM_SERVER) as started:

        def start(
            ttft_ms: float = 50, tpot_ms: float = 10, fault: str = "none", slots: int = 0
        ) -> str:
            return started(
                "--ttft-ms", ttft_ms, "--tpot-ms", tpot_ms, "--fault", fault, "--slots", slots
            )

        yield start


@pytest.fixture(scope="module")
def chromium_browser():
    """One headless Chromium for a module's tests, each in a context of its own. Not for the
    session: Playwright's sync API keeps an event loop running in the thread while it is open,
    and a command run in-process (`cli`) that calls asyncio.run() would meet it."""
    from tests.support.browser import chromium_browser as launch

    with launch() as browser:
        yield browser


@pytest.fixture
def browser_page(chromium_browser):
    """A page at 1440x900 in a fresh browser context (tests/support/browser.py)."""
    from tests.support.browser import browser_page as open_page

    with open_page(chromium_browser) as page:
        yield page


@pytest.fixture
def fresh_caches():
    """Streamlit's caches emptied around a test, so that no page sees another test's warehouse
    (modules with AppTest pages use it: `pytestmark = pytest.mark.usefixtures("fresh_caches")`)."""
    import streamlit as st

    st.cache_data.clear()
    st.cache_resource.clear()
    yield
    st.cache_data.clear()
    st.cache_resource.clear()
    gc.collect()


@pytest.fixture(scope="module")
def ray_cluster():
    """A real local Ray cluster: a head and one worker node per GPU type in
    tests/support/ray_campaign.TYPES, each declaring that type as a resource (no GPU here). One
    per module (a test adds and removes nodes; Ray remembers them a while), and the Ray modules
    run on one xdist worker (their `xdist_group`): never two clusters at once."""
    ray = pytest.importorskip("ray", reason="Ray is the cluster extra: pip install -e '.[cluster]'")
    if os.environ.get("CI"):  # in CI the extra is installed by `make test`: never skip there
        assert ray is not None
    from ray.cluster_utils import Cluster

    from tests.support.ray_campaign import TYPES

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    for resource in TYPES.values():
        cluster.add_node(num_cpus=1, resources={resource: 1})
    cluster.wait_for_nodes()
    yield cluster
    cluster.shutdown()


@pytest.fixture
def cli():
    """`cli(*args, check=, env=, cwd=, input=)`: the `fleetplan` command run in this process
    (tests/support/cli.py), answered as a finished process: a CompletedProcess."""
    from tests.support.cli import run_cli

    return run_cli


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A tiny random-weight Llama and its tokenizer (benchmarks/inputs/tiny_model.py)."""
    from benchmarks.inputs.tiny_model import build_tiny_llama

    return build_tiny_llama(tmp_path_factory.mktemp("tiny-llama"))
