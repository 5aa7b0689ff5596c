"""Prices in the scenario's currency on the Plan page: USD, or EUR at the exchange rate the user
sets (`Scenario.currency`, `Scenario.usd_per_eur`). The scenario's money fields and every figure
of the plan stay USD (their names say so); the page shows and takes prices, budgets and its
headline figures in the scenario's currency, converting at its rate, and says so. A region
preset's electricity price is taken in its own currency: an EU preset's is Eurostat's EUR figure
(`electricity_original`), converted at the user's rate, not at the preset's.
"""

from __future__ import annotations

import re
from typing import Any

from fleetplan.planner.scenario.defaults import DEFAULT_USD_PER_EUR
from fleetplan.planner.scenario.scenario import Scenario

SYMBOLS = {"USD": "$", "EUR": "€"}
CURRENCIES = tuple(SYMBOLS)
# An EU preset's price as its source gave it: "EUR 0.2359/kWh x 1.0824 USD/EUR".
_EUR_ORIGINAL = re.compile(r"^EUR (\d+(?:\.\d+)?)/kWh\b")


def usd_per_unit(scenario: Scenario) -> float:
    """USD per unit of the scenario's currency (1 for USD)."""
    if scenario.currency == "EUR":
        return scenario.usd_per_eur or DEFAULT_USD_PER_EUR
    return 1.0


def shown(usd: float | None, scenario: Scenario) -> float | None:
    """A USD figure in the scenario's currency."""
    return None if usd is None else usd / usd_per_unit(scenario)


def to_usd(value: float | None, scenario: Scenario) -> float | None:
    """A figure given in the scenario's currency, in USD."""
    return None if value is None else value * usd_per_unit(scenario)


def symbol(scenario: Scenario) -> str:
    return SYMBOLS[scenario.currency]


def labelled(text: str, scenario: Scenario) -> str:
    """A label written with "$" in the scenario's currency's symbol."""
    return text.replace("$", symbol(scenario))


def money(usd: float | None, scenario: Scenario, fmt: str = "{:,.2f}") -> str:
    """A USD figure written in the scenario's currency ("€4,032.10"); unknown as such."""
    value = shown(usd, scenario)
    return "unknown" if value is None else f"{symbol(scenario)}{fmt.format(value)}"


def rate_note(scenario: Scenario) -> str | None:
    """What the page says under figures shown in EUR; None in USD."""
    if scenario.currency == "USD":
        return None
    return (
        f"In EUR at {usd_per_unit(scenario):g} USD per EUR (the rate entered); the tables and "
        "files below are in USD, as their columns say."
    )


def preset_price_usd(region: dict[str, Any], scenario: Scenario) -> float | None:
    """A region preset's electricity price in USD at the scenario's rate: an EUR figure its
    source gave (Eurostat's) converted at the scenario's rate where the scenario is in EUR; else
    the preset's USD figure."""
    usd = region.get("electricity_usd_per_kwh")
    usd = None if usd is None or usd != usd else float(usd)  # NaN: unknown
    original = region.get("electricity_original")
    if scenario.currency == "EUR" and isinstance(original, str):
        found = _EUR_ORIGINAL.match(original.strip())
        if found:
            return float(found[1]) * usd_per_unit(scenario)
    return usd


def source_rows(scenario: Scenario) -> list[tuple[str, str, Any, str, str]]:
    """The currency's rows of the sources CSV (none in USD)."""
    if scenario.currency == "USD":
        return []
    return [
        (
            "scenario",
            "currency",
            f"EUR at {usd_per_unit(scenario):g} USD per EUR",
            "USD/EUR",
            "entered (the Plan page takes and shows prices in EUR; every figure of the plan "
            "and these files is USD)",
        )
    ]
