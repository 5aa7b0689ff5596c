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


def shown_metrics(page) -> dict[str, str]:
    """The page's metrics as a browser shows them: label -> value."""
    return {
        m.locator("[data-testid='stMetricLabel']").inner_text(): m.locator(
            "[data-testid='stMetricValue']"
        ).inner_text()
        for m in page.locator("[data-testid='stMetric']").all()
    }


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


def test_the_new_users_day_exports_what_the_page_shows(dashboard_url, browser_page, tmp_path):
    """The new user's path of issue 36 in Chromium: a Berlin day with a nightly volume of
    200,000 summaries, rented H100s, 16 owned RTX 4090s and a code assistant on its own model
    (examples/day-two-models-owned.json). The page's headline, the fleet CSV's TOTAL, the
    workbook's fleet and schedule sheets and the router all describe the day; the router names
    each class's model; the Load curves tab draws. Screenshot: test-artifacts/plan-day-owned.png."""
    import csv
    import io

    import openpyxl
    import yaml

    page = browser_page
    example = load_scenario(ROOT / "examples" / "day-two-models-owned.json")
    page.goto(f"{dashboard_url}/?s={scenario_to_link(example)}")
    wait_rendered(page, PLAN)
    page.get_by_text("Cost per day").first.wait_for(timeout=60_000)
    wait_rendered(page, PLAN)
    assert page.locator("[data-testid='stException']").count() == 0
    metrics = shown_metrics(page)
    per_day = metrics["Cost per day"]
    screenshot(page, "plan-day-owned.png")

    def download(label: str, name: str):
        with page.expect_download() as got:
            page.get_by_role("button", name=label).click()
        path = tmp_path / name
        got.value.save_as(path)
        return path

    fleet = list(csv.DictReader(io.StringIO(download("Download fleet (CSV)", "f.csv").read_text())))
    (total,) = [row for row in fleet if row["offer"] == "TOTAL"]
    assert f"${float(total['cost_usd_day']):,.2f}" == per_day
    owned = [r for r in fleet if r["offer"] == "owned RTX 4090"]
    assert sum(int(float(r["servers"])) * int(float(r["gpus_per_server"])) for r in owned) == 16
    book = openpyxl.load_workbook(download("Download workbook (XLSX)", "w.xlsx"))
    assert {"fleet", "schedule", "compared"} <= set(book.sheetnames)
    rows = list(book["fleet"].iter_rows(values_only=True))
    header, *body = rows
    (sheet_total,) = [dict(zip(header, r, strict=True)) for r in body if "TOTAL" in r]
    assert f"${sheet_total['cost_usd_day']:,.2f}" == per_day
    router = yaml.safe_load(download("Download router config (LiteLLM)", "r.yaml").read_text())
    models = {d["model_name"]: d["litellm_params"]["model"] for d in router["model_list"]}
    assert models["code assistant"].endswith("DeepSeek-R1-Distill-Qwen-7B")
    assert models["chat"].endswith("DeepSeek-R1-Distill-Qwen-14B")

    page.get_by_role("tab", name="Load curves").click()
    wait_rendered(page, PLAN)
    panel = page.get_by_role("tabpanel", name="Load curves")
    panel.locator("[data-testid='stPlotlyChart']").first.wait_for(timeout=60_000)
    assert page.locator("[data-testid='stException']").count() == 0
    screenshot(page, "plan-day-owned-load-curves.png")


def test_the_new_users_day_in_euros(dashboard_url, browser_page, tmp_path):
    """The same day with prices in EUR at 1.10 USD per EUR (issue 36, item 5): the headline is
    in euros, the fleet CSV's dollars divided by the rate; the GPU table's price column says €;
    the rate is said under the headline. Screenshot: test-artifacts/plan-day-owned-eur.png."""
    import csv
    import io

    page = browser_page
    example = load_scenario(ROOT / "examples" / "day-two-models-owned.json")
    eur = example.model_copy(update={"currency": "EUR", "usd_per_eur": 1.10})
    page.goto(f"{dashboard_url}/?s={scenario_to_link(eur)}")
    wait_rendered(page, PLAN)
    page.get_by_text("Cost per day").first.wait_for(timeout=60_000)
    wait_rendered(page, PLAN)
    assert page.locator("[data-testid='stException']").count() == 0
    metrics = shown_metrics(page)
    per_day = metrics["Cost per day"]
    assert per_day.startswith("€"), metrics
    assert page.get_by_text("In EUR at 1.1 USD per EUR").count() >= 1
    assert page.get_by_text("€ / GPU-hour").count() >= 1  # the GPU table's header
    screenshot(page, "plan-day-owned-eur.png")
    with page.expect_download() as got:
        page.get_by_role("button", name="Download fleet (CSV)").click()
    path = tmp_path / "f.csv"
    got.value.save_as(path)
    (total,) = [r for r in csv.DictReader(io.StringIO(path.read_text())) if r["offer"] == "TOTAL"]
    assert f"€{float(total['cost_usd_day']) / 1.10:,.2f}" == per_day
