"""The dashboard as others reach it, in a real headless Chromium against `fleetplan app` started
as a daemon would start it (no terminal, no --headless): text from a file is shown as text (no
link, no image from it), the tables offer no raw CSV export, the command line ingests while the
dashboard runs and the dashboard shows the new run after a reload, and a read-only dashboard
offers no upload. Screenshots go to test-artifacts/."""

from __future__ import annotations

import json

import pytest

from benchmarks.inputs.vllm_results import make_result
from tests.support.browser import ARTIFACTS, wait_rendered
from tests.test_app_serving import served

pytestmark = pytest.mark.slow  # a real Chromium (tests/support/browser.py)

EVIL = "evil.example"
# A file name, a model and a GPU label that are Markdown: a link, an image, a bare address.
FILE_NAME = f"[click](https:{EVIL}) ![pic](https:{EVIL}) www.{EVIL}.json"
MODEL = f"[model](https://{EVIL}/m) www.{EVIL}"
GPU = f"![gpu](https://{EVIL}/g.png)"


def open_page(page, url: str, path: str, title: str) -> None:
    """Straight to `path`, as a shared link does."""
    page.goto(f"{url}/{path}")
    wait_rendered(page, title)


def test_a_link_straight_to_a_page_gets_the_apps_navigation(sample_warehouse_path, browser_page):
    """A fresh server's first request to a page's path: drawn through app/main.py (the app's
    navigation, wide layout), not by Streamlit's own router over a `pages/` folder, which drew
    it with a sidebar of file names ("main, benchmarks, ...") while the pages lived in pages/."""
    page = browser_page
    with served(sample_warehouse_path) as (url, _, _):
        open_page(page, url, "upload", "Upload runs")
        nav = page.locator("[data-testid='stSidebarNav']").inner_text()
        assert "Paper check" in nav and "Upload runs" in nav, nav
        assert "main" not in nav.split(), nav


def nothing_from_the_file(page) -> None:
    links = page.locator(f"a[href*='{EVIL}']").count()
    images = page.locator(f"img[src*='{EVIL}']").count()
    rendered = [e.evaluate("e => e.outerHTML") for e in page.locator(f"a[href*='{EVIL}']").all()]
    assert (links, images) == (0, 0), f"rendered from the file's text: {rendered}"


def test_file_text_is_text_and_tables_export_nothing_raw(
    sample_warehouse_path, browser_page, tmp_path
):
    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)
    result = make_result(seed=41, model=MODEL, metadata={"gpu_name": GPU, "gpu_count": "1"})
    path = tmp_path / FILE_NAME
    path.write_text(json.dumps(result))
    with served(sample_warehouse_path) as (url, _, _):
        open_page(page, url, "upload", "Upload runs")
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
        page.locator("[data-testid='stDataFrame']").first.wait_for(timeout=60_000)
        page.wait_for_timeout(500)
        wait_rendered(page, "Upload runs")
        for expander in page.locator("[data-testid='stExpander'] summary").all():
            expander.click()  # the per-file details: warnings, the GPU kept as written
        page.wait_for_timeout(500)
        # the escaped text is shown as written
        assert page.get_by_text(FILE_NAME).count() > 0
        nothing_from_the_file(page)
        page.screenshot(path=str(ARTIFACTS / "hardening-upload-markdown.png"), full_page=True)
        # the table's toolbar: shown on hover, without "Download as CSV" (formulas go raw)
        table = page.locator("[data-testid='stDataFrame']").first
        table.hover()
        toolbar = page.locator("[data-testid='stElementToolbar']").first
        toolbar.wait_for(timeout=10_000)
        assert toolbar.locator("button").count() > 0  # the toolbar is there ...
        assert page.get_by_role("button", name="Download as CSV").count() == 0  # ... no export
        # imported: the flash message and the Imported files list carry the name as text
        page.get_by_role("button", name="Import 1 file(s)").click()
        page.get_by_text("Imported files").first.wait_for(timeout=60_000)
        page.wait_for_timeout(500)
        wait_rendered(page, "Upload runs")
        nothing_from_the_file(page)
        for name, title in (("", "Plan a fleet"), ("benchmarks", "Benchmarks"), ("data", "Data")):
            page.goto(f"{url}/{name}")
            wait_rendered(page, title)
            nothing_from_the_file(page)


def runs_shown(page) -> int:
    labels = page.locator("[data-testid='stMetricLabel']").all_inner_texts()
    values = page.locator("[data-testid='stMetricValue']").all_inner_texts()
    return int(dict(zip(labels, values, strict=True))["Runs"].replace(",", ""))


def test_the_command_line_ingests_while_the_dashboard_runs(
    cli, sample_warehouse_path, browser_page, tmp_path
):
    page = browser_page
    run = tmp_path / "measured-meanwhile.json"
    run.write_text(json.dumps(make_result(seed=42, model="acme/meanwhile")))
    with served(sample_warehouse_path) as (url, _, _):
        open_page(page, url, "data", "Data")
        before = runs_shown(page)
        # the dashboard has read the warehouse: it must have let go of the file
        done = cli("ingest", "--warehouse", sample_warehouse_path, "--wait", "5", run)
        assert done.returncode == 0, done.stdout + done.stderr
        exported = cli("benchmarks", "--warehouse", sample_warehouse_path)
        assert exported.returncode == 0 and "acme/meanwhile" in exported.stdout, exported.stderr
        page.reload()
        wait_rendered(page, "Data")
        assert runs_shown(page) == before + 1
        assert page.get_by_text("measured-meanwhile.json").count() > 0
        page.goto(f"{url}/benchmarks")
        wait_rendered(page, "Benchmarks")
        assert page.locator("[data-testid='stException']").count() == 0


def test_a_read_only_dashboard_offers_no_upload(sample_warehouse_path, browser_page):
    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)
    with served(sample_warehouse_path, "--read-only") as (url, _, _):
        open_page(page, url, "upload", "Upload runs")
        assert page.get_by_text("This dashboard is read-only").count() == 1
        page.screenshot(path=str(ARTIFACTS / "hardening-read-only-upload.png"), full_page=True)
        assert page.get_by_text("Read-only: uploading and deleting runs are turned off").count()
        assert page.locator("[data-testid='stFileUploaderDropzoneInput']").count() == 0
        assert page.get_by_role("button", name="Delete").count() == 0
