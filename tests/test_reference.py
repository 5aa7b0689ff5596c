from __future__ import annotations

import shutil

import pytest

from fleetplan.core.errors import InputError
from fleetplan.warehouse.reference import load_reference, read_catalog, read_regions
from fleetplan.warehouse.sample_data import sample_dir

REQUIRED_REGIONS = {"us", "us-ca", "us-tx", "us-va", "fr", "de", "pl", "se", "no", "is", "uk",
                    "ie", "in", "cn", "eu", "world"}  # fmt: skip


def test_catalog_covers_the_required_gpus_with_sourced_figures():
    gpus = {gpu.id: gpu for gpu in read_catalog(sample_dir()).gpu}
    assert {"rtx-4090", "h100-pcie", "h100-sxm", "h200"} <= set(gpus)
    assert gpus["h100-pcie"].rated_power_w == 350  # not the 700 W the paper used
    assert gpus["rtx-4090"].rated_power_w == 450
    for gpu_id in ("rtx-4090", "h100-pcie", "h100-sxm", "h200"):
        gpu = gpus[gpu_id]
        assert gpu.memory_gb and gpu.memory_bandwidth_gb_s and gpu.spec_source
        assert gpu.rated_power_source
    assert gpus["rtx-4090"].embodied_basis == "estimate"
    assert gpus["rtx-4090"].embodied_kgco2e_low <= 150 <= gpus["rtx-4090"].embodied_kgco2e_high
    assert any(p.usd == 0.25 for p in gpus["rtx-4090"].hourly_price)


def test_regions_cover_the_required_presets_with_year_basis_and_source():
    regions = {region.id: region for region in read_regions(sample_dir()).region}
    assert set(regions) >= REQUIRED_REGIONS
    for region in regions.values():
        if region.grid_gco2_per_kwh is not None:
            assert region.grid_basis and region.grid_source
    assert regions["fr"].grid_gco2_per_kwh == 44 and regions["fr"].grid_basis == "lifecycle"
    assert regions["us-ca"].grid_basis == "direct"  # eGRID: not mixed silently with lifecycle


def test_reference_loads_into_the_warehouse_and_reloads_idempotently(warehouse):
    first = load_reference(warehouse, sample_dir())
    second = load_reference(warehouse, sample_dir())
    assert first == second and first["regions"] >= 16
    cur = warehouse.cursor()
    assert cur.execute("SELECT count(*) FROM regions").fetchone()[0] == first["regions"]
    assert cur.execute(
        "SELECT rated_power_w FROM gpu_catalog WHERE gpu_id = 'h100-pcie'"
    ).fetchone() == (350.0,)


def test_a_figure_without_a_source_is_refused(tmp_path, warehouse):
    shutil.copytree(sample_dir(), tmp_path / "sd", ignore=shutil.ignore_patterns("benchmarks"))
    catalog = tmp_path / "sd" / "gpu_catalog.toml"
    text = catalog.read_text()
    catalog.write_text(text.replace("rated_power_source =", "rated_power_sourcex =", 1))
    with pytest.raises(InputError, match=r"rated_power_sourcex|without rated_power_source"):
        load_reference(warehouse, tmp_path / "sd")
    assert warehouse.cursor().execute("SELECT count(*) FROM gpu_catalog").fetchone() == (0,)
