"""The docs cover the code (datasette's pattern): every scenario field, every `fleetplan`
subcommand and option, and every import format is named in docs/*.md; docs/reference.md is what
`fleetplan.cli.docs` writes from the code now; the README stays short; every relative link in the
README and docs/ reaches a file.

The names are collected here from the code itself (the pydantic models' fields, the argparse
parser, the importer registry), not from the generator, so a generator that drops one fails too.
"""

from __future__ import annotations

import argparse
import re
from functools import cache
from pathlib import Path

import pytest

from fleetplan.cli import build_parser
from fleetplan.cli.docs import FIELD_NOTES, reference_markdown
from fleetplan.planner.scenario.parts import CarbonPrice, GpuOffer, Site
from fleetplan.planner.scenario.scenario import Scenario, TrafficClass
from fleetplan.warehouse.importers.registry import FORMATS
from tests.support.paths import ROOT

DOCS = ROOT / "docs"
README = ROOT / "README.md"
MAX_README_LINES = 250
MODELS = (Scenario, TrafficClass, GpuOffer, Site, CarbonPrice)


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@cache
def expected() -> tuple[tuple[str, str, str], ...]:
    """(kind, where, name) for everything the docs must name: ("field", "GpuOffer",
    "rated_w"), ("command", "plan", "plan"), ("option", "plan", "--router"), ("format", "",
    "csv-table")."""
    found = [("field", m.__name__, name) for m in MODELS for name in m.model_fields]
    parser = build_parser()
    found += [("option", "", o) for a in parser._actions for o in a.option_strings]
    for command, sub in subparsers(parser).items():
        found.append(("command", command, command))
        found += [("option", command, o) for a in sub._actions for o in a.option_strings]
    found += [("format", "", f.IMPORTER) for f in FORMATS]
    return tuple(found)


def label(item: tuple[str, str, str]) -> str:
    kind, where, name = item
    if kind == "field":
        return f"field {where}.{name}"
    if kind == "option":
        return f"option fleetplan {where + ' ' if where else ''}{name}"
    return f"{kind} {name}"


def sections(text: str, heading: str) -> str:
    """The parts of `text` under each Markdown heading that contains `heading` (up to the next
    heading of the same level or above); all of `text` when `heading` is empty."""
    if not heading:
        return text
    lines = text.splitlines()
    found: list[str] = []
    for start, line in enumerate(lines):
        match = re.match(r"(#+) ", line)
        if not match or heading not in line:
            continue
        level = len(match.group(1))
        for inner in lines[start + 1 :]:
            deeper = re.match(r"(#+) ", inner)
            if deeper and len(deeper.group(1)) <= level:
                break
            found.append(inner)
    return "\n".join(found)


def missing(docs: str) -> list[str]:
    """What the docs text does not name, each said as `label` says it. A field must appear as
    `name` under its model's heading (`Scenario`); an option as `--option` under its command's
    heading (`fleetplan plan`; the top-level options anywhere); a command as `fleetplan NAME`;
    a format's name as `name`."""
    gone = []
    for item in expected():
        kind, where, name = item
        if kind == "field":
            present = f"`{name}`" in sections(docs, f"`{where}`")
        elif kind == "option":
            present = f"`{name}`" in sections(docs, f"`fleetplan {where}`" if where else "")
        elif kind == "command":
            present = f"`fleetplan {name}`" in docs or f"`fleetplan {name} " in docs
        else:
            present = f"`{name}`" in docs
        if not present:
            gone.append(label(item))
    return gone


def docs_text() -> str:
    return "\n\n".join(p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md")))


@cache
def missing_now() -> frozenset[str]:
    return frozenset(missing(docs_text()))


@pytest.mark.parametrize("name", [label(item) for item in expected()])
def test_the_docs_name_it(name):
    assert name not in missing_now(), f"{name} is not in docs/*.md: regenerate docs/reference.md"


def test_the_reference_is_what_the_code_gives_now():
    written = (DOCS / "reference.md").read_text(encoding="utf-8")
    assert written == reference_markdown(), (
        "docs/reference.md is stale: python -m fleetplan.cli.docs > docs/reference.md"
    )


def test_the_check_reports_a_field_an_option_and_a_format_left_out():
    reference = reference_markdown()
    assert missing(reference) == []
    cut = [
        "- `rated_w`",  # a field
        "- `--router`",  # an option
        "- `--wait`",  # an option of three commands (ingest, collect, validate)
        "- `csv-table`",  # a format
    ]
    kept = [line for line in reference.splitlines() if not any(line.startswith(c) for c in cut)]
    assert missing("\n".join(kept)) == [
        "field GpuOffer.rated_w",
        "option fleetplan ingest --wait",
        "option fleetplan plan --router",
        "option fleetplan collect --wait",
        "option fleetplan validate --wait",
        "format csv-table",
    ]


def test_the_check_reports_a_command_left_out():
    reference = reference_markdown().replace("`fleetplan simulate`", "fleetplan simulate")
    gone = missing(reference)
    assert gone[0] == "command simulate"
    assert "option fleetplan simulate --plan" in gone  # its heading went with it


def test_an_option_named_under_another_command_does_not_count():
    # `--tpot-p99` of `collect` does not document `capacity --tpot-p99`
    reference = reference_markdown()
    capacity = sections(reference, "`fleetplan capacity`")
    assert "`--tpot-p99`" in capacity
    without = reference.replace(capacity, capacity.replace("`--tpot-p99`", "`--tpot`"))
    assert missing(without) == ["option fleetplan capacity --tpot-p99"]


def test_each_hand_note_is_for_a_field_without_a_description():
    fields = {m.__name__: m.model_fields for m in MODELS}
    for model, name in FIELD_NOTES:
        assert name in fields[model], f"{model}.{name} is no field: drop its note"
        assert not fields[model][name].description, f"{model}.{name} describes itself now"


def test_the_readme_is_short():
    lines = len(README.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines, over {MAX_README_LINES}"


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def relative_links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.DOTALL)
    targets = [m.group(1) for m in LINK.finditer(text)]
    return [t for t in targets if not re.match(r"[a-z][a-z0-9+.-]*:", t) and t[0] != "#"]


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as
    dashes ("## The range of a scenario's numbers" -> the-range-of-a-scenarios-numbers)."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.DOTALL)
    headings = re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in relative_links(page):
        path, _, anchor = target.partition("#")
        found = (page.parent / path).resolve() if path else page
        exists = found.exists()
        heading_gone = exists and anchor and found.suffix == ".md" and anchor not in anchors(found)
        if not exists or heading_gone:
            broken.append(target)
    return broken


@pytest.mark.parametrize(
    "page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_relative_link_reaches_a_file_and_its_heading(page):
    broken = broken_links(page)
    assert not broken, f"{page.relative_to(ROOT)} links to what is not there: {broken}"


def test_the_link_check_finds_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# Top\n[a](here.md#the-range-of-x) [b](https://x.org) [c](#top) ![d](gone.png)\n"
        "[e](here.md#gone) [f](#nowhere) [i](gone.md#top)\n```\n[g](h)\n```\n"
    )
    (tmp_path / "here.md").write_text("## The range of `x`\n")
    assert relative_links(page) == [
        "here.md#the-range-of-x",
        "gone.png",
        "here.md#gone",
        "gone.md#top",
    ]
    assert broken_links(page) == ["gone.png", "here.md#gone", "gone.md#top"]


# A path in backticks that starts at one of the project's folders (`planner/day/program.py`).
PATH = re.compile(
    r"`((?:app|benchmarks|collectors|docs|examples|fleetplan|planner|sample_data|tests|warehouse)"
    r"/[\w./*-]*)`"
)


def named_paths(text: str) -> list[str]:
    return [m.group(1) for m in PATH.finditer(text)]


@pytest.mark.parametrize(
    "page",
    [README, *sorted(p for p in DOCS.glob("*.md") if p.name != "reference.md")],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_every_file_the_text_names_exists(page):
    """Modules move (planner/day.py became planner/day/program.py): the prose must follow.
    (reference.md quotes the formats' docstrings, which name the tools' own files.)"""
    gone = [
        path
        for path in named_paths(page.read_text(encoding="utf-8"))
        if not any(ROOT.glob(path.rstrip("/")))
    ]
    assert not gone, f"{page.relative_to(ROOT)} names what is not there: {gone}"


def test_the_path_check_finds_a_moved_module():
    text = "see `planner/day.py` and `planner/day/program.py`, `tests/test_browser*.py`, `x/y.py`"
    assert named_paths(text) == [
        "planner/day.py",
        "planner/day/program.py",
        "tests/test_browser*.py",
    ]
    assert [p for p in named_paths(text) if not any(ROOT.glob(p))] == ["planner/day.py"]


def test_the_readme_links_every_docs_page_and_the_screenshots():
    readme = README.read_text(encoding="utf-8")
    for page in [*DOCS.glob("*.md"), *DOCS.glob("*.png")]:
        assert f"docs/{page.name}" in readme, f"README.md does not link docs/{page.name}"
