"""What identity a run has: its content (the canonical points and the setup they were measured
on), never the file's bytes nor a checksum the file states; and a vLLM result's numeric
`gpu_count` is read, not reported as ignored."""

from __future__ import annotations

import gzip
import json

import duckdb
import pytest

from benchmarks.inputs.vllm_results import make_result
from fleetplan.core.contract import RUN_FILE_FORMAT, RunFile
from fleetplan.core.tabular import to_csv
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from fleetplan.warehouse.ingest import Outcome, ingest_file
from fleetplan.warehouse.preview import FileStatus
from fleetplan.warehouse.queries import benchmark_points


def test_an_integer_gpu_count_is_read_and_not_reported_as_ignored():
    result = make_result(metadata={"gpu_name": "NVIDIA GeForce RTX 4090"}) | {
        "gpu_count": 2,
        "tensor_parallel_size": 2,
    }
    parsed = parse(FileInput.from_bytes("r.json", json.dumps(result).encode()), ImportOptions())
    (run,) = parsed.runs
    assert run.gpu_count == 2 and run.tensor_parallel_size == 2
    assert not any("ignored keys" in warning for warning in parsed.warnings), parsed.warnings
    # a key fleetplan does not read is still reported
    odd = result | {"frobnicate": 3}
    parsed = parse(FileInput.from_bytes("r.json", json.dumps(odd).encode()), ImportOptions())
    assert any(w.endswith("ignored keys frobnicate") for w in parsed.warnings), parsed.warnings


# -- a run's identity is its content ---------------------------------------------------------------

RESULT = make_result(seed=21, metadata={"gpu_name": "NVIDIA GeForce RTX 4090", "gpu_count": "1"})
COMPACT = json.dumps(RESULT).encode()


def ingest(warehouse, name: str, data: bytes) -> Outcome:
    return ingest_file(warehouse, FileInput.from_bytes(name, data))


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
@pytest.mark.parametrize(
    ("copy", "how"),
    [
        (json.dumps(RESULT, indent=2).encode(), "pretty-printed"),
        (gzip.compress(COMPACT), "gzipped"),
        (COMPACT + b"\n", "with one byte added"),
        (json.dumps(dict(reversed(RESULT.items()))).encode(), "with its keys in another order"),
    ],
)
def test_the_same_run_re_serialised_is_already_present(warehouse, copy, how):
    assert ingest(warehouse, "r.json", COMPACT).status is FileStatus.IMPORTED
    again = ingest(warehouse, "copy.json", copy)
    assert again.status is FileStatus.DUPLICATE, (how, again.message)
    assert "already in the warehouse (from r.json)" in again.message
    assert warehouse.cursor().execute("SELECT count(*) FROM runs").fetchone() == (1,)


def test_a_changed_figure_is_another_run(warehouse):
    ingest(warehouse, "r.json", COMPACT)
    edited = RESULT | {"mean_ttft_ms": RESULT["mean_ttft_ms"] * 1.01}
    edited.pop("ttfts")  # statistics as stated, not recomputed from the requests
    edited.pop("itls")
    outcome = ingest(warehouse, "edited.json", json.dumps(edited).encode())
    assert outcome.status is FileStatus.IMPORTED, outcome.message


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_row_claiming_another_files_checksum_does_not_block_that_file(warehouse, tmp_path):
    victim = FileInput.from_bytes("victim.json", COMPACT)
    # a CSV table whose one row claims to come from victim.json (its checksum and position),
    # with other numbers
    other = make_result(seed=22, metadata={"gpu_name": "NVIDIA GeForce RTX 4090", "gpu_count": "1"})
    ingest(warehouse, "other.json", json.dumps(other).encode())
    table = benchmark_points(warehouse)
    table["source_sha256"] = victim.sha256
    table["source_index"] = 0
    with Warehouse.open(tmp_path / "fresh.duckdb") as fresh:
        forged = ingest(fresh, "forged.csv", to_csv(table).encode())
        assert forged.status is FileStatus.IMPORTED, forged.message
        outcome = ingest_file(fresh, victim)
        assert outcome.status is FileStatus.IMPORTED, outcome.message
        claimed = fresh.cursor().execute("SELECT origin_sha256 FROM runs").fetchall()
        assert claimed == [(victim.sha256,), (victim.sha256,)]  # kept as said, as provenance


def test_a_run_twice_in_one_file_is_stored_once(warehouse):
    (run,) = parse(FileInput.from_bytes("r.json", COMPACT)).runs
    twice = RunFile(format=RUN_FILE_FORMAT, format_version=1, runs=(run,))
    document = json.loads(twice.model_dump_json())
    document["runs"] = [document["runs"][0], document["runs"][0] | {"source_index": 1}]
    outcome = ingest(warehouse, "twice.json", json.dumps(document).encode())
    assert outcome.status is FileStatus.IMPORTED and outcome.runs == 1, outcome.message
    assert "1 run(s) already present were skipped" in outcome.message


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_migration_gives_stored_runs_their_content_key(warehouse_path, tmp_path):
    """A warehouse written before 005 (identity by the origin a file claimed), holding the
    same run twice (re-serialised): both are kept, each with a unique key, the first imported
    with the key an import computes today."""
    with Warehouse.open(warehouse_path, migrate=False) as wh:
        wh.migrate(upto="004_point_load")
    with Warehouse.open(tmp_path / "now.duckdb") as now:
        ingest(now, "r.json", COMPACT)
        ingest(now, "pretty.json", json.dumps(RESULT, indent=2).encode())  # a duplicate today
        assert now.cursor().execute("SELECT count(*) FROM runs").fetchone() == (1,)
        (today,) = now.cursor().execute("SELECT run_key FROM runs").fetchall()
    with duckdb.connect(str(warehouse_path)) as raw:
        raw.execute(f"ATTACH '{tmp_path / 'now.duckdb'}' AS now (READ_ONLY)")
        for name, sha, offset in (("r.json", "a" * 64, 0), ("pretty.json", "b" * 64, 1)):
            raw.execute(
                "INSERT INTO sources SELECT * REPLACE (? AS source_id, ? AS file_name, "
                "imported_at + to_seconds(?) AS imported_at) FROM now.sources",
                [sha, name, offset],
            )
            raw.execute(
                "INSERT INTO runs SELECT * EXCLUDE (run_key, variant) REPLACE (? AS source_id, "
                "? AS run_id, ? AS origin_sha256) FROM now.runs",
                [sha, f"{sha[:16]}-0", sha],
            )
            raw.execute(
                # 007's columns are not there yet
                "INSERT INTO points SELECT * EXCLUDE (configured_rate_rps, notes) "
                "REPLACE (? AS run_id) FROM now.points",
                [f"{sha[:16]}-0"],
            )
    with Warehouse.open(warehouse_path) as wh:
        assert "005_run_identity" in wh.applied_migrations()  # later migrations may follow
        keys = dict(wh.cursor().execute("SELECT run_id, run_key FROM runs").fetchall())
        assert keys == {"a" * 16 + "-0": today[0], "b" * 16 + "-0": f"{today[0]}-{'b' * 16}-0"}
        # the run is now present by its content, from the first file
        outcome = ingest(wh, "third.json", gzip.compress(COMPACT))
        assert outcome.status is FileStatus.DUPLICATE and "(from" in outcome.message


def test_a_runs_key_is_the_same_text_whatever_the_values_kind():
    """The key's canonical text (`identity._canonical`, with a fast path for floats, text and
    whole numbers) is the documented one for every kind a stored figure has: 10 significant
    digits, inf and nan as Python writes them, an enum as its stored text, bools and None as
    they are; a large file's keys are computed once and handed to the store."""
    import hashlib
    import math

    from fleetplan.core.contract import EnergyMethod
    from fleetplan.warehouse.identity import content_key

    def reference(value):
        value = getattr(value, "value", value)
        if value is None or isinstance(value, bool | str):
            return value
        number = float(value)
        return repr(number) if math.isinf(number) else f"{number:.10g}"

    values = [
        1.0, 0.1 + 0.2, 123456789012.5, -2.5e-7, math.inf, -math.inf, math.nan, 0, 7,
        2**60, True, False, None, "h100-pcie", EnergyMethod.NONE,
    ]  # fmt: skip
    setup = [reference(v) for v in ("m", "g", 1)]
    text = json.dumps([setup, [[reference(v) for v in values]]], separators=(",", ":"))
    assert content_key(["m", "g", 1], [values]) == hashlib.sha256(text.encode()).hexdigest()
    assert text.count('"inf"') == 1 and '"-inf"' in text and '"nan"' in text and "true" in text


def test_the_store_is_handed_keys_that_match_its_runs(warehouse):
    from fleetplan.warehouse.identity import run_key, run_keys
    from fleetplan.warehouse.preview import preview_file
    from fleetplan.warehouse.store import SourceFile, store_runs

    file = FileInput.from_bytes("r.json", COMPACT)
    preview = preview_file(warehouse, file, ImportOptions())
    assert preview.keys == run_keys(preview.parsed.runs) == (run_key(preview.parsed.runs[0]),)
    source = SourceFile(name="r.json", sha256=file.sha256, size_bytes=1, importer="x",
                        importer_version="1", origin="test", warnings=())  # fmt: skip
    with pytest.raises(ValueError, match="1 runs"):
        store_runs(warehouse, source, preview.parsed.runs, keys=())
