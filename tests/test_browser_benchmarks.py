"""The Benchmarks page in a real headless Chromium at 1440x900: every tab draws its charts with
readable axes, and a screenshot of each is saved to test-artifacts/ to look at."""

from __future__ import annotations

import re

import pytest

from tests.support.browser import ARTIFACTS, wait_rendered

pytestmark = pytest.mark.slow  # a real Chromium (tests/support/browser.py)

TABS = {  # tab -> the charts it draws
    "Throughput vs load": 1,
    "Latency vs load": 2,
    "Latency vs throughput": 1,
    "Cost vs latency": 1,
    "Energy": 1,
}


@pytest.fixture
def page(browser_page):
    """The shared headless Chromium page at 1440x900 (tests/conftest.py)."""
    return browser_page


def test_every_benchmarks_tab_draws_readable_charts(dashboard_url, page):
    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(f"{dashboard_url}/benchmarks")
    wait_rendered(page, "Benchmarks")
    page.screenshot(path=str(ARTIFACTS / "benchmarks-1440x900.png"))
    assert len(TABS) > 0  # a loop over nothing asserts nothing
    for number, (tab, charts) in enumerate(TABS.items(), start=1):
        page.get_by_role("tab", name=tab).click()
        panel = page.get_by_role("tabpanel", name=tab)
        panel.locator(".js-plotly-plot").nth(charts - 1).wait_for(timeout=30_000)
        page.wait_for_timeout(1000)
        assert page.locator("[data-testid='stException']").count() == 0, tab
        ticks = panel.locator(".xtick text, .ytick text").all_text_contents()
        # plain numbers: no "10k", no "2, 5, 2" minor labels without their decade
        assert ticks and not any(re.search(r"\d[kKM]$", t) for t in ticks), (tab, ticks)
        slug = re.sub(r"\W+", "-", tab.lower())
        panel.screenshot(path=str(ARTIFACTS / f"benchmarks-tab{number}-{slug}.png"))
    page.get_by_role("heading", name="Points").scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "benchmarks-table-1440x900.png"))
