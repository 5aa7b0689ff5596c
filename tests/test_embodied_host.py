"""Embodied carbon counts the host server's share beside the GPUs' (issue 15): from the catalog's
share per GPU (Green Algorithms, sourced), or an offer's own figure per server; shown apart."""

from __future__ import annotations

import json

import pytest

from fleetplan.planner import GpuFacts, Scenario, plan
from fleetplan.planner.report.table import summary
from fleetplan.services.exports import plan_inputs, plan_json, sources_table
from fleetplan.services.planning import facts_from_catalog
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import gpu_catalog, gpu_prices, regions
from tests.support.planner_points import gpu, level, points, scenario

HOURS_PER_MONTH, HOURS = 730.0, 5 * 8760.0  # a month; a 5-year lifetime
FACTS = {
    "h100-pcie": GpuFacts(
        "h100-pcie",
        rated_w=350,
        idle_w=40,
        embodied_kgco2e=164,
        host_embodied_kgco2e_per_gpu=62,
        lifetime_years=5,
    ),
    # no host share known for this one
    "l40s": GpuFacts("l40s", rated_w=350, idle_w=30, embodied_kgco2e=100, lifetime_years=5),
}
# Eight GPUs per server, 8 req/s each; one batch class of 16 req/s -> two servers.
POINTS = points(("h100-pcie", 8, [level(8, 8)]), ("l40s", 8, [level(8, 8)]))


def _only(gpu_model: str, **offer) -> Scenario:
    return Scenario.model_validate(
        scenario([{"name": "batch", "rate_rps": 16}], [gpu(gpu_model, 2.0) | offer])
    )


def test_the_catalog_share_per_gpu_counts_per_server_and_is_shown_apart():
    result = plan(_only("h100-pcie"), POINTS, FACTS, pareto_points=0)
    (pool,) = result.recommended.pools
    assert pool.servers == 2 and pool.gpus == 16
    gpus_kg = 16 * 164 / HOURS * HOURS_PER_MONTH
    host_kg = 16 * 62 / HOURS * HOURS_PER_MONTH  # 62 kg per GPU slot x 8 per server x 2
    assert pool.host_embodied_kgco2e_month == pytest.approx(host_kg)
    assert pool.embodied_kgco2e_month == pytest.approx(gpus_kg + host_kg)
    assert result.recommended.totals.host_embodied_kgco2e_month == pytest.approx(host_kg)
    text = summary(result)
    assert f"(of which host servers {host_kg:,.0f})" in text


def test_an_offer_sets_its_own_host_figure_per_server():
    # EcoLogits' 5,700 kg for an 8-GPU server's host, whatever the catalog says per GPU
    result = plan(_only("h100-pcie", host_embodied_kgco2e=5700), POINTS, FACTS, pareto_points=0)
    (pool,) = result.recommended.pools
    host_kg = 2 * 5700 / HOURS * HOURS_PER_MONTH
    assert pool.host_embodied_kgco2e_month == pytest.approx(host_kg)
    assert pool.embodied_kgco2e_month == pytest.approx(16 * 164 / HOURS * 730 + host_kg)


def test_an_unknown_host_share_is_unknown_and_said_so_not_zero():
    result = plan(_only("l40s"), POINTS, FACTS, pareto_points=0)
    (pool,) = result.recommended.pools
    assert pool.host_embodied_kgco2e_month is None
    assert pool.embodied_kgco2e_month == pytest.approx(16 * 100 / HOURS * HOURS_PER_MONTH)
    assert any("host server's embodied share unknown" in note for note in pool.notes)
    assert result.recommended.totals.host_embodied_kgco2e_month is None
    assert "(of which host servers unknown)" in summary(result)


def test_no_host_share_where_embodied_is_switched_off():
    result = plan(_only("h100-pcie", include_embodied=False), POINTS, FACTS, pareto_points=0)
    (pool,) = result.recommended.pools
    assert pool.embodied_kgco2e_month == 0 and pool.host_embodied_kgco2e_month == 0


def test_the_bundled_catalog_carries_a_sourced_host_share(sample_warehouse_path):
    with Warehouse.open(sample_warehouse_path, read_only=True) as wh:
        catalog = gpu_catalog(wh)
        facts = facts_from_catalog(catalog)
        tables = {"catalog": catalog, "prices": gpu_prices(wh), "regions": regions(wh)}
    for gpu_id in ("rtx-4090", "h100-pcie", "h100-sxm"):
        assert facts[gpu_id].host_embodied_kgco2e_per_gpu == 62
        assert "Green Algorithms" in facts[gpu_id].sources["host_embodied_kgco2e_per_gpu"]
    row = catalog.set_index("gpu_id").loc["h100-pcie"]
    assert row["host_embodied_basis"] == "peer default (per GPU slot)"
    # the exports say which host figure a plan used, and from where
    sc = _only("h100-pcie")
    inputs = plan_inputs(sc.model_copy(update={"model": "acme/m"}), **tables)
    (h100,) = inputs["gpus"]
    assert h100["host_embodied_kgco2e_per_gpu"] == 62
    assert h100["host_embodied_source"].startswith("catalog (x GPUs per server): Green Algorithms")
    result = plan(sc, POINTS, facts, pareto_points=0)
    sources = sources_table(result, inputs).set_index(["item", "figure"])
    host = sources.loc[("GPU h100-pcie at dc", "host embodied share")]
    assert (host["value"], host["unit"]) == (62, "kgCO2e per GPU")
    assert host["source"].startswith("catalog (x GPUs per server): Green Algorithms")
    assert json.loads(plan_json(result, inputs))["inputs"] == json.loads(json.dumps(inputs))
    overridden = plan_inputs(_only("h100-pcie", host_embodied_kgco2e=900), **tables)
    assert overridden["gpus"][0]["host_embodied_kgco2e_per_server"] == 900
    assert overridden["gpus"][0]["host_embodied_source"] == "the scenario (per server)"
