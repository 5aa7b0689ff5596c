"""`fleetplan paper-check`: the claims the Paper check page shows, as text or JSON, from the paper's
own runs only (a user's modified copy of the paper's file changes nothing)."""

from __future__ import annotations

import json

import pytest

from fleetplan.services.paper_check import claims_from_warehouse, claims_json, paper_claims
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points, counts, gpu_catalog
from tests.support.cli import run_cli
from tests.support.paths import ROOT

SAMPLE_FILE = ROOT / "sample_data" / "benchmarks" / "ionet-aibc2025.json"
IDS = [
    "throughput",
    "cost",
    "per_token",
    "h100_ttft",
    "consumer_ttft",
    "energy",
    "sweet_spot",
    "mixed_fleet",
]


def _json(path) -> dict:
    done = run_cli("paper-check", "--warehouse", path, "--format", "json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_json_carries_each_claim_with_its_rows_as_the_page_builds_them(sample_warehouse_path):
    report = _json(sample_warehouse_path)
    assert [c["id"] for c in report["claims"]] == IDS
    energy = next(c for c in report["claims"] if c["id"] == "energy")
    assert energy["paper"] == "3.1x" and energy["verdict"] == "does not hold"
    assert "6.2x" in energy["recomputed"] and len(energy["rows"]) == 15
    # The same objects as the page's: one function builds them.
    with Warehouse.open(sample_warehouse_path, read_only=True) as wh:
        assert json.loads(claims_json(claims_from_warehouse(wh))) == report


def test_text_names_every_claim_its_verdict_and_rows(cli, sample_warehouse_path):
    done = cli("paper-check", "--warehouse", sample_warehouse_path)
    assert done.returncode == 0, done.stderr
    for claim_id in IDS:
        assert f"[{claim_id}]" in done.stdout
    assert "verdict:    not reproducible" in done.stdout
    assert "vllm_200prompts32qps_DeepSeek-R1-Distill-Qwen-14B_sharegpt_1xNVIDIA-H100-PCIe.json" in (
        done.stdout
    )


def test_an_empty_warehouse_says_what_to_do(cli, tmp_path):
    path = tmp_path / "empty.duckdb"
    Warehouse.open(path).close()
    done = cli("paper-check", "--warehouse", path)
    assert done.returncode == 0 and "fleetplan build" in done.stdout
    assert (
        json.loads(cli("paper-check", "--warehouse", path, "--format", "json").stdout)["claims"]
        == []
    )


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_users_modified_copy_of_the_papers_file_changes_no_verdict(
    cli, sample_warehouse_path, tmp_path
):
    before = _json(sample_warehouse_path)
    document = json.loads(SAMPLE_FILE.read_text())
    mine = [  # the user's H100 serves Qwen-14B twice as fast: the same work in half the time
        run
        for run in document["runs"]
        if run["gpu_model"] == "h100-pcie" and run["model"].endswith("Qwen-14B")
    ]
    for run in mine:
        for point in run["points"]:
            point["duration_s"] /= 2
            for rate in ("total_throughput_tps", "output_throughput_tps", "request_throughput_rps"):
                point[rate] *= 2
    document["runs"] = mine
    copy = tmp_path / "my-ionet-copy.json"
    copy.write_text(json.dumps(document))
    with Warehouse.open(sample_warehouse_path, read_only=True) as wh:
        runs_before = counts(wh)["runs"]
    done = cli("ingest", "--warehouse", sample_warehouse_path, copy)
    assert done.returncode == 0, done.stdout + done.stderr
    with Warehouse.open(sample_warehouse_path, read_only=True) as wh:
        assert counts(wh)["runs"] > runs_before  # the copy is in the warehouse...
        points = benchmark_points(wh)
        catalog = gpu_catalog(wh)
    assert (
        points["source_repository"] == "github.com/IOG-Foundation/llm-inference-benchmarks"
    ).all()
    assert _json(sample_warehouse_path) == before  # ...and changes nothing the check says
    # Were the user's runs counted (the page before this issue), the figures would move.
    unfiltered = json.loads(claims_json(paper_claims(points, catalog)))
    assert unfiltered != before
