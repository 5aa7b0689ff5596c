"""Planning against the warehouse: the glue between `warehouse` (data) and `planner` (logic).

`fleetplan plan` and the dashboard's Plan page load scenarios and plan through these functions,
so that both accept the same files, say the same about a bad one, and give the same plan."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pydantic import ValidationError

from fleetplan.core.contract import validation_message
from fleetplan.core.errors import FileTooLargeError, InputError
from fleetplan.core.files import read_at_most
from fleetplan.core.strict import refuse_duplicate_keys
from fleetplan.planner.capacity.rules import configurations, points_for_model
from fleetplan.planner.peak.economics import GpuFacts
from fleetplan.planner.peak.results import Plan
from fleetplan.planner.plan import plan
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.services.envelope import config_from_bytes, with_envelope_flags
from fleetplan.services.fill import scenario_architectures, with_estimates
from fleetplan.services.scenario_forms import changed_fields, follow_model, through_the_page
from fleetplan.services.traffic_shapes import with_default_shapes
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points, gpu_catalog, models_by_coverage

# A scenario is small JSON (at most 500 classes and 100 GPU offers): a larger upload is a mistake.
MAX_SCENARIO_BYTES = 1_000_000

_FACT_COLUMNS = {
    "rated_w": ("rated_power_w", "rated_power_source"),
    "idle_w": ("idle_power_w", "idle_power_source"),
    "embodied_kgco2e": ("embodied_kgco2e", "embodied_source"),
    "host_embodied_kgco2e_per_gpu": ("host_embodied_kgco2e_per_gpu", "host_embodied_source"),
    "lifetime_years": ("lifetime_years_default", "lifetime_source"),
}


def facts_from_catalog(catalog: pd.DataFrame) -> dict[str, GpuFacts]:
    """The planner's reference figures per GPU model from the warehouse's GPU catalog; a figure
    the catalog has no source for stays unknown (None), never zero."""
    facts = {}
    for row in catalog.to_dict("records"):
        values, sources = {}, {}
        for name, (column, source) in _FACT_COLUMNS.items():
            value = row.get(column)
            values[name] = None if value is None or pd.isna(value) else float(value)
            if values[name] is not None:
                sources[name] = str(row.get(source) or "")
        facts[row["gpu_id"]] = GpuFacts(gpu_model=row["gpu_id"], sources=sources, **values)
    return facts


def load_scenario(
    source: Path | bytes, *, name: str | None = None, max_bytes: int | None = None
) -> Scenario:
    """A scenario from a JSON file (a path) or its content (bytes, with the file's `name` for
    messages). InputError names the file and the field; `max_bytes` refuses larger content
    before parsing it (an upload). OSError from reading a path is the caller's to report."""
    if isinstance(source, Path):
        name = name or str(source)
        # Read no further than the limit, and only a regular file (never /dev/zero, a FIFO).
        source = read_at_most(source, limit=max_bytes or MAX_SCENARIO_BYTES)
    if max_bytes is not None and len(source) > max_bytes:
        raise FileTooLargeError(
            f"a scenario is small JSON; this file is over {max_bytes / 1e6:g} MB", file=name
        )
    refuse_duplicate_keys(source, file=name)  # the last of two would win silently
    try:
        return Scenario.model_validate_json(source)
    except ValidationError as error:
        raise validation_message(error, file=name) from None


def with_model_config(scenario: Scenario, model: str, source: bytes, *, name: str) -> Scenario:
    """`scenario` planning `model`, a model nobody measured, from its config.json (`source`,
    the content of the file `name`): the config added to the scenario's model_configs (over an
    earlier one of the same model), the model chosen (a name "... on <model>" following it) and
    estimates on. An InputError names the file and what it lacks, as `plan --model-config`
    would."""
    model = model.strip()
    if not model:
        raise InputError(
            "name the model the config.json is of (its id, as its runs would name it: "
            "Qwen/Qwen3-32B)",
            field="model",
        )
    config = config_from_bytes(source, where=name)
    given = scenario.model_configs or {}
    configs = {m: c for m, c in given.items() if m.lower() != model.lower()}
    fields = scenario.model_dump() | {
        "name": follow_model(scenario.name, old_model=scenario.model, new_model=model),
        "model": model,
        "model_configs": configs | {model: config},
        "estimates": "fill",
    }
    try:
        changed = Scenario.model_validate(fields)
        scenario_architectures(changed)  # a config fleetplan cannot size: refused, naming the key
    except ValidationError as error:
        raise validation_message(error, file=name) from None
    except InputError as error:
        raise InputError(error.reason, file=name, field=error.field) from None
    return changed


def for_the_page(
    scenario: Scenario, points: pd.DataFrame, facts: dict[str, GpuFacts]
) -> tuple[Scenario, list[str]]:
    """A loaded scenario (a file, a link) as the Plan page holds it, and one sentence for each
    thing the page holds otherwise than the file said: a model without results here, a field
    the page's inputs do not keep, a traffic shape filled in (`with_default_shapes`)."""
    notes = []
    models = models_by_coverage(points)
    try:
        named = sorted(points_for_model(points, scenario.model)["model"].unique())
    except InputError:
        named = []
    configured = {m.lower() for m in scenario.model_configs or {}}
    if named:
        scenario = scenario.model_copy(update={"model": named[0]})
    elif scenario.model.lower() in configured:
        notes.append(
            f"Model {scenario.model!r} has no benchmark results here: planned on estimates from "
            "the config.json the scenario gives (model_configs), with estimates on."
        )
        scenario = scenario.model_copy(update={"estimates": "fill"})
    elif models:
        notes.append(
            f"Model {scenario.model!r} has no benchmark results here: showing {models[0]}, the "
            "best-covered model (upload its runs on the Upload page to plan it)."
        )
        scenario = scenario.model_copy(update={"model": models[0]})
    shown = through_the_page(scenario, facts)
    notes += [f"Not kept by the page: {change}" for change in changed_fields(scenario, shown)]
    shaped, shape_notes = with_default_shapes(shown, points)
    limit = page_limits_note(scenario)
    return shaped, notes + shape_notes + ([limit] if limit else [])


def plan_from_tables(
    scenario: Scenario, points: pd.DataFrame, catalog: pd.DataFrame, **options: object
) -> Plan:
    """A plan from the warehouse's benchmark points and GPU catalog, as already read; a level
    over its server's physical bounds never counts as stable (`planner.curve.envelope_flags`)."""
    points = with_envelope_flags(with_estimates(points, scenario), catalog)
    return plan(scenario, points, facts_from_catalog(catalog), **options)


# What the dashboard gives one plan, whatever the scenario asks (a link or an upload is anyone's):
# its solving (all its solves) stops after PAGE_TIME_LIMIT_S, and more than PAGE_MAX_CHOICES traffic
# classes x GPU configurations is refused. So a plan's work is bounded; the dashboard also runs
# each plan in a process that its session's end or next plan kills (`plan_runner`), one per
# session and a core each at most. `fleetplan plan` gives a scenario its own limits.
PAGE_TIME_LIMIT_S = 10.0  # the default scenario's: a link may ask less, never more
PAGE_MAX_CHOICES = 400
NO_FRONTIER = {"pareto_points": 0}  # `planner.plan`'s options for a plan without its frontier


def page_limits_note(scenario: Scenario) -> str | None:
    """What the page says when it solves for less time than the scenario asks."""
    if scenario.time_limit_s <= PAGE_TIME_LIMIT_S:
        return None
    return (
        f"Solver time limit: the dashboard solves for at most {PAGE_TIME_LIMIT_S:g} s, not the "
        f"{scenario.time_limit_s:g} s the scenario asks (`fleetplan plan` gives it all)."
    )


def plan_on_the_page(
    scenario: Scenario, points: pd.DataFrame, catalog: pd.DataFrame, *, frontier: bool = False
) -> Plan:
    """A plan as the dashboard makes one: within its time limit and size bound (above). The
    cost/carbon frontier (three quarters of a plan's solves on the bundled data) only with
    `frontier`: the page asks for it when its tab is open, or a download needs it."""
    # counted as planned: each class's own model, with the configurations fill estimates add
    # (the scenario's model alone, before fill, let an 80-class fill link run the 60 s wall)
    filled = with_estimates(points, scenario)
    configs: dict[str, int] = {}
    for model in scenario.models():
        try:
            configs[model] = len(configurations(points_for_model(filled, model), scenario))
        except InputError:
            configs[model] = 0  # no results for the model: planning says so
    choices = sum(configs[scenario.model_of(c)] for c in scenario.classes)
    if choices > PAGE_MAX_CHOICES:
        raise InputError(
            f"{len(scenario.classes)} traffic classes on the GPU configurations of their models "
            f"({', '.join(f'{n} for {m}' for m, n in configs.items())}) are {choices} choices, "
            f"over the {PAGE_MAX_CHOICES} the dashboard plans: plan it with `fleetplan plan`, "
            "or offer fewer classes or GPUs"
        )
    note = page_limits_note(scenario)
    if note:
        scenario = scenario.model_copy(update={"time_limit_s": PAGE_TIME_LIMIT_S})
    options = {} if frontier else NO_FRONTIER
    flagged = with_envelope_flags(filled, catalog)
    result = plan(scenario, flagged, facts_from_catalog(catalog), **options)
    return result.model_copy(update={"notes": [*result.notes, note]}) if note else result


def plan_from_warehouse(warehouse: Warehouse, scenario: Scenario, **options: object) -> Plan:
    """A plan from what the warehouse holds now (`fleetplan plan`)."""
    points = benchmark_points(warehouse)
    return plan_from_tables(scenario, points, gpu_catalog(warehouse), **options)


def class_models(scenario: Scenario, known: list[str]) -> dict[str, str]:
    """Each class's model (`Scenario.model_of`) by its full id where the warehouse knows it as
    one model ("deepseek-ai/..." for "..."): what the router and the deployment files name."""
    out = {}
    for traffic in scenario.classes:
        name = scenario.model_of(traffic)
        full = [
            m
            for m in known
            if m.lower() == name.lower() or m.split("/")[-1].lower() == name.lower()
        ]
        out[traffic.name] = full[0] if len(full) == 1 else name
    return out
