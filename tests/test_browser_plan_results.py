"""The Plan page's results in a real headless Chromium at 1440x900: every results tab drawn
without a Streamlit exception, the fleet's GPUs in words (not cut off), the trade-off sentence,
and a screenshot of each tab in test-artifacts/ to look at."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.browser import ARTIFACTS, scenario_uploader, wait_rendered

pytestmark = pytest.mark.slow  # a real Chromium (tests/support/browser.py)

TABS = ("Fleet", "Compared", "Cost vs carbon", "Capacities")


@pytest.fixture
def page_1440(browser_page):
    """The shared headless Chromium page at 1440x900 (tests/conftest.py)."""
    return browser_page


def _with_h100_power(template, tmp_path):
    """The page's default scenario with the H100's power given: carbon, and a frontier."""
    from fleetplan.services.scenario_defaults import default_scenario
    from fleetplan.warehouse.db import Warehouse
    from fleetplan.warehouse.queries import benchmark_points, gpu_catalog, gpu_prices, regions

    with Warehouse.open(template, read_only=True) as wh:
        tables = (benchmark_points(wh), gpu_catalog(wh), gpu_prices(wh), regions(wh))
    raw = default_scenario(*tables).model_dump(mode="json")
    for offer in raw["gpus"]:
        if offer["gpu_model"] == "h100-pcie":
            offer |= {"idle_w": 60, "rated_w": 350}
    path = tmp_path / "with-power.json"
    path.write_text(json.dumps(raw))
    return path


def _shoot_tabs(page, prefix: str) -> None:
    for tab in TABS:
        page.get_by_role("tab", name=tab).click()
        wait_rendered(page, "Plan a fleet")  # only the open tab is drawn: a click re-runs
        panel = page.get_by_role("tabpanel", name=tab)
        assert page.locator("[data-testid='stException']").count() == 0, tab
        slug = tab.lower().replace(" ", "-")
        panel.screenshot(path=str(ARTIFACTS / f"{prefix}-{slug}.png"))


def test_the_results_tabs_in_a_real_browser(
    dashboard_url, page_1440, sample_warehouse_template, tmp_path
):
    page = page_1440
    page.goto(dashboard_url)
    wait_rendered(page, "Plan a fleet")
    page.get_by_text("Cost per month").first.wait_for(timeout=60_000)
    fleet = page.get_by_text("Fleet: ").first.inner_text()
    assert " x " in fleet and "..." not in fleet and "\u2026" not in fleet
    gpus = page.locator("[data-testid='stMetricValue']").nth(4)
    assert re.fullmatch(r"\d+ \(\d+\)", gpus.inner_text()), gpus.inner_text()  # GPUs (servers)
    # the metric's value fits its box: nothing cut off with an ellipsis
    assert gpus.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    ARTIFACTS.mkdir(exist_ok=True)
    _shoot_tabs(page, "plan-results")
    page.screenshot(path=str(ARTIFACTS / "plan-results-page.png"), full_page=True)

    # with every GPU's power known: carbon, the frontier and the trade-off sentence
    uploader = scenario_uploader(page)
    uploader.set_input_files(str(_with_h100_power(sample_warehouse_template, tmp_path)))
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=\"stMetricValue\"]')[3]?.innerText"
        " !== 'unknown'",
        timeout=60_000,
    )
    wait_rendered(page, "Plan a fleet")
    assert page.locator("[data-testid='stException']").count() == 0
    _shoot_tabs(page, "plan-results-carbon")
    page.get_by_role("tab", name="Cost vs carbon").click()
    wait_rendered(page, "Plan a fleet")
    said = page.get_by_role("tabpanel", name="Cost vs carbon").inner_text()
    assert "per tonne of CO2e avoided" in said or "no trade-off" in said
