"""The importer contract (`warehouse/importers/base.py`): every registered format follows it, the
detection order stays what it is, and format modules build on the contract, not on the package
or on each other's internals."""

from __future__ import annotations

import ast
import inspect

import pytest

from fleetplan.core.errors import InputError
from fleetplan.warehouse.importers import base, registry
from fleetplan.warehouse.importers.base import ImportOptions
from fleetplan.warehouse.importers.registry import FORMATS
from tests.support.paths import ROOT

IMPORTERS = ROOT / "warehouse" / "importers"


def test_detection_order_is_unchanged():
    assert [f.IMPORTER for f in FORMATS] == [
        "fleetplan-runs",
        "inference-perf",
        "inferencex",
        "sglang-bench-serving",
        "vllm-serve-json",
        "guidellm",
        "genai-bench",
        "llm-load-test",
        "mlperf-loadgen",
        "llmperf",
        "genai-perf-aiperf",
        "ml-energy",
        "trtllm-bench",
        "llm-d-benchmark-report",
        "csv-table",
    ]


@pytest.mark.parametrize("format_", FORMATS, ids=lambda f: f.IMPORTER)
def test_every_registered_format_follows_the_contract(format_):
    assert isinstance(format_, base.Format)
    assert isinstance(format_.IMPORTER, str) and format_.IMPORTER
    assert isinstance(format_.VERSION, str) and format_.VERSION
    for name in ("detect", "parse"):
        expected = list(inspect.signature(getattr(base.Format, name)).parameters)[1:]  # no self
        assert list(inspect.signature(getattr(format_, name)).parameters) == expected, name
    assert inspect.getdoc(format_), f"{format_.__name__} says nothing about its format"


def test_names_are_unique():
    assert len({f.IMPORTER for f in FORMATS}) == len(FORMATS)


def _dotted(path) -> str:
    """A module of the importers package by its dotted name (`genai_perf/export.py`:
    fleetplan.warehouse.importers.genai_perf.export)."""
    parts = [p for p in path.relative_to(IMPORTERS).with_suffix("").parts if p != "__init__"]
    return ".".join([PACKAGE, *parts])


def _imported_modules(path) -> set[str]:
    """The modules a file imports from (`from X import y`: X, or X.y where y is a module)."""
    modules = {p.stem for p in IMPORTERS.glob("*.py") if p.stem != "__init__"}
    modules |= {p.name for p in IMPORTERS.iterdir() if (p / "__init__.py").exists()}
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                is_module = node.module == PACKAGE and alias.name in modules
                found.add(f"{node.module}.{alias.name}" if is_module else node.module)
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


PACKAGE = "fleetplan.warehouse.importers"


@pytest.mark.parametrize(
    "path",
    sorted(
        p
        for p in IMPORTERS.rglob("*.py")
        if p.relative_to(IMPORTERS).stem != "registry" and p != IMPORTERS / "__init__.py"
    ),
    ids=lambda p: _dotted(p).removeprefix(f"{PACKAGE}."),
)
def test_format_modules_never_import_the_package_or_the_registry(path):
    """The package imports the registry, which imports the formats: a format importing either
    back would be a cycle. Formats build on `base` and `document`."""
    wrong = {
        name
        for name in _imported_modules(path)
        if name in (PACKAGE, f"{PACKAGE}.registry") or name.startswith(f"{PACKAGE}.registry.")
    }
    assert not wrong


def test_no_format_is_left_out_of_the_registry():
    import importlib

    paths = sorted(IMPORTERS.rglob("*.py"))
    assert len(paths) > 0  # a loop over nothing asserts nothing
    for path in paths:
        module = importlib.import_module(_dotted(path))
        if isinstance(module, base.Format):
            assert module in FORMATS, f"{path.stem} looks like a format but is not registered"


# -- the shared glue -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("3", "expected a number"),
        (True, "expected a number"),
        (float("nan"), "finite"),
        (float("inf"), "finite"),
        (-1, ">= 0"),
        (10**30, "implausibly large"),
        (2.5, "whole number"),
    ],
)
def test_one_reading_of_a_json_number(value, message):
    with pytest.raises(InputError, match=message) as caught:
        base.number(value, file="f.json", field="x", where="result 1", integer=True)
    assert caught.value.field == "x" and "result 1: " in str(caught.value)
    assert base.finite(value) is None or message in (">= 0", "whole number")
    assert base.number(3.0, file="f", field="x", integer=True) == 3
    assert base.optional_number(None, file="f", field="x") is None


def test_the_file_wins_and_a_contradiction_is_refused():
    options = ImportOptions(model="acme/m", gpu="h100-sxm", gpu_count=8)
    assert base.model_name(options, "f", None) == "acme/m"
    assert base.model_name(options, "f", "acme/m") == "acme/m"
    with pytest.raises(InputError, match="the file says 'other/m' but --model says"):
        base.model_name(options, "f", "other/m")
    # the same GPU spelt differently is no contradiction; the file's label is kept
    assert base.hardware(options, "f", label="NVIDIA H100 80GB HBM3") == (
        "h100-sxm",
        "NVIDIA H100 80GB HBM3",
        8,
    )
    with pytest.raises(InputError, match="--gpu says") as caught:
        base.hardware(options, "f", label="RTX 4090", field="gpu_name")
    assert caught.value.field == "gpu_name"
    # a count the file states on purpose (vLLM's --metadata) must agree; one that telemetry saw
    # (the GPUs of the node) is the file's
    with pytest.raises(InputError, match="the file says 2 but --gpu-count says 8") as caught:
        base.hardware(options, "f", label="H100 SXM", count=2, exact_count=True, count_field="n")
    assert caught.value.field == "n"
    assert base.hardware(options, "f", label="H100 SXM", count=2)[2] == 2
    with pytest.raises(InputError, match="LLMPerf does not record the hardware: give --gpu-count"):
        base.hardware(ImportOptions(gpu="a10g"), "f", tool="LLMPerf")


def test_a_contract_error_names_the_file_the_place_and_the_field():
    from fleetplan.core.contract import Point

    with pytest.raises(InputError) as caught:
        base.build(Point, "f.csv", "row 3", completed=-1, duration_s=1.0, max_concurrency=1)
    assert caught.value.field == "completed" and "row 3: " in caught.value.reason
    assert caught.value.file == "f.csv"


def test_parse_refuses_what_no_format_detects():
    from fleetplan.core.errors import UnknownFormatError

    with pytest.raises(UnknownFormatError, match="keys a, b"):
        registry.parse(base.FileInput.from_bytes("x.json", b'{"a": 1, "b": 2}'))
