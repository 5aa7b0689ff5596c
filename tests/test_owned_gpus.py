"""GPUs already owned (issue 36, item 3): an offer's `owned_count` is a fleet the plan keeps,
its capital sunk (only electricity counted) or amortised, at least those GPUs ('minimum', more
bought at the purchase price) or exactly those ('exact'); in peak and day plans, and on the
Plan page, where a purchase price or owned GPUs entered clear Power in price."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from fleetplan.planner import PlanStatus, Scenario, plan
from fleetplan.planner.scenario.parts import BOUGHT, HOURS_PER_YEAR
from fleetplan.services.planning import load_scenario, plan_from_tables
from fleetplan.services.scenario_forms import power_cleared
from tests.support.paths import ROOT
from tests.support.planner_points import gpu, level, points, scenario
from tests.test_planner import FACTS

# A: one H100 per server, 4 req/s.  B: one 4090 per server, 2 req/s.
POINTS = points(
    ("h100-pcie", 1, [level(1, 1, ttft=15), level(4, 4, ttft=20), level(8, 5, ttft=400)]),
    ("rtx-4090", 1, [level(1, 1, ttft=30), level(2, 2, ttft=40), level(8, 2.2, ttft=2000)]),
)


def owned(count: int, **extra) -> dict:
    return {
        "gpu_model": "rtx-4090",
        "name": "ours",
        "site": "dc",
        "owned_count": count,
        "electricity_included": False,
        "idle_w": 20,
        "rated_w": 450,
        **extra,
    }


def run(rate: float, offers: list[dict], **extra):
    raw = scenario([{"name": "chat", "rate_rps": rate, "ttft_p99_ms": 200}], offers, **extra)
    return plan(Scenario.model_validate(raw), POINTS, FACTS)


def gpus_of(result, gpu_model: str) -> int:
    return result.recommended.totals.gpus.get(gpu_model, 0)


@pytest.mark.parametrize(
    ("offer", "says"),
    [
        (owned(4, commitment="on_demand"), "owned GPUs are reserved"),
        (owned(4, hourly_usd=0.3), "owned GPUs are not rented"),
        (owned(4, owned_capital="amortised"), "'amortised' needs purchase_usd"),
        (owned(4, max_gpus=2), r"max_gpus \(2\) is below owned_count \(4\)"),
        ({**gpu("rtx-4090", 0.3), "owned_use": "exact"}, "give owned_count"),
        (gpu("rtx-4090", 0.3, name=f"cards{BOUGHT}"), "is the planner's"),
    ],
)
def test_owned_offers_that_cannot_be_are_refused_naming_why(offer, says):
    raw = scenario([{"name": "chat", "rate_rps": 1}], [offer], version=2)
    with pytest.raises(ValidationError, match=says):
        Scenario.model_validate(raw)


def test_every_owned_gpu_is_kept_even_where_the_demand_needs_fewer():
    # 2 req/s needs one 4090; the 6 owned ones are all kept (the rest idle), their capital
    # sunk: the fleet costs their electricity alone.
    result = run(2.0, [owned(6), gpu("h100-pcie", 2.0)])
    assert result.status is PlanStatus.OPTIMAL
    assert gpus_of(result, "rtx-4090") == 6 and gpus_of(result, "h100-pcie") == 0
    pool = next(p for p in result.recommended.pools if p.gpu_model == "rtx-4090")
    power_kw = pool.power_kw
    assert power_kw is not None and power_kw > 0
    assert result.recommended.totals.hourly_cost_usd == pytest.approx(power_kw * 0.1)


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_owned_gpus_are_used_before_renting_and_more_are_bought_at_their_price():
    # 20 req/s: ten 4090s (2 req/s each) or five H100s ($2 each). Owned 4 sunk, more at
    # $1,599 over 4 years ($0.046/h): the plan keeps the 4 and buys 6 more, renting nothing.
    offers = [owned(4, purchase_usd=1599, lifetime_years=4), gpu("h100-pcie", 2.0)]
    result = run(20.0, offers)
    assert gpus_of(result, "rtx-4090") == 10 and gpus_of(result, "h100-pcie") == 0
    capital = 6 * 1599 / (4 * HOURS_PER_YEAR)  # the 6 bought; the 4 owned cost nothing
    energy = sum(p.power_kw for p in result.recommended.pools if p.gpu_model == "rtx-4090") * 0.1
    assert result.recommended.totals.hourly_cost_usd == pytest.approx(capital + energy)
    # exact: the 4 owned and no more; the rest rented
    h100 = gpu("h100-pcie", 2.0)
    exact = run(20.0, [owned(4, purchase_usd=1599, lifetime_years=4, owned_use="exact"), h100])
    assert gpus_of(exact, "rtx-4090") == 4 and gpus_of(exact, "h100-pcie") == 3
    # amortised: the owned ones' capital counts too, every hour
    paid = owned(4, purchase_usd=1599, lifetime_years=4, owned_capital="amortised")
    amortised = run(20.0, [paid, h100])
    more = 4 * 1599 / (4 * HOURS_PER_YEAR)
    assert amortised.recommended.totals.hourly_cost_usd == pytest.approx(
        result.recommended.totals.hourly_cost_usd + more
    )


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_day_keeps_all_sixteen_owned_cards_and_rents_only_beside_them(sample_tables):
    """The new user's day (examples/day-two-models-owned.json): 16 owned RTX 4090s, exactly
    those, H100s rented by the hour. Without the owned cards the same day rents more."""
    day = load_scenario(ROOT / "examples" / "day-two-models-owned.json")
    result = plan_from_tables(day, sample_tables.points, sample_tables.catalog)
    assert result.day is not None and result.day.status.value == "optimal"
    owned_units = [u for u in result.day.fleet if u.offer == "owned RTX 4090"]
    assert sum(u.servers * u.gpus_per_server for u in owned_units) == 16
    assert all(u.commitment == "reserved" for u in owned_units)
    rented = sum(u.gpu_hours for u in result.day.fleet if u.offer == "rented H100")
    without = day.model_copy(update={"gpus": [g for g in day.gpus if g.owned_count is None]})
    alone = plan_from_tables(without, sample_tables.points, sample_tables.catalog)
    rented_alone = sum(u.gpu_hours for u in alone.day.fleet if u.offer == "rented H100")
    assert rented < rented_alone
    # their capital sunk: an owned unit's day costs its electricity alone
    for unit in owned_units:
        assert unit.cost_usd < unit.gpu_hours * 0.5  # 450 W at $0.4151/kWh is below $0.19/h


def test_the_page_clears_power_in_price_where_a_purchase_price_is_entered():
    base = Scenario.model_validate(
        scenario([{"name": "chat", "rate_rps": 1}], [gpu("h100-pcie", 2)])
    )
    bought = base.model_copy(
        update={
            "gpus": [
                base.gpus[0].model_copy(
                    update={"hourly_usd": None, "purchase_usd": 25_000, "lifetime_years": 4}
                )
            ]
        }
    )
    assert bought.gpus[0].electricity_included  # the rent's default, left ticked
    cleared, notes = power_cleared(bought, before=base)
    assert not cleared.gpus[0].electricity_included
    assert notes and "Power in price cleared" in notes[0]
    # a row that was bought already (a loaded file, or ticked again after the clearing) stays
    assert power_cleared(bought, before=bought) == (bought, [])


@pytest.mark.slow
def test_a_purchase_price_typed_on_the_page_clears_power_in_price(
    monkeypatch, sample_warehouse_path, fresh_caches
):
    """The new user's trap (issue 36): a rented row given a purchase price kept Power in price
    ticked, and its electricity cost nothing. Typed as the browser sends it, the page clears the
    tick, says so, and plans the bought GPU with its electricity paid."""
    from tests.support.pages import open_app

    at = open_app(monkeypatch, sample_warehouse_path)
    row = next(
        i for i, g in enumerate(at.session_state["s_current"].gpus) if g.purchase_usd is None
    )
    gen = at.session_state["s_gens"]["gpus"]
    at.session_state[f"w_gpus_{gen}"] = {
        "edited_rows": {row: {"hourly_usd": None, "purchase_usd": 1800.0, "lifetime_years": 4.0}},
        "added_rows": [],
        "deleted_rows": [],
    }
    at.run()
    assert not at.exception, at.exception
    offer = at.session_state["s_current"].gpus[row]
    assert offer.purchase_usd == 1800 and offer.electricity_included is False
    said = " ".join(str(n) for n in at.session_state["s_notes"])
    assert "Power in price cleared" in said
