"""The Plan page's day in a real headless Chromium at 1440x900: the day example opened from a
link draws its day tables, the chart of servers through the day and the schedule without a
Streamlit exception, keeps the day in the page's URL, and leaves screenshots in test-artifacts/
(plan-day.png, the page; plan-day-chart.png; plan-day-chart-on-demand.png, with a nightly job
that rents 4090s) to look at."""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

import pytest

from fleetplan.planner import Scenario
from fleetplan.services.planning import load_scenario
from fleetplan.services.scenario_link import scenario_from_link, scenario_to_link
from tests.support.browser import screenshot, wait_rendered
from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # a real Chromium (tests/support/browser.py)

PLAN = "Plan a fleet"


def test_the_day_example_opened_from_a_link(dashboard_url, browser_page):
    page = browser_page
    example = load_scenario(ROOT / "examples" / "day-chat-nightly.json")
    page.goto(f"{dashboard_url}/?s={scenario_to_link(example)}")
    wait_rendered(page, PLAN)
    page.get_by_text("Cost per day").first.wait_for(timeout=60_000)
    wait_rendered(page, PLAN)
    assert page.locator("[data-testid='stException']").count() == 0
    assert page.get_by_text("Demand through the day").count() >= 1
    assert page.get_by_text("Offers through the day").count() >= 1
    chart = page.locator("[data-testid='stPlotlyChart']").first
    chart.scroll_into_view_if_needed()
    chart.get_by_text("Servers per configuration through the day").wait_for(timeout=60_000)
    assert chart.get_by_text("chat demand").count() >= 1
    page.get_by_role("tab", name="Schedule").first.wait_for(timeout=60_000)
    (link,) = parse_qs(urlparse(page.url).query)["s"]
    kept = scenario_from_link(link)
    assert kept.is_day
    assert kept.classes[0].hourly_rps == example.classes[0].hourly_rps
    assert kept.classes[1].daily_requests == 50_000
    screenshot(page, "plan-day.png")
    chart.screenshot(path=str(ROOT / "test-artifacts" / "plan-day-chart.png"))

    # a nightly job the reserved H100s cannot carry alone: 4090s rented in the night's hours
    raw = json.loads((ROOT / "examples" / "day-chat-nightly.json").read_text())
    raw["classes"][1]["daily_requests"] = 1_000_000
    bigger = Scenario.model_validate(raw)
    page.goto(f"{dashboard_url}/?s={scenario_to_link(bigger)}")
    wait_rendered(page, PLAN)
    page.get_by_text("Cost per day").first.wait_for(timeout=60_000)
    wait_rendered(page, PLAN)
    assert page.locator("[data-testid='stException']").count() == 0
    chart = page.locator("[data-testid='stPlotlyChart']").first
    chart.scroll_into_view_if_needed()
    chart.get_by_text("on demand", exact=False).first.wait_for(timeout=60_000)
    chart.screenshot(path=str(ROOT / "test-artifacts" / "plan-day-chart-on-demand.png"))
