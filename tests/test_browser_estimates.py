"""Estimates in a real headless Chromium: a plan of an H100-only model with "Use estimates" on
marks its estimated pools (the warning, the switch's label whole), and the Benchmarks page's
latency curves overlay the serving model; screenshots in test-artifacts/ to look at."""

from __future__ import annotations

import pytest

from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.services.scenario_link import scenario_to_link
from tests.support.browser import ARTIFACTS, wait_rendered

pytestmark = pytest.mark.slow  # a real Chromium (tests/support/browser.py)

PHI4 = {
    "name": "phi-4 chat, estimates on",
    "model": "microsoft/phi-4",
    "estimates": "fill",
    "classes": [{"name": "chat", "rate_rps": 20.0, "ttft_p99_ms": 500, "tpot_p99_ms": 60}],
    "gpus": [
        {"gpu_model": "h100-pcie", "hourly_usd": 2.0, "site": "dc"},
        {"gpu_model": "h100-sxm", "hourly_usd": 2.49, "site": "dc"},
        {"gpu_model": "rtx-4090", "hourly_usd": 0.25, "site": "dc", "max_gpus": 64},
    ],
    "sites": [{"name": "dc", "electricity_usd_per_kwh": 0.12, "grid_gco2_per_kwh": 350}],
}


def test_estimated_pools_are_marked_on_the_plan_page(shared_dashboard_url, browser_page):
    page = browser_page
    link = scenario_to_link(Scenario.model_validate(PHI4))
    page.goto(f"{shared_dashboard_url}/?s={link}")
    wait_rendered(page, "Plan a fleet")
    page.get_by_text("Cost per month").first.wait_for(timeout=60_000)
    assert page.locator("[data-testid='stException']").count() == 0
    warning = page.get_by_text("rest on estimates, not on runs").first
    warning.wait_for(timeout=60_000)
    toggle = page.get_by_text("Use estimates", exact=True).first
    assert toggle.is_visible()
    # the switch's label fits its column: nothing cut off with an ellipsis
    assert toggle.evaluate("e => e.scrollWidth <= e.clientWidth + 1")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "plan-estimates.png"))
    warning.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "plan-estimates-fleet.png"))


def test_the_benchmarks_page_overlays_the_serving_model(shared_dashboard_url, browser_page):
    page = browser_page
    page.goto(f"{shared_dashboard_url}/benchmarks")
    wait_rendered(page, "Benchmarks")
    page.get_by_role("tab", name="Latency vs load").click()
    wait_rendered(page, "Benchmarks")
    panel = page.get_by_role("tabpanel", name="Latency vs load")
    panel.get_by_text("serving model").first.wait_for(timeout=60_000)
    assert page.locator("[data-testid='stException']").count() == 0
    legend = panel.locator(".legendtext").all_text_contents()
    assert any(text.endswith(": serving model") for text in legend), legend
    ARTIFACTS.mkdir(exist_ok=True)
    panel.screenshot(path=str(ARTIFACTS / "benchmarks-serving-model.png"))
