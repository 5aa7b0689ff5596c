"""Plans with availability (issue 23): the sizing arithmetic, the program's optimality checked by
enumeration on small instances, probabilities by direct computation, and plans without
availability unchanged."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from fleetplan.planner import PlanStatus, Scenario, plan
from fleetplan.planner.availability.probability import (
    PoolState,
    carries,
    joint_carries,
    one_host_lost,
    servers_for,
)
from tests.support.planner_points import gpu
from tests.test_planner import FACTS, POINTS, run

# POINTS, measured rule at full capacity: one H100 per server carries 4 req/s within 300 ms
# ($2/h a server), two RTX 4090s per server 3 req/s ($0.50/h a server).
CAP = {"h100-pcie": 4.0, "rtx-4090": 3.0}
PRICE = {"h100-pcie": 2.0, "rtx-4090": 0.5}


def _p_at_least(n: int, a: float, m: int) -> float:
    """P(Binomial(n, a) >= m) summed term by term (not the module's scipy call)."""
    return sum(math.comb(n, k) * a**k * (1 - a) ** (n - k) for k in range(m, n + 1))


def _pmf(n: int, a: float) -> list[float]:
    return [math.comb(n, k) * a**k * (1 - a) ** (n - k) for k in range(n + 1)]


def _joint(nh: int, ah: float, n4: int, a4: float, rate: float) -> float:
    """P(4 U_h + 3 U_4 >= rate) by summing over every (U_h, U_4)."""
    return sum(
        ph * p4
        for (uh, ph), (u4, p4) in itertools.product(
            enumerate(_pmf(nh, ah)), enumerate(_pmf(n4, a4))
        )
        if uh * CAP["h100-pcie"] + u4 * CAP["rtx-4090"] >= rate - 1e-9
    )


def _offers(a_h100: float, a_4090: float) -> list[dict]:
    return [
        gpu("h100-pcie", 2.0, availability=a_h100),
        gpu("rtx-4090", 0.25, availability=a_4090),
    ]


def _chat(rate: float, attainment: float, fallback: bool = False) -> list[dict]:
    return [
        {
            "name": "chat",
            "rate_rps": rate,
            "ttft_p99_ms": 300,
            "attainment": attainment,
            "fallback": fallback,
        }
    ]


def _servers(result) -> dict[str, int]:
    return {p.gpu_model: p.servers for p in result.recommended.pools if p.servers}


def _cheapest_by_enumeration(rate, ah, a4, target, fallback):
    """The cheapest (n_h100, n_4090) that serves `rate` at `target`, by trying every fleet."""
    best = None
    for nh, n4 in itertools.product(range(0, 9), range(0, 16)):
        cost = nh * PRICE["h100-pcie"] + n4 * PRICE["rtx-4090"]
        if best is not None and cost >= best[0] - 1e-9:
            continue
        if fallback:
            ok = _joint(nh, ah, n4, a4, rate) >= target
        else:  # some split of the rate over the pools, each carrying its own share
            ok = any(
                mh * CAP["h100-pcie"] + m4 * CAP["rtx-4090"] >= rate - 1e-9
                and _p_at_least(nh, ah, mh) * _p_at_least(n4, a4, m4) >= target
                for mh in range(nh + 1)
                for m4 in range(n4 + 1)
            )
        if ok:
            best = (cost, nh, n4)
    return best


def test_servers_for_is_the_smallest_n_meeting_the_target():
    assert servers_for(7, 0.95, 0.999) == 11
    assert _p_at_least(11, 0.95, 7) >= 0.999 > _p_at_least(10, 0.95, 7)
    assert servers_for(3, 1.0, 0.999) == 3 and servers_for(3, 0.9, None) == 3
    assert carries(10, 0.95, 7) == pytest.approx(_p_at_least(10, 0.95, 7))
    joint = joint_carries([PoolState(2, 0.999, 4.0), PoolState(3, 0.9, 3.0)], 10.0)
    assert joint == pytest.approx(_joint(2, 0.999, 3, 0.9, 10.0))


def test_one_host_lost_says_whether_the_rest_carry_the_load():
    assert one_host_lost(11, 20.0, 3.0).carries_load  # 10 left at 2 req/s each
    lost = one_host_lost(7, 20.0, 3.0)  # 6 left at 3.33 req/s each, above 3
    assert not lost.carries_load and "above the planned" in lost.sentence()


def test_new_users_chat_plans_the_cheapest_fleet_meeting_its_attainment():
    # chat 20 req/s, P99 TTFT 300 ms, attainment 0.999; RTX 4090 hosts up 95 %, H100 99.9 %.
    result = run(_chat(20, 0.999), _offers(0.999, 0.95), capacity_rule="measured")
    assert result.status is PlanStatus.OPTIMAL
    (pool,) = result.recommended.pools
    # 7 servers of 4090s are needed (20 / 3); 11 planned carry it with probability >= 0.999.
    assert (pool.gpu_model, pool.servers_needed, pool.servers) == ("rtx-4090", 7, 11)
    assert pool.availability == 0.95
    assert pool.probability == pytest.approx(_p_at_least(11, 0.95, 7))
    (chat,) = result.recommended.classes
    assert chat.attainment_target == 0.999
    assert chat.attainment == pytest.approx(_p_at_least(11, 0.95, 7)) and chat.attainment >= 0.999
    best = _cheapest_by_enumeration(20, 0.999, 0.95, 0.999, fallback=False)
    assert result.recommended.totals.hourly_cost_usd == pytest.approx(best[0])
    h100 = next(b for b in result.baselines if b.name == "all-H100")
    assert h100.totals.hourly_cost_usd == pytest.approx(12.0)  # 5 needed, 6 planned at 0.999
    assert [p.servers for p in h100.pools] == [6]


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@pytest.mark.parametrize("fallback", [False, True])
@pytest.mark.parametrize(
    ("rate", "a_h100", "a_4090", "target"),
    [(10, 0.999, 0.9, 0.99), (7, 0.99, 0.6, 0.999), (12, 0.9, 0.8, 0.995), (5, 0.95, 0.5, 0.99)],
)
def test_no_cheaper_fleet_meets_the_attainment(rate, a_h100, a_4090, target, fallback):
    result = run(_chat(rate, target, fallback), _offers(a_h100, a_4090), capacity_rule="measured")
    assert result.status is PlanStatus.OPTIMAL
    servers = _servers(result)
    nh, n4 = servers.get("h100-pcie", 0), servers.get("rtx-4090", 0)
    best = _cheapest_by_enumeration(rate, a_h100, a_4090, target, fallback)
    assert result.recommended.totals.hourly_cost_usd == pytest.approx(best[0])
    (chat,) = result.recommended.classes
    if fallback:  # the planned fleet's probability, by direct computation
        assert chat.attainment == pytest.approx(_joint(nh, a_h100, n4, a_4090, rate))
    else:
        direct = 1.0
        for pool in result.recommended.pools:
            direct *= _p_at_least(pool.servers, pool.availability, pool.servers_needed)
        assert chat.attainment == pytest.approx(direct)
    assert chat.attainment >= target


def test_fallback_lets_a_mixed_fleet_cover_for_itself():
    # Pools that cover for each other need fewer spares than pools that each carry their share.
    alone = run(_chat(10, 0.99), _offers(0.999, 0.6), capacity_rule="measured")
    joint = run(_chat(10, 0.99, fallback=True), _offers(0.999, 0.6), capacity_rule="measured")
    assert (
        joint.recommended.totals.hourly_cost_usd <= alone.recommended.totals.hourly_cost_usd + 1e-9
    )


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_availability_one_and_no_attainment_plan_byte_for_byte_as_before():
    base = {
        "name": "t",
        "model": "acme/m",
        "classes": [
            {"name": "chat", "rate_rps": 6, "ttft_p99_ms": 50},
            {"name": "b", "rate_rps": 6},
        ],
        "gpus": [gpu("h100-pcie", 2.0), gpu("rtx-4090", 0.25)],
        "sites": [{"name": "dc", "electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 300}],
    }
    explicit = json.loads(json.dumps(base))
    for offer in explicit["gpus"]:
        offer["availability"] = 1
    for cls in explicit["classes"]:
        cls["attainment"] = None
        cls["fallback"] = False
    before = plan(Scenario.model_validate(base), POINTS, FACTS)
    after = plan(Scenario.model_validate(explicit), POINTS, FACTS)
    dumped = after.model_dump_json()
    assert dumped == before.model_dump_json()
    for key in ("servers_needed", "probability", "attainment", '"availability"', '"classes"'):
        assert key not in dumped
    assert Scenario.model_validate(explicit).model_dump_json() == (
        Scenario.model_validate(base).model_dump_json()
    )
    assert "availability" not in Scenario.model_validate(base).model_dump_json()


def test_bad_availability_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="availability"):
        Scenario.model_validate(
            {
                "model": "m",
                "classes": [{"name": "c", "rate_rps": 1}],
                "gpus": [gpu("rtx-4090", 0.25, availability=1.5)],
                "sites": [{"name": "dc", "electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 1}],
            }
        )
    with pytest.raises(ValueError, match="attainment"):
        Scenario.model_validate(
            {
                "model": "m",
                "classes": [{"name": "c", "rate_rps": 1, "attainment": 1.0}],
                "gpus": [gpu("rtx-4090", 0.25)],
                "sites": [{"name": "dc", "electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 1}],
            }
        )


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_example_plans_byte_for_byte_as_main_did(sample_warehouse_path):
    """tests/fixtures/plans/chat-batch-qwen14b-v1.json is `fleetplan plan --json` of the example
    scenario on the sample warehouse, written without availability (test_planner_day's too)."""
    from pathlib import Path

    from fleetplan.services.exports import plan_inputs, plan_json
    from fleetplan.services.planning import load_scenario, plan_from_warehouse
    from fleetplan.warehouse import queries
    from fleetplan.warehouse.db import Warehouse

    root = Path(__file__).resolve().parents[1]
    scenario = load_scenario(root / "examples" / "chat-batch-qwen14b.json")
    with Warehouse.open(sample_warehouse_path, read_only=True) as warehouse:
        result = plan_from_warehouse(warehouse, scenario)
        inputs = plan_inputs(
            scenario,
            catalog=queries.gpu_catalog(warehouse),
            prices=queries.gpu_prices(warehouse),
            regions=queries.regions(warehouse),
        )
    expected = (root / "tests" / "fixtures" / "plans" / "chat-batch-qwen14b-v1.json").read_text()
    assert plan_json(result, inputs) == expected


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_day_with_availability_meets_every_hours_target_with_spares(sample_tables):
    """Availability in a day (issue 36, item 4): the day example with its H100s up 99 % and
    its RTX 4090s 95 %, chat asking 0.99: a day plan, not a refusal; in every hour each class
    with a target meets it (recomputed here from the schedule's servers, needed and offers'
    availability), spares are the servers beyond those needed, reserved servers cover every
    hour's, and the day costs more than without availability."""
    import json
    from pathlib import Path

    from fleetplan.planner.availability.probability import carries
    from fleetplan.services.planning import load_scenario, plan_from_tables

    path = Path(__file__).resolve().parents[1] / "examples" / "day-chat-nightly.json"
    raw = json.loads(path.read_text())
    raw["gpus"][0]["availability"] = 0.99
    raw["gpus"][1]["availability"] = 0.95
    raw["classes"][0]["attainment"] = 0.99
    raw["classes"][1]["attainment"] = 0.95
    day = Scenario.model_validate(raw)
    result = plan_from_tables(day, sample_tables.points, sample_tables.catalog).day
    plain = plan_from_tables(load_scenario(path), sample_tables.points, sample_tables.catalog).day
    assert result.cost_usd is not None and result.cost_usd > plain.cost_usd
    assert "spare servers added" in result.message and result.optimality_gap is None
    available = {g.offer_name: g.availability for g in day.gpus}
    targets = {c.name: c.attainment for c in day.classes}
    spared = 0
    assert result.schedule
    for hour in result.schedule:
        chance: dict[str, float] = {}
        for pool in hour.pools:
            assert pool.servers_needed is not None and pool.servers >= pool.servers_needed
            spared += pool.servers - pool.servers_needed
            p = carries(pool.servers, available[pool.offer], pool.servers_needed)
            chance[pool.traffic_class] = chance.get(pool.traffic_class, 1.0) * p
        assert chance
        for name, p in chance.items():
            assert p >= targets[name] - 1e-12, (hour.hour, name, p)
        for reserved in result.reserved:
            held = sum(
                p.servers
                for p in hour.pools
                if p.offer == reserved.offer and p.gpus_per_server == reserved.gpus_per_server
            )
            assert held <= reserved.servers
    assert spared > 0
    lowest = {a.traffic_class: a for a in result.attainment}
    assert lowest.keys() == {"chat", "nightly eval"}
    assert all(a.attainment >= a.attainment_target - 1e-12 for a in lowest.values())
