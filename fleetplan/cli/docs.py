"""docs/reference.md, written from the code so that it cannot drift from it: the scenario's fields
(the pydantic models `Scenario`, `TrafficClass`, `GpuOffer`, `Site`, `CarbonPrice`), every
subcommand and option of the `fleetplan` command (`fleetplan.cli.build_parser`), and the import
formats (`fleetplan.warehouse.importers.registry.FORMATS`).

Regenerate after changing any of them:

    python -m fleetplan.cli.docs > docs/reference.md

tests/test_docs.py fails when docs/reference.md differs from `reference_markdown()`, and when a
field, an option or a format is missing from docs/.
"""

from __future__ import annotations

import argparse
import json
import re
import types
from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from fleetplan.cli import build_parser
from fleetplan.core.text import plain_name
from fleetplan.planner.scenario.parts import CarbonPrice, GpuOffer, Site
from fleetplan.planner.scenario.scenario import Scenario, TrafficClass
from fleetplan.warehouse.importers.registry import FORMATS, READS

# The models of a scenario file, in the order the reference lists them, each with where it sits.
MODELS: tuple[tuple[type[BaseModel], str], ...] = (
    (Scenario, "the scenario file itself (the top-level JSON object)"),
    (TrafficClass, "each item of `classes`"),
    (GpuOffer, "each item of `gpus`"),
    (Site, "each item of `sites`"),
    (CarbonPrice, "the `objective` as an object: cost with a price on carbon"),
)

# What a field without a description of its own means (hand-written; tests/test_docs.py checks
# that each key is a real field that still has no description, so this list cannot go stale).
FIELD_NOTES: dict[tuple[str, str], str] = {
    ("Scenario", "name"): "The scenario's name, printed with the plan and written in its files.",
    ("Scenario", "model"): "The LLM every class is served by unless the class names its own "
    "`model`. It must have benchmark results in the warehouse (else exit 1, naming the models "
    "there are).",
    ("Scenario", "classes"): "The traffic classes to serve.",
    ("Scenario", "gpus"): "The GPU offers the fleet may use.",
    ("Scenario", "sites"): "The sites the offers run in (electricity, grid, PUE).",
    ("Scenario", "objective"): 'What the plan minimises: `"cost"`, `"carbon"`, or '
    '`{"carbon_price_usd_per_t": X}` (cost with carbon priced at X USD a tonne). Ties go to '
    "fewer GPUs.",
    ("Scenario", "time_limit_s"): "The time limit (seconds) of the plan's solving as a whole, "
    "from its first solve: the recommended fleet and its day first, then the baselines and the "
    "frontier with what is left (each says so where nothing was). The dashboard plans with at "
    "most 10 s whatever the scenario says; `fleetplan plan` keeps the scenario's.",
    ("TrafficClass", "name"): "The class's name; unique within the scenario.",
    ("GpuOffer", "gpu_model"): "The GPU, as any common label (`4090`, `H100 PCIe`): stored as "
    "its canonical id (`rtx-4090`, `h100-pcie`); a GPU fleetplan does not know is refused.",
    ("GpuOffer", "site"): "The `name` of the site (in `sites`) the offer runs in.",
    ("Site", "name"): "The site's name, which an offer's `site` refers to; unique.",
    ("Site", "pue"): "Power usage effectiveness: facility energy over the GPUs' energy.",
}

# What a scenario checks beyond each field's own range (the models' validators), in words.
RULES = (
    "Unknown keys are refused, at every level, naming the key; so is a key given twice.",
    "A traffic class gives `rate_rps`, `hourly_rps`, or `daily_requests` (with `window_hours` "
    "if not the whole day); `shape` goes with `rate_rps` only. A `rate_rps` given beside "
    "`hourly_rps` or `daily_requests` must equal the peak they imply.",
    "A GPU offer gives `hourly_usd`, or `purchase_usd` with `lifetime_years`, not both (owned "
    "GPUs, `owned_count`: no `hourly_usd`, a purchase price optional unless `owned_capital` is "
    "`amortised`; reserved; `max_gpus` at least `owned_count`); `idle_w` may not exceed "
    "`rated_w`. An offer's name may not end with ` (more, bought)`, the planner's name for the "
    "GPUs bought beyond an owned offer's.",
    "Class names, offer names (default: the `gpu_model`) and site names are unique; every "
    "offer's `site` is a site of `sites`. The same GPU offered twice needs a `name` on each.",
    "`version` 1 may not use a field of version 2 (`hourly_rps`, `shape`, `daily_requests`, "
    "`window_hours`, a class's `model` or `burstiness`, an offer's `name` or `commitment`, a "
    "site's hourly profiles, `timezone`, the daily limits, `plan_bursts`). A scenario that uses "
    "one is of version 2.",
    "A version 2 (day) scenario with an offer's `availability` below 1 or a class's "
    "`attainment` is planned with spares hour by hour (added after the day's program, which "
    "does not weigh them; the day's message says so).",
    "`timezone` is an IANA name (`UTC`, `Europe/Paris`).",
)

_TYPE_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean"}
# argparse `type` callables, by name, in words.
_ARG_TYPES = {
    "int": "integer",
    "float": "number",
    "positive_int": "integer, at least 1",
    "non_negative_int": "integer, 0 or more",
    "positive_float": "number above 0",
    "seconds": "seconds, 0 to 86,400",
    "convert": "number, a limit above 0",
    "output_file": "a file path whose folder exists (not a FIFO, socket or device)",
}


def _number(value: float) -> str:
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:g}"


def _constraints(metadata: list[Any]) -> dict[str, Any]:
    """The constraints (ge, gt, le, lt, min_length, max_length) in a field's metadata."""
    found: dict[str, Any] = {}
    for item in metadata:
        if isinstance(item, FieldInfo):
            found.update(_constraints(item.metadata))
            continue
        for key in ("ge", "gt", "le", "lt", "min_length", "max_length"):
            if getattr(item, key, None) is not None:
                found[key] = getattr(item, key)
    return found


def _plain(metadata: list[Any]) -> bool:
    return any(isinstance(m, AfterValidator) and m.func is plain_name for m in metadata)


def _range_text(limits: dict[str, Any]) -> str:
    parts = []
    if "ge" in limits:
        parts.append(f"at least {_number(limits['ge'])}")
    if "gt" in limits:
        parts.append(f"above {_number(limits['gt'])}")
    if "le" in limits:
        parts.append(f"at most {_number(limits['le'])}")
    if "lt" in limits:
        parts.append(f"below {_number(limits['lt'])}")
    return ", ".join(parts)


def _length_text(limits: dict[str, Any], unit: str) -> str:
    low, high = limits.get("min_length"), limits.get("max_length")
    if low is not None and low == high:
        return f"exactly {low} {unit}"
    if low is not None and high is not None:
        return f"{low} to {high} {unit}"
    if high is not None:
        return f"at most {high} {unit}"
    return f"at least {low} {unit}" if low is not None else ""


def type_text(annotation: Any, metadata: tuple[Any, ...] = ()) -> str:
    """A field's type in words: `number (at least 0, at most 10) or null`."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return type_text(args[0], (*metadata, *args[1:]))
    if origin in (Union, types.UnionType):
        kinds = [type_text(a, metadata) for a in args if a is not type(None)]
        return " or ".join(kinds) + (" or null" if type(None) in args else "")
    if origin is Literal:
        return "one of " + ", ".join(f"`{json.dumps(a)}`" for a in args)
    limits = _constraints(list(metadata))
    if origin is list:
        count = _length_text(limits, "items")
        return f"list of {type_text(args[0])}" + (f" ({count})" if count else "")
    if origin is tuple:
        return "[" + ", ".join(type_text(a) for a in args) + "]"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return f"`{annotation.__name__}` (below)"
    name = _TYPE_NAMES.get(annotation, getattr(annotation, "__name__", str(annotation)))
    if annotation is str:
        details = [_length_text(limits, "characters")]
        details.append("one line of plain text" if _plain(list(metadata)) else "")
    else:
        details = [_range_text(limits)]
    shown = "; ".join(d for d in details if d)
    return f"{name} ({shown})" if shown else name


def _default_text(field: FieldInfo) -> str:
    if field.default_factory is not None:
        return f"default `{json.dumps(field.default_factory())}`"
    if field.default is PydanticUndefined:
        return "required"
    return f"default `{json.dumps(field.default)}`"


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def scenario_section() -> Iterator[str]:
    yield "## Scenario fields"
    yield ""
    yield (
        "A scenario is a JSON file (`fleetplan plan --scenario FILE`, or the Plan page's upload "
        "and link). Examples: [examples/chat-batch-qwen14b.json]"
        "(../examples/chat-batch-qwen14b.json) (a peak), [examples/day-chat-nightly.json]"
        "(../examples/day-chat-nightly.json) (a day, version 2), "
        "[examples/chat-availability.json](../examples/chat-availability.json) (hosts that "
        "fail). `Scenario.model_json_schema()` gives the same fields as a JSON schema. Each "
        "field below: its type and range, its default (or *required*), and what it means."
    )
    yield ""
    yield "Rules across fields:"
    yield ""
    yield from (f"- {rule}" for rule in RULES)
    for model, where in MODELS:
        yield ""
        yield f"### `{model.__name__}`"
        yield ""
        doc = _one_line(model.__doc__ or "") if model.__doc__ != BaseModel.__doc__ else ""
        yield f"Where: {where}." + (f" {doc}" if doc else "")
        yield ""
        for name, field in model.model_fields.items():
            text = field.description or FIELD_NOTES.get((model.__name__, name), "")
            kind = type_text(field.annotation, tuple(field.metadata))
            line = f"- `{name}`: {kind}; {_default_text(field)}."
            yield f"{line} {_one_line(text)}" if text else line


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def _value_text(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    if action.choices is not None:
        shown = ", ".join(f"`{c}`" for c in action.choices)
        value = f" one of {shown}"
    else:
        value = f" `{action.metavar or action.dest.upper()}`"
    if action.nargs == "?":
        value += f" (optional; alone: `{action.const}`)"
    elif action.nargs in ("+", "*"):
        value += " (one or more)" if action.nargs == "+" else " (any number)"
    if isinstance(action, argparse._AppendAction):
        value += " (repeatable)"
    type_name = getattr(action.type, "__name__", None)
    if type_name is not None and action.choices is None:
        value += f" ({_ARG_TYPES.get(type_name, type_name)})"
    return value


def option_line(action: argparse.Action) -> str:
    """One option (or positional argument) of a subcommand, as a Markdown list item."""
    if action.option_strings:
        names = ", ".join(f"`{o}`" for o in action.option_strings) + _value_text(action)
    else:
        many = {"+": ", one or more", "*": ", any number"}.get(str(action.nargs), "")
        names = f"`{action.metavar or action.dest}` (positional{many})"
    line = f"- {names}"
    default = action.default
    if default not in (None, False, [], argparse.SUPPRESS) and action.nargs != 0:
        line += f"; default `{default}`"
    if action.help == argparse.SUPPRESS:
        return line + ": not shown by `--help` (kept so that older scripts keep working)."
    return line + (f": {_one_line(action.help)}" if action.help else "")


def cli_section() -> Iterator[str]:
    parser = build_parser()
    sub = _subcommands(parser)
    helps = {choice.dest: choice.help for choice in sub._choices_actions}
    yield "## CLI commands and options"
    yield ""
    yield (
        "`fleetplan COMMAND [options]` (or `python -m fleetplan`). Every command prints its own "
        "`fleetplan COMMAND --help`. Exit codes (`fleetplan/core/exits.py`), the same for every "
        "command: 0 done; 1 something given or measured is not good (a file or scenario "
        "refused, an incomplete level, a failed host), named; 2 no answer (no fleet meets the "
        "targets, no capacity; argparse also exits 2 for a malformed command line); 3 cannot "
        "start (the warehouse, a server, a cluster or a file unusable); 130 stopped by Ctrl-C. "
        "The options of `fleetplan` itself:"
    )
    yield ""
    yield from (option_line(a) for a in parser._actions if a is not sub)
    for name, command in sub.choices.items():
        yield ""
        yield f"### `fleetplan {name}`"
        yield ""
        summary = helps.get(name) or ""
        yield _one_line(f"{summary[:1].upper()}{summary[1:]}. {command.description or ''}")
        for group in command._action_groups:
            actions = group._group_actions
            if not actions:
                continue
            yield ""
            if group.title not in ("options", "positional arguments"):
                yield f"*{group.title}:*"
                yield ""
            yield from (option_line(a) for a in actions)


def _what_it_reads(docstring: str) -> str:
    """A format module's docstring, from its start to the end of the first paragraph that makes
    it 120 characters or more."""
    taken: list[str] = []
    for paragraph in docstring.split("\n\n"):
        taken.append(_one_line(paragraph))
        if len(" ".join(taken)) >= 120:
            break
    return " ".join(taken)


def formats_section() -> Iterator[str]:
    yield "## Formats"
    yield ""
    yield (
        "The formats `fleetplan ingest` and the Upload page read, in the order each file's "
        "content is tried (`FORMATS` in [warehouse/importers/registry.py]"
        "(../warehouse/importers/registry.py)); the first whose detection accepts a file reads "
        "it, never by its name. The name is what each imported file is stored with "
        "(`imported_from`). What each tool's figures mean in fleetplan's terms: "
        "[import.md](import.md). In short, fleetplan reads " + READS + "."
    )
    for format_ in FORMATS:
        module = format_.__name__.removeprefix("fleetplan.warehouse.importers.").replace(".", "/")
        doc = _what_it_reads(format_.__doc__ or "")
        path = f"../warehouse/importers/{module}.py"
        yield ""
        yield f"- `{format_.IMPORTER}` (version {format_.VERSION}, [{module}.py]({path})): {doc}"


def reference_markdown() -> str:
    """docs/reference.md: scenario fields, CLI commands and options, formats, from the code."""
    head = [
        "# Reference",
        "",
        "<!-- Generated by fleetplan/cli/docs.py: do not edit by hand. -->",
        "",
        "Written from the code by [fleetplan/cli/docs.py](../fleetplan/cli/docs.py). After "
        "changing a scenario field, a command's options or an import format, regenerate it:",
        "",
        "```sh",
        "python -m fleetplan.cli.docs > docs/reference.md",
        "```",
        "",
        "`tests/test_docs.py` fails when this page differs from what the code gives, and when a "
        "field, a command, an option or a format is missing from the docs.",
        "",
        "Contents: [Scenario fields](#scenario-fields), [CLI commands and options]"
        "(#cli-commands-and-options), [Formats](#formats).",
        "",
    ]
    body = [*scenario_section(), "", *cli_section(), "", *formats_section()]
    return "\n".join([*head, *body]) + "\n"


def main() -> int:
    print(reference_markdown(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
