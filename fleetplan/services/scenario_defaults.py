"""Starting points from the warehouse's reference data: a first scenario (the best-covered model,
a reference price per GPU, sites filled from region presets), a workload preset's classes, a
region's figures for a site. The choices themselves (which preset, which regions, the utilisation
ceiling) are in `fleetplan.planner.scenario.defaults` and `fleetplan.planner.scenario.presets`;
this module reads them against the warehouse's tables (`queries.gpu_prices`, `queries.gpu_catalog`,
`queries.regions`)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from pydantic import ValidationError

from fleetplan.core.contract import validation_message
from fleetplan.planner.scenario.defaults import (
    DEFAULT_PRESET,
    DEFAULT_SITES,
    default_classes,
    site_for_segment,
)
from fleetplan.planner.scenario.presets import PRESETS
from fleetplan.planner.scenario.scenario import DEFAULT_HEADROOM, Scenario
from fleetplan.services.currency import money, preset_price_usd, usd_per_unit
from fleetplan.services.scenario_forms import cell_value
from fleetplan.warehouse.queries import models_by_coverage

PAPER_PRICE_KIND = "paper assumption"


def default_price(prices: pd.DataFrame, gpu_model: str) -> tuple[float | None, str | None]:
    """The paper's price where there is one (so that its figures reproduce), else the lowest;
    with where it comes from ("provider, date"). (None, None) for a GPU without a price."""
    mine = prices[prices["gpu_id"] == gpu_model]
    if mine.empty:
        return None, None
    paper = mine[mine["kind"] == PAPER_PRICE_KIND]
    row = (paper if not paper.empty else mine.sort_values("usd_per_gpu_hour")).iloc[0]
    return float(row["usd_per_gpu_hour"]), f"{row['provider']}, {row['price_date']}"


def region_preset(regions: pd.DataFrame, region_id: str) -> dict[str, Any]:
    """One row of `queries.regions` as a dict (what `site_from_region` and `describe_region`
    take)."""
    return regions[regions["region_id"] == region_id].iloc[0].to_dict()


def site_from_region(
    name: str, region: dict[str, Any], pue: float | None = None, price: float | None = None
) -> dict:
    """A site named `name` with a region preset's electricity price (`price` where given: the
    preset's in the scenario's currency, `services.currency.preset_price_usd`), grid intensity
    with its basis, and PUE (an unknown price or intensity is 0 for the user to fill; `pue`
    overrides the region's)."""
    if price is None:
        price = cell_value(region.get("electricity_usd_per_kwh"))
    return {
        "name": name,
        "electricity_usd_per_kwh": price or 0.0,
        "grid_gco2_per_kwh": cell_value(region.get("grid_gco2_per_kwh")) or 0.0,
        "pue": pue if pue is not None else (cell_value(region.get("pue_default")) or 1.0),
        "grid_basis": cell_value(region.get("grid_basis")) or "unknown",
    }


def describe_region(region: dict[str, Any], scenario: Scenario | None = None) -> tuple[str, str]:
    """Two lines about a region preset: its grid intensity and its electricity price (in the
    scenario's currency: an EU preset's EUR figure as its source gave it), each with basis,
    year and source; a figure without a public source is said to be unknown."""
    grid_year = _year(region["grid_year"])
    grid = (
        f"Grid {region['grid_gco2_per_kwh']:.0f} gCO2e/kWh ({region['grid_basis']}, {grid_year})"
        f" — {region['grid_source']}"
    )
    if cell_value(region["electricity_usd_per_kwh"]) is None:
        return grid, (
            "Electricity price: unknown for this region (no public source found): enter yours."
        )
    shown_price = f"${region['electricity_usd_per_kwh']:.4f}/kWh"
    if scenario is not None and scenario.currency != "USD":
        usd = preset_price_usd(region, scenario)
        shown_price = f"{money(usd, scenario, '{:.4f}')}/kWh"
        if usd == region["electricity_usd_per_kwh"]:  # a USD figure, converted at the rate
            rate = usd_per_unit(scenario)
            shown_price += f" (${usd:.4f}/kWh at {rate:g} USD per EUR)"
    price = (
        f"{shown_price} ({region['electricity_basis']}, "
        f"{_year(region['electricity_year'])}) — {region['electricity_source']}"
    )
    return grid, price


def _year(value: Any) -> Any:
    return "year unknown" if cell_value(value) is None else value


def default_scenario(
    points: pd.DataFrame, catalog: pd.DataFrame, prices: pd.DataFrame, regions: pd.DataFrame
) -> Scenario:
    """A sensible first scenario: the best-covered model, the paper's prices, preset traffic."""
    model = models_by_coverage(points)[0]
    measured = sorted(points.loc[points["model"] == model, "gpu_model"].unique())
    segments = dict(zip(catalog["gpu_id"], catalog["segment"], strict=True))
    by_region = {row["region_id"]: row for row in regions.to_dict("records")}
    gpus, used_sites = [], set()
    for gpu_model in measured:
        price, _ = default_price(prices, gpu_model)
        if price is None:
            continue
        site = site_for_segment(segments.get(gpu_model))
        used_sites.add(site)
        gpus.append({"gpu_model": gpu_model, "hourly_usd": price, "site": site})
    sites = [
        site_from_region(name, by_region.get(region, {}), pue)
        for name, (region, pue) in DEFAULT_SITES.items()
        if name in used_sites
    ]
    short = model.split("/")[-1]
    return Scenario.model_validate(
        {
            "name": f"{DEFAULT_PRESET} on {short}",
            "model": model,
            "classes": [c.model_dump(exclude_none=True) for c in default_classes()],
            "gpus": gpus,
            "sites": sites,
            "max_utilization": DEFAULT_HEADROOM,
        }
    )


def with_preset(scenario: Scenario, preset: str) -> Scenario:
    """The scenario with a workload preset's traffic classes instead of its own."""
    return scenario.model_copy(update={"classes": list(PRESETS[preset])})


def with_region_site(scenario: Scenario, site: str, region: dict[str, Any]) -> Scenario:
    """The scenario with the site named `site` filled from a region preset (its PUE kept)."""
    price = preset_price_usd(region, scenario)  # an EU preset's EUR figure at the user's rate
    sites = [
        site_from_region(s.name, region, s.pue, price) if s.name == site else s.model_dump()
        for s in scenario.sites
    ]
    try:
        return Scenario.model_validate({**scenario.model_dump(), "sites": sites})
    except ValidationError as error:
        raise validation_message(error) from None
