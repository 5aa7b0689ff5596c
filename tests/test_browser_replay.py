"""The Plan page's trace replay in a real headless Chromium at 1440x900: a log uploaded in the
expander and replayed draws the P99 charts against the targets and the hours' table without a
Streamlit exception, and leaves test-artifacts/plan-replay.png (the expander) to look at."""

from __future__ import annotations

import pytest

from tests.support.browser import screenshot, wait_rendered
from tests.support.paths import ROOT
from tests.test_replay import poisson_trace

pytestmark = pytest.mark.slow  # a real Chromium (tests/support/browser.py)

PLAN = "Plan a fleet"


def test_a_log_replayed_on_the_plan_page(dashboard_url, browser_page, tmp_path):
    page = browser_page
    # an afternoon at twice the default chat rate for an hour, with a burst
    trace = poisson_trace(
        tmp_path / "afternoon.csv",
        rate=8.0,
        seconds=3600,
        start="2024-03-01 14:00:00",
        burst=(1800, 2100, 30.0),
    )
    page.goto(dashboard_url)
    wait_rendered(page, PLAN)
    block = page.locator("[data-testid='stExpander']").filter(has_text="Check the plan against")
    block.first.scroll_into_view_if_needed()
    block.locator("summary").first.click()
    block.locator("input[type='file']").first.set_input_files(str(trace))
    page.get_by_role("button", name="Replay").wait_for(timeout=60_000)
    # the log is one class: replay it as the plan's first class
    block.locator("[data-testid='stSelectbox']").filter(has_text="As class").click()
    page.keyboard.type("chat", delay=50)
    page.get_by_role("option", name="chat").first.click()
    wait_rendered(page, PLAN)
    page.get_by_role("button", name="Replay").click()
    page.get_by_text("by hour, against the target").first.wait_for(timeout=120_000)
    wait_rendered(page, PLAN)
    assert page.locator("[data-testid='stException']").count() == 0
    charts = page.locator("[data-testid='stPlotlyChart']")
    replay = charts.filter(has_text="by hour, against the target")
    assert replay.count() == 2  # TTFT and TPOT
    replay.first.scroll_into_view_if_needed()
    assert page.get_by_text("requests, P99 TTFT").count() >= 1
    screenshot(page, "plan-replay-page.png")
    block.first.screenshot(path=str(ROOT / "test-artifacts" / "plan-replay.png"))
