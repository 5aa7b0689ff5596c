"""Prices in EUR (issue 36, item 5): the Plan page shows and takes prices, budgets and its
headline in the scenario's currency at the rate the user sets; the scenario and the plan stay
USD; an EU region preset's electricity is its source's EUR figure at the user's rate; the rate
is in the plan's sources."""

from __future__ import annotations

import tomllib

import pytest
from pydantic import ValidationError

from fleetplan.app.plan_state import widget_key
from fleetplan.planner import Scenario
from fleetplan.planner.scenario.defaults import DEFAULT_USD_PER_EUR
from fleetplan.services import currency
from fleetplan.services.exports import plan_inputs, sources_table
from fleetplan.services.planning import load_scenario, plan_from_tables
from fleetplan.services.scenario_defaults import describe_region, with_region_site
from fleetplan.services.scenario_forms import (
    classes_table,
    gpus_table,
    scenario_from_forms,
    sites_table,
)
from tests.support.pages import open_app, seen
from tests.support.paths import ROOT

EXAMPLE = ROOT / "examples" / "chat-batch-qwen14b.json"


def regions_toml() -> dict:
    return tomllib.loads((ROOT / "sample_data" / "regions.toml").read_text())


def germany() -> dict:
    return next(r for r in regions_toml()["region"] if r["id"] == "de")


def in_eur(scenario: Scenario, rate: float = 1.25) -> Scenario:
    return scenario.model_copy(update={"currency": "EUR", "usd_per_eur": rate})


def forms(scenario: Scenario) -> dict:
    """The page's inputs as they show `scenario`, unchanged."""
    objective = scenario.objective
    if not isinstance(objective, str):  # a carbon price, shown in the page's currency
        price = currency.shown(objective.carbon_price_usd_per_t, scenario)
        objective = {"carbon_price_usd_per_t": price}
    return {
        "model": scenario.model,
        "classes": classes_table(scenario),
        "gpus": gpus_table(scenario),
        "sites": sites_table(scenario),
        "settings": {
            "budget_usd_per_hour": currency.shown(scenario.budget_usd_per_hour, scenario),
            "objective": objective,
            "currency": scenario.currency,
            "usd_per_eur": scenario.usd_per_eur,
        },
    }


def test_the_rate_offered_first_is_the_one_the_bundled_eur_prices_were_converted_at():
    assert regions_toml()["meta"]["usd_per_eur"] == DEFAULT_USD_PER_EUR


def test_eur_needs_a_rate_and_a_rate_out_of_range_is_refused():
    base = load_scenario(EXAMPLE).model_dump(mode="json")
    with pytest.raises(ValidationError, match="currency 'EUR' needs usd_per_eur"):
        Scenario.model_validate(base | {"currency": "EUR"})
    with pytest.raises(ValidationError, match="usd_per_eur"):
        Scenario.model_validate(base | {"currency": "EUR", "usd_per_eur": 50})
    with pytest.raises(ValidationError, match="currency"):
        Scenario.model_validate(base | {"currency": "GBP", "usd_per_eur": 1.1})
    # USD stays out of a saved file: the field is quiet at its default
    assert "currency" not in load_scenario(EXAMPLE).model_dump(mode="json", exclude_defaults=True)


def test_tables_show_eur_and_the_page_stores_what_was_shown_in_usd():
    base = load_scenario(EXAMPLE)
    eur = in_eur(base, 1.25)
    gpus = gpus_table(eur)
    for offer, row in zip(base.gpus, gpus.to_dict("records"), strict=True):
        if offer.hourly_usd is not None:
            assert row["hourly_usd"] == pytest.approx(offer.hourly_usd / 1.25)
    assert sites_table(eur)["electricity_usd_per_kwh"].tolist() == pytest.approx(
        [s.electricity_usd_per_kwh / 1.25 for s in base.sites]
    )
    # the page's inputs unchanged give the scenario back, every USD figure as it was
    again = scenario_from_forms(eur, **forms(eur))
    assert again == eur


def test_a_euro_price_typed_is_stored_at_the_rate_and_a_corrected_rate_keeps_the_euros():
    eur = in_eur(load_scenario(EXAMPLE).model_copy(update={"budget_usd_per_hour": 50.0}), 1.25)
    inputs = forms(eur)
    inputs["gpus"].loc[0, "hourly_usd"] = 2.0  # €2.00 per GPU-hour
    inputs["settings"]["budget_usd_per_hour"] = 40.0  # €40 an hour
    typed = scenario_from_forms(eur, **inputs)
    assert typed.gpus[0].hourly_usd == pytest.approx(2.5)
    assert typed.budget_usd_per_hour == pytest.approx(50.0)
    # the rate corrected to 1.10 with the tables as shown: the euros stay, the dollars move
    inputs = forms(typed)
    inputs["settings"]["usd_per_eur"] = 1.10
    corrected = scenario_from_forms(typed, **inputs)
    assert corrected.usd_per_eur == 1.10
    assert corrected.gpus[0].hourly_usd == pytest.approx(2.2)
    assert corrected.budget_usd_per_hour == pytest.approx(44.0)
    assert gpus_table(corrected).loc[0, "hourly_usd"] == pytest.approx(2.0)
    # back to USD from the EUR tables: the dollars the euros were worth
    inputs = forms(corrected)
    inputs["settings"] |= {"currency": "USD", "usd_per_eur": None}
    dollars = scenario_from_forms(corrected, **inputs)
    assert dollars.currency == "USD" and dollars.gpus[0].hourly_usd == pytest.approx(2.2)


def test_an_eu_preset_gives_its_sources_euros_at_the_users_rate():
    base = load_scenario(EXAMPLE)
    site = base.sites[0].name
    de = germany()
    assert de["electricity_original"].startswith("EUR 0.2359/kWh")
    # in USD: the preset's USD figure (converted at the preset's 1.0824)
    in_usd = with_region_site(base, site, de)
    assert in_usd.sites[0].electricity_usd_per_kwh == pytest.approx(de["electricity_usd_per_kwh"])
    # in EUR at 1.20: EUR 0.2359 at 1.20, shown as the EUR figure the source gave
    eur = in_eur(base, 1.20)
    applied = with_region_site(eur, site, de)
    assert applied.sites[0].electricity_usd_per_kwh == pytest.approx(0.2359 * 1.20)
    assert sites_table(applied).loc[0, "electricity_usd_per_kwh"] == pytest.approx(0.2359)
    assert describe_region(de, eur)[1].startswith("€0.2359/kWh")
    assert describe_region(de)[1].startswith("$0.2553/kWh")
    # a USD figure shown in euros says the dollars it was and the rate
    us = next(r for r in regions_toml()["region"] if r["id"] == "us")
    price = us["electricity_usd_per_kwh"]
    assert describe_region(us, eur)[1].startswith(
        f"€{price / 1.20:.4f}/kWh (${price:.4f}/kWh at 1.2 USD per EUR)"
    )
    # a US preset has no EUR original: its USD figure, shown in EUR at the rate
    assert with_region_site(eur, site, us).sites[0].electricity_usd_per_kwh == pytest.approx(
        us["electricity_usd_per_kwh"]
    )


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_plan_in_eur_is_the_plan_in_usd_and_its_sources_carry_the_rate(sample_tables):
    base = load_scenario(EXAMPLE)
    eur = in_eur(base, 1.25)
    tables = {k: getattr(sample_tables, k) for k in ("catalog", "prices", "regions")}
    usd_plan = plan_from_tables(base, sample_tables.points, sample_tables.catalog)
    eur_plan = plan_from_tables(eur, sample_tables.points, sample_tables.catalog)
    assert eur_plan.recommended.totals == usd_plan.recommended.totals  # USD inside
    sources = sources_table(eur_plan, plan_inputs(eur, **tables))
    row = sources[sources["figure"] == "currency"].iloc[0]
    assert (row["value"], row["unit"]) == ("EUR at 1.25 USD per EUR", "USD/EUR")
    in_usd = sources_table(usd_plan, plan_inputs(base, **tables))
    assert "currency" not in set(in_usd["figure"])
    assert currency.money(1000.0, eur) == "€800.00"
    assert currency.money(None, eur) == "unknown"
    assert currency.money(1000.0, base) == "$1,000.00"
    assert "1.25 USD per EUR" in currency.rate_note(eur)
    assert currency.rate_note(base) is None


@pytest.mark.slow
@pytest.mark.usefixtures("fresh_caches")
def test_the_page_in_eur_takes_euros_and_shows_its_headline_in_euros(
    monkeypatch, sample_warehouse_path
):
    at = open_app(monkeypatch, sample_warehouse_path)
    usd: Scenario = at.session_state["s_current"]
    assert {m.label: m.value for m in at.metric}["Cost per month"].startswith("$")
    at.selectbox(key=widget_key("w_currency", at.session_state)).set_value("EUR").run()
    assert not at.exception, at.exception
    rate = at.number_input(key=widget_key("w_usd_per_eur", at.session_state))
    assert rate.value == DEFAULT_USD_PER_EUR
    rate.set_value(1.25).run()
    assert not at.exception, at.exception
    eur: Scenario = at.session_state["s_current"]
    assert (eur.currency, eur.usd_per_eur) == ("EUR", 1.25)
    # the euros shown at 1.0824 kept, the dollars they stand for at 1.25
    for before, after in zip(usd.gpus, eur.gpus, strict=True):
        if before.hourly_usd is not None:
            factor = 1.25 / DEFAULT_USD_PER_EUR
            assert after.hourly_usd == pytest.approx(before.hourly_usd * factor)
    metrics = {m.label: m.value for m in at.metric}
    euros = metrics["Cost per month"]
    assert euros.startswith("€")
    monthly_usd = at.session_state["s_result"].recommended.totals.monthly_cost_usd
    assert float(euros[1:].replace(",", "")) == pytest.approx(monthly_usd / 1.25, abs=1)
    assert "€ per million output tokens" in metrics
    assert any("1.25 USD per EUR" in seen(c.value) for c in at.caption), [
        c.value for c in at.caption
    ]
    # a price typed in euros is stored in dollars at the rate
    key = widget_key("w_gpus", at.session_state)
    at.session_state[key] = {
        "edited_rows": {0: {"hourly_usd": 2.0}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    assert not at.exception, at.exception
    typed: Scenario = at.session_state["s_current"]
    assert typed.gpus[0].hourly_usd == pytest.approx(2.5)
