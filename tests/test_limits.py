"""Limits on what a file may make the importer do: size, unpacked size (gzip bombs), archives,
nesting, value counts and YAML aliases; each refused with a message that says what to do, on the
CLI and in the app."""

from __future__ import annotations

import gzip
import io
import json
import zipfile
import zlib

import pytest

from benchmarks.inputs.vllm_results import make_result
from fleetplan.core.errors import FileTooLargeError, InputError
from fleetplan.warehouse.importers.base import FileInput, ImportOptions
from fleetplan.warehouse.importers.registry import parse
from tests.support.files import write_json


def read(name: str, data: bytes, **options):
    return parse(FileInput.from_bytes(name, data), ImportOptions(**options))


def gzip_bomb(unpacked_mb: int) -> bytes:
    """`unpacked_mb` MB of zeros, gzip-compressed (about 1000:1)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip header
    zeros = bytes(1 << 20)
    return b"".join(compressor.compress(zeros) for _ in range(unpacked_mb)) + compressor.flush()


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_gzip_results_import_and_a_gzip_bomb_stops_at_the_limit():
    result = json.dumps(make_result(rate=2, seed=1)).encode()
    parsed = read("r.json.gz", gzip.compress(result), gpu="rtx-4090", gpu_count=1)
    assert parsed.points == 1
    bomb = gzip_bomb(200)
    assert len(bomb) < 1_000_000  # 200 MB inside a file under 1 MB
    with pytest.raises(FileTooLargeError, match="expands past the 32 MB limit"):
        read("bomb.json.gz", bomb)
    with pytest.raises(FileTooLargeError, match="expands past the 1 MB limit"):
        read("bomb.json.gz", gzip_bomb(5), max_file_bytes=1 << 20)
    with pytest.raises(InputError, match="broken gzip"):
        read("cut.json.gz", gzip.compress(result)[:-20])


def test_zip_archives_are_refused_with_what_to_do():
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("r.json", json.dumps(make_result(rate=2, seed=1)))
    with pytest.raises(InputError, match="a zip archive: unpack it"):
        read("results.zip", buffer.getvalue())
    # an Excel workbook is a zip archive too (genai-bench writes its summary as one): not a folder
    with pytest.raises(InputError, match="a spreadsheet \\(an Excel workbook\\): fleetplan reads"):
        read("summary.xlsx", buffer.getvalue())


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("arrays.json", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        ("objects.json", b'{"a":' * 100_000 + b"1" + b"}" * 100_000, "nested too deeply"),
        ("lines.jsonl", b'{"a":1}\n' + b"[" * 5000 + b"]" * 5000, "nested too deeply"),
        ("flow.yaml", b"benchmarks: " + b"[" * 100_000 + b"]" * 100_000, "maximum nesting"),
        (
            "block.yaml",
            ("benchmarks:\n" + "".join(" " * i + "- \n" for i in range(1, 3000))).encode(),
            "maximum nesting",
        ),
    ],
)
def test_deep_nesting_is_refused(name, data, message):
    with pytest.raises(InputError, match=message):
        read(name, data)


def test_yaml_anchors_and_aliases_are_refused():
    lines = ["benchmarks: &l0 [x, x]"]  # a billion laughs: each level nine times the one before
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 10)]
    with pytest.raises(InputError, match="anchors and aliases are not accepted"):
        read("laughs.yaml", "\n".join(lines).encode())


def test_value_count_limit_is_configurable(monkeypatch):
    huge = json.dumps({"benchmarks": list(range(1_000_000))}).encode()
    with pytest.raises(FileTooLargeError, match="over the limit of 100,000"):
        read("many.json", huge, max_values=100_000)
    monkeypatch.setenv("FLEETPLAN_MAX_VALUES", "500000")
    with pytest.raises(FileTooLargeError, match=r"over the limit of 500,000 \(raise it"):
        read("many.json", huge)
    monkeypatch.setenv("FLEETPLAN_MAX_VALUES", "2000000")
    with pytest.raises(InputError, match="not a format fleetplan can import"):
        read("many.json", huge)  # under the limit: read, then refused as what it is


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_cli_refuses_an_oversized_file_before_reading_it(cli, tmp_path, warehouse_path):
    result = write_json(tmp_path / "r.json", make_result(rate=2, seed=1))
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip_bomb(100))
    done = cli("ingest", "--warehouse", warehouse_path, "--max-file-mb", "0.01", result, bomb)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "over the 0.01 MB limit (raise it with --max-file-mb" in done.stdout
    assert "0 imported, 0 already present, 2 rejected" in done.stdout
    done = cli("ingest", "--warehouse", warehouse_path, result, bomb)
    assert "expands past the 32 MB limit" in done.stdout
    assert "1 imported, 0 already present, 1 rejected" in done.stdout
    many = write_json(tmp_path / "many.json", {"benchmarks": list(range(20_000))})
    done = cli("ingest", "--warehouse", warehouse_path, "--max-values", "10000", many)
    assert "over the limit of 10,000 (raise it with --max-values" in done.stdout
