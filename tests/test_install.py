"""fleetplan as a normal (non-editable) install: one `fleetplan` package in site-packages that
carries its subpackages, the sample data and the dashboard's settings, and works away from the
checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
import requests

from tests.support.paths import ROOT
from tests.support.processes import served_dashboard

NOT_SOURCE = (
    ".git",
    ".venv",
    "var",
    "build",
    "test-artifacts",
    "*.egg-info",
    "__pycache__",
    ".*cache",
)


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The project built as a wheel and unpacked into a folder of its own (no dependencies: the
    test environment has them)."""
    work = tmp_path_factory.mktemp("install")
    # Built from a copy, so that setuptools' build/ folder never lands in the checkout.
    source = work / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(work / "wheel"), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = (work / "wheel").glob("fleetplan-*.whl")
    site = work / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def run_installed(site: Path, *args: str, cwd: Path, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fleetplan", *args],
        cwd=cwd, env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True, text=True, timeout=300, **kwargs,
    )  # fmt: skip


def test_the_wheel_holds_one_package_with_its_data(installed):
    top = {path.name for path in installed.iterdir() if not path.name.endswith(".dist-info")}
    assert top == {"fleetplan"}, "nothing generic (app, warehouse, ...) lands in site-packages"
    package = installed / "fleetplan"
    for part in ("core", "cli", "services", "app", "collectors", "warehouse", "planner"):
        assert (package / part / "__init__.py").is_file(), part
    assert (package / "app" / "main.py").is_file()
    shipped = (package / "app" / ".streamlit" / "config.toml").read_text()
    top = (ROOT / ".streamlit" / "config.toml").read_text()  # the checkout's, the same settings
    assert tomllib.loads(shipped) == tomllib.loads(top)
    assert (package / "sample_data" / "benchmarks" / "ionet-aibc2025.json").is_file()
    assert (package / "sample_data" / "gpu_catalog.toml").is_file()
    assert (package / "sample_data" / "models" / "llama-3.1-8b-config.json").is_file()
    assert (package / "sample_data" / "models" / "architectures.toml").is_file()


def test_the_installed_package_builds_plans_and_serves_away_from_the_checkout(installed, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(installed)}
    where = subprocess.run(
        [sys.executable, "-c", "import fleetplan.warehouse.db as m; print(m.__file__)"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert where.stdout.startswith(str(installed)), where.stdout

    built = run_installed(installed, "build", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    default = tmp_path / "var" / "fleetplan.duckdb"  # an install keeps its warehouse under ./var
    assert default.is_file(), built.stdout
    assert "130" in built.stdout or "imported" in built.stdout
    rows = run_installed(installed, "benchmarks", "--format", "json", cwd=tmp_path)
    assert rows.returncode == 0, rows.stderr
    assert rows.stdout.count('"gpu_model"') == 130

    scenario = ROOT / "examples" / "chat-batch-qwen14b.json"
    planned = run_installed(installed, "plan", "--scenario", str(scenario), cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr

    with served_dashboard(default, cwd=tmp_path, env=env) as (url, _):
        assert requests.get(url, timeout=10).ok
        assert requests.get(f"{url}/_stcore/health", timeout=10).text == "ok"
