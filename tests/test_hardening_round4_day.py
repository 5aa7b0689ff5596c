"""Hardening round four (issue 35), day scenarios: attainment targets no pool size reaches give
a day that says so (it was a ValueError traceback), and spares for a tiny availability or a huge
pool are sized in bounded time (one server at a time took minutes, or hung, at 0.01 and
0.999999); the pool sizing search finds the fewest servers."""

from __future__ import annotations

import json
import random

import pytest

from fleetplan.planner import Scenario
from fleetplan.planner.availability.probability import carries, servers_for
from fleetplan.services.planning import plan_from_tables
from tests.support.paths import ROOT


def day(availability: float, attainment: float, rate: float, *, fallback: bool = False):
    raw = json.loads((ROOT / "examples" / "day-chat-nightly.json").read_text())
    raw["classes"][0] |= {"hourly_rps": [rate] * 24, "attainment": attainment}
    if fallback:
        raw["classes"][0]["fallback"] = True
    for offer in raw["gpus"]:
        offer["availability"] = availability
    return Scenario.model_validate(raw)


def test_an_attainment_no_pool_size_reaches_is_an_infeasible_day_naming_the_fields(
    sample_tables,
):
    result = plan_from_tables(day(0.01, 0.999999, 1e6), sample_tables.points, sample_tables.catalog)
    assert result.day is not None
    assert result.day.status.value == "infeasible" and result.day.cost_usd is None
    assert "cannot reach its attainment 0.999999" in result.day.message
    assert "classes[].attainment" in result.day.message
    assert "gpus[].availability" in result.day.message


@pytest.mark.slow  # seconds of spares at extreme availability
@pytest.mark.parametrize(
    ("availability", "attainment", "rate", "fallback"),
    [(0.01, 0.999999, 1000.0, False), (0.5, 0.999999, 1e4, False), (0.01, 0.9, 3.0, True)],
)
def test_spares_for_a_tiny_availability_or_a_huge_pool_meet_every_hours_target(
    sample_tables, availability, attainment, rate, fallback
):
    result = plan_from_tables(
        day(availability, attainment, rate, fallback=fallback),
        sample_tables.points,
        sample_tables.catalog,
    )
    assert result.day is not None and result.day.cost_usd is not None, result.day.message
    (chat,) = [a for a in result.day.attainment if a.traffic_class == "chat"]
    hours = [p for p in chat.by_hour if p is not None]
    assert len(hours) == 24
    assert min(hours) >= attainment - 1e-12
    # the day's cost is still the sum of its hours
    assert sum(h.cost_usd for h in result.day.schedule) == pytest.approx(result.day.cost_usd)


def linear(m: int, a: float, target: float) -> int:
    n = m
    while carries(n, a, m) < target:
        n += 1
    return n


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_pool_sizing_search_finds_the_fewest_servers():
    rng = random.Random(3)
    for _ in range(200):
        m = rng.randint(1, 60)
        a = rng.choice([0.3, 0.5, 0.9, 0.95, 0.999])
        target = rng.choice([0.5, 0.9, 0.99, 0.999999])
        assert servers_for(m, a, target) == linear(m, a, target)
    big = servers_for(30_000, 0.5, 0.999999)
    assert carries(big, 0.5, 30_000) >= 0.999999 > carries(big - 1, 0.5, 30_000)
    with pytest.raises(ValueError, match="more than 100,000 servers"):
        servers_for(1_000, 0.01, 0.999999)


def with_change(change) -> dict:
    raw = json.loads((ROOT / "examples" / "day-chat-nightly.json").read_text())
    change(raw)
    return raw


@pytest.mark.parametrize(
    ("change", "says"),
    [
        # true/false and text were read as numbers (a $1 budget, a 23-hour window)
        (lambda r: r.update(budget_usd_per_day=True), "not true/false"),
        (lambda r: r.update(budget_usd_per_day="500"), "not text"),
        (lambda r: r["classes"][0]["hourly_rps"].__setitem__(23, "3"), "not text"),
        (lambda r: r["classes"][1].update(window_hours=[True, False]), "not true/false"),
        (lambda r: r["sites"][0].update(pue=True), "not true/false"),
        (lambda r: r.update(version=True), "not true/false"),
        # 1e-300 divided a capacity by nothing
        (lambda r: r.update(max_utilization=1e-300), "greater than or equal to 0.01"),
        # names a reader cannot tell apart
        (lambda r: r["classes"][1].update(name="Chat"), "looks like 'chat'"),
        (lambda r: r["classes"][1].update(name="ch\u0430t"), "looks like 'chat'"),  # Cyrillic
        (lambda r: r["classes"][1].update(name="chat\u00a0"), "no spaces around it"),
        (lambda r: r["classes"][1].update(name="   "), "no blank name"),
        (lambda r: r["sites"][1].update(name="DC"), "looks like 'dc'"),
        # rates past the bound a rate_rps has, derived
        (
            lambda r: r["classes"][1].update(daily_requests=8.64e10, window_hours=[3, 4]),
            "over the 1e\\+06 a class may ask",
        ),
        (
            lambda r: (
                r.update(plan_bursts=True),
                r["classes"][0].update(hourly_rps=[1e6] * 24, burstiness=3600),
            ),
            "times its burstiness",
        ),
        # host-dependent zone names
        (lambda r: r.update(timezone="localtime"), "not an IANA timezone name"),
        (lambda r: r.update(timezone="posix/Europe/Berlin"), "not an IANA timezone name"),
        (lambda r: r.update(timezone="right/UTC"), "not an IANA timezone name"),
    ],
)
def test_a_day_scenario_that_says_something_else_than_it_seems_is_refused(change, says):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=says):
        Scenario.model_validate(with_change(change))


def test_the_names_and_numbers_a_scenario_plainly_says_still_hold():
    raw = with_change(lambda r: r.update(timezone="Europe/Berlin", max_utilization=0.01))
    raw["classes"][1]["name"] = "chat 2"
    raw["gpus"][0]["max_gpus"] = 8  # an int where an int is asked, 2.0 where a float is
    raw["classes"][0]["hourly_rps"][0] = 2
    assert Scenario.model_validate(raw).classes[1].name == "chat 2"


def test_the_pages_size_bound_counts_fill_estimates_and_each_class_model(sample_tables):
    """40 classes on a model measured on one configuration are 40 choices; with fill estimates
    each offered GPU adds its configurations, and the page refuses past 400 before planning
    (an 80-class fill link ran the 60 s wall; a class on another model was counted on the
    scenario's)."""
    from fleetplan.core.errors import InputError
    from fleetplan.services.planning import PAGE_MAX_CHOICES, plan_on_the_page

    raw = json.loads((ROOT / "examples" / "chat-batch-qwen14b.json").read_text())
    first = raw["classes"][0]
    # 4 measured configurations of the model here, 8 with the estimated GPUs: 80 classes are
    # 320 choices counted the old way, 640 as planned
    raw["classes"] = [{**first, "name": f"c{i}"} for i in range(80)]
    raw["estimates"] = "fill"
    raw["gpus"] += [
        {"gpu_model": g, "hourly_usd": 3.0, "site": raw["gpus"][0]["site"]}
        for g in ("h100-sxm", "l40s", "a100-80gb")
        if g not in {o["gpu_model"] for o in raw["gpus"]}
    ]
    scenario = Scenario.model_validate(raw)
    with pytest.raises(InputError, match="are 640 choices, over the 400 the dashboard plans"):
        plan_on_the_page(scenario, sample_tables.points, sample_tables.catalog)
    assert PAGE_MAX_CHOICES == 400


def limited(sample_tables, *, gpus=({}, {}), sites=None, **fields):
    raw = json.loads((ROOT / "examples" / "day-chat-nightly.json").read_text())
    raw |= fields
    for offer, extra in zip(raw["gpus"], gpus, strict=True):
        offer |= extra
    for site, grid in zip(raw["sites"], sites or (), strict=False):
        site["grid_gco2_per_kwh"] = grid
    return plan_from_tables(
        Scenario.model_validate(raw), sample_tables.points, sample_tables.catalog
    )


@pytest.mark.parametrize(
    ("fields", "day_says", "peak_says"),
    [
        (  # the example's day costs $403.20; its peak plan $18.60/h
            {"budget_usd_per_day": 200},
            "budget_usd_per_day $200.00/day (the cheapest day without limits: $403.20)",
            "budget_usd_per_day $200/day, at the peak $8.333/h (a 24th of the day",
        ),
        (
            {"budget_usd_per_hour": 10},
            "budget_usd_per_hour $10.00/h (the cheapest day without limits: $16.80 at 0:00)",
            "budget_usd_per_hour $10/h (the cheapest plan without limits costs $18.60/h)",
        ),
        (
            {"carbon_cap_kg_per_day": 5},
            "carbon_cap_kg_per_day 5 kgCO2e/day (the cleanest day without limits: 12.89 kgCO2e)",
            "carbon_cap_kg_per_day 5 kgCO2e/day, at the peak 0.2083 kgCO2e/h",
        ),
        (
            {"gpus": ({"max_gpus": 3}, {"max_gpus": 2})},
            "gpus[].max_gpus of h100-pcie is 3 (the cheapest day without limits: 7 GPUs)",
            "gpus[].max_gpus of h100-pcie is 3 (the cheapest plan without limits uses 7)",
        ),
    ],
)
def test_an_infeasible_day_and_its_peak_name_the_limits_field_and_the_figure_it_needs(
    sample_tables, fields, day_says, peak_says
):
    # the peak said "budget $8.33/h" for a daily budget (no such field) and the day "the limits
    # leave no way to serve every class every hour", naming none
    result = limited(sample_tables, **fields)
    assert result.day is not None and result.day.status.value == "infeasible"
    assert day_says in result.day.message, result.day.message
    assert result.status.value == "infeasible" and peak_says in result.message, result.message


def test_limits_each_met_alone_but_not_together_are_named_together(sample_tables):
    # a dirty grid for the reserved H100s, a clean one for the 4090s: the cheapest day ($403.20,
    # 31.7 kg) and the cleanest ($414, 30.6 kg) each meet one limit, no day meets both
    result = limited(
        sample_tables, sites=(900, 20), budget_usd_per_day=405, carbon_cap_kg_per_day=31
    )
    assert result.day is not None and result.day.status.value == "infeasible"
    assert result.day.message.endswith(
        "every hour together: budget_usd_per_day $405.00/day; carbon_cap_kg_per_day 31 kgCO2e/day"
    ), result.day.message
    assert limited(sample_tables, sites=(900, 20), budget_usd_per_day=405).day.cost_usd
    assert limited(sample_tables, sites=(900, 20), carbon_cap_kg_per_day=31).day.cost_usd
