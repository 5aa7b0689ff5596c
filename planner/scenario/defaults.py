"""Starting points for a new scenario (the dashboard's first plan), as plain values: the workload
preset, the utilisation ceiling, the sites and which GPU goes to which site. Each is a choice a
user edits, not a measurement. Building a whole scenario from them needs the warehouse's models,
prices and regions: `fleetplan.services.scenario_defaults` does that."""

from __future__ import annotations

from fleetplan.planner.scenario.presets import PRESETS
from fleetplan.planner.scenario.scenario import (
    DEFAULT_HEADROOM as DEFAULT_HEADROOM,
)  # with the schema
from fleetplan.planner.scenario.scenario import TrafficClass

DEFAULT_PRESET = "chatbot + batch eval"
DATACENTER_SITE = "datacenter"
CONSUMER_SITE = "consumer"
# Default sites: rented datacenter GPUs in Virginia (US data-centre hub); consumer GPUs in homes
# (PUE 1.0) on the US average grid. Site name -> (region id, PUE; None: the region's default).
DEFAULT_SITES: dict[str, tuple[str, float | None]] = {
    DATACENTER_SITE: ("us-va", None),
    CONSUMER_SITE: ("us", 1.0),
}
DEFAULT_REGION = "us"  # the region preset offered first
DEFAULT_CARBON_PRICE_USD_PER_T = 100.0
# The rate the page offers first for prices in EUR: the one the bundled regions' EUR prices were
# converted at (sample_data/regions.toml meta.usd_per_eur: the ECB reference rate, 2024 annual
# average; tests/test_currency.py keeps the two equal). A starting point the user edits.
DEFAULT_USD_PER_EUR = 1.0824


def default_classes() -> tuple[TrafficClass, ...]:
    return PRESETS[DEFAULT_PRESET]


def site_for_segment(segment: str | None) -> str:
    """Consumer GPUs run in homes; every other GPU (or one of unknown segment) in a datacenter."""
    return CONSUMER_SITE if segment == "consumer" else DATACENTER_SITE
