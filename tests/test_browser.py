"""The dashboard in a real headless Chromium (Debian's `chromium`, driven by Playwright): every
page renders without a Streamlit exception, a plan runs, and its CSV and workbook downloads are the
CLI's."""

from __future__ import annotations

import json
import shutil

import openpyxl
import pytest

from tests.support.browser import ARTIFACTS, scenario_uploader, screenshot, wait_rendered

pytestmark = pytest.mark.slow  # a real Chromium (tests/support/browser.py)

PAGES = {
    "": "Plan a fleet",
    "benchmarks": "Benchmarks",
    "upload": "Upload runs",
    "paper": "Paper check",
    "data": "Data",
}


def test_every_page_renders_in_a_real_browser(shared_dashboard_url, browser_page):
    """Every page at 1440x900, screenshots in test-artifacts/page-*.png: the whole page, and what
    shows before any scrolling."""
    assert len(PAGES) > 0  # a loop over nothing asserts nothing
    for path, title in PAGES.items():
        browser_page.goto(f"{shared_dashboard_url}/{path}")
        wait_rendered(browser_page, title)
        assert browser_page.locator("[data-testid='stException']").count() == 0, path
        screenshot(browser_page, f"page-{path or 'plan'}.png")
        screenshot(browser_page, f"page-{path or 'plan'}-1440x900.png", full_page=False)


# Counts the page's script runs from now on (Streamlit marks its app element "running").
COUNT_RUNS = """() => {
  window.__fleetplanRuns = 0;
  const app = document.querySelector('[data-testid="stApp"]');
  new MutationObserver(() => {
    if (app.getAttribute('data-test-script-state') === 'running') window.__fleetplanRuns += 1;
  }).observe(app, {attributes: true, attributeFilter: ['data-test-script-state']});
}"""


def test_plan_runs_and_its_csv_download_is_the_clis(
    cli, shared_dashboard_url, browser_page, tmp_path, sample_warehouse_path
):
    page = browser_page
    page.goto(shared_dashboard_url)
    wait_rendered(page, "Plan a fleet")
    page.get_by_text("Cost per month").first.wait_for()
    page.evaluate(COUNT_RUNS)
    with page.expect_download() as scenario_download:
        page.get_by_role("button", name="Download scenario (JSON)").click()
    scenario_path = tmp_path / "scenario.json"
    scenario_download.value.save_as(scenario_path)
    # At once after the scenario: a download that re-ran the page gave every file built on click
    # a new id, and the workbook's click, still holding the old one, never arrived.
    with page.expect_download() as xlsx_download:  # built when clicked (workbook.plan_xlsx)
        page.get_by_role("button", name="Download workbook (XLSX)").click()
    app_xlsx = tmp_path / "fleetplan.app.xlsx"
    xlsx_download.value.save_as(app_xlsx)
    with page.expect_download() as csv_download:
        page.get_by_role("button", name="Download plan (CSV)").click()
    app_csv = tmp_path / "fleetplan.app.csv"
    csv_download.value.save_as(app_csv)
    # The plan's JSON holds the cost/carbon frontier, which the page plans only when its tab is
    # open (it is not): the download plans it when clicked.
    with page.expect_download() as json_download:
        page.get_by_role("button", name="Download plan (JSON)").click()
    app_json = tmp_path / "fleetplan.app.json"
    json_download.value.save_as(app_json)
    page.wait_for_timeout(2_000)  # a run a click started would have begun by now
    assert page.evaluate("() => window.__fleetplanRuns") == 0  # no download re-ran the page

    # The CLI on the same scenario, against a copy of the same warehouse (the app holds its file).
    copy = tmp_path / "copy.duckdb"
    shutil.copy(sample_warehouse_path, copy)
    cli(
        "plan",
        "--warehouse",
        copy,
        "--scenario",
        scenario_path,
        "--csv",
        tmp_path / "cli.csv",
        "--xlsx",
        tmp_path / "cli.xlsx",
        "--json",
        tmp_path / "cli.json",
        check=True,
    )
    assert app_csv.read_text() == (tmp_path / "cli.csv").read_text()
    app_plan = json.loads(app_json.read_text())
    assert app_plan["pareto"]  # the frontier, planned for the download
    assert app_plan == json.loads((tmp_path / "cli.json").read_text())
    sheets = [openpyxl.load_workbook(p, read_only=True) for p in (app_xlsx, tmp_path / "cli.xlsx")]
    for name in ("fleet", "baselines", "inputs", "sources"):
        app_rows, cli_rows = (list(book[name].iter_rows(values_only=True)) for book in sheets)
        assert app_rows == cli_rows and len(app_rows) > 1, name

    # Load a scenario with a tighter target: the plan changes on the page.
    before = page.locator("[data-testid='stMetricValue']").first.inner_text()
    scenario = json.loads(scenario_path.read_text())
    scenario["classes"][0]["ttft_p99_ms"] = 60
    tighter = tmp_path / "tighter.json"
    tighter.write_text(json.dumps(scenario))
    scenario_uploader(page).set_input_files(str(tighter))
    page.wait_for_function(
        "before => document.querySelector('[data-testid=\"stMetricValue\"]')?.innerText !== before",
        arg=before,
        timeout=60_000,
    )
    wait_rendered(page, "Plan a fleet")
    assert page.locator("[data-testid='stException']").count() == 0
    assert "H100 PCIe" in page.get_by_text("Fleet: ").first.inner_text()
    screenshot(page, "plan-tighter.png")


def test_the_load_curves_are_drawn_in_a_real_browser(shared_dashboard_url, browser_page):
    """The Benchmarks page's curves and the Plan page's pools on them, as a user sees them."""
    page = browser_page
    ARTIFACTS.mkdir(exist_ok=True)
    for path, title, tab, shot in (
        ("benchmarks", "Benchmarks", "Latency vs load", "benchmarks-latency-vs-load.png"),
        ("", "Plan a fleet", "Load curves", "plan-load-curves.png"),
    ):
        page.goto(f"{shared_dashboard_url}/{path}")
        wait_rendered(page, title)
        page.get_by_role("tab", name=tab).click()
        panel = page.get_by_role("tabpanel", name=tab)
        panel.locator(".js-plotly-plot").nth(1).wait_for(timeout=30_000)
        page.wait_for_timeout(1000)
        assert page.locator("[data-testid='stException']").count() == 0, path
        assert panel.locator(".js-plotly-plot").count() == 2
        panel.screenshot(path=str(ARTIFACTS / shot))
