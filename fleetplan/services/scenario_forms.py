"""The Plan page's forms as plain tables, and back to a Scenario. No Streamlit here: tested alone.

Editable tables are what `st.data_editor` shows; `scenario_from_forms` turns them back into a
validated `Scenario`, with errors that name the table, the row and the column, so that the page
and the command line validate with the same model. To show one more scenario field in a table,
add its name to that table's columns here (and a column config on the page).
"""

from __future__ import annotations

import math
import re
from typing import Any, get_args

import pandas as pd
from pydantic import ValidationError

from fleetplan.core.errors import InputError
from fleetplan.planner.peak.economics import GpuFacts
from fleetplan.planner.scenario.parts import CarbonPrice
from fleetplan.planner.scenario.scenario import CapacityAt, CapacityRule, Scenario
from fleetplan.services.currency import usd_per_unit
from fleetplan.services.day_fields import with_base_day_fields

# Every column of the page's tables, with the label the page shows: the page's column configs
# and every message that names a field (`place`, `in_page_words`) read them here, so that a
# message names the column the user sees, never the scenario's field name.
CLASS_LABELS = {
    "name": "Class",
    "rate_rps": "Rate (req/s)",
    "share_pct": "or % of total",
    "ttft_p99_ms": "P99 TTFT (ms)",
    "tpot_p99_ms": "P99 TPOT (ms)",
    "dataset": "Dataset",
    "input_len": "Input tokens",
    "output_len": "Output tokens",
    "attainment": "Attainment",
    "fallback": "Fallback",
}
# Power and price first: at 1440 px Idle W and Rated W show without scrolling the table.
GPU_LABELS = {
    "gpu_model": "GPU",
    "hourly_usd": "$ / GPU-hour",
    "electricity_included": "Power in price",
    "idle_w": "Idle W",
    "rated_w": "Rated W",
    "site": "Site",
    "purchase_usd": "Purchase $ / GPU",
    "lifetime_years": "Lifetime (years)",
    "owned_count": "Owned GPUs",
    "owned_capital": "Owned: capital",
    "owned_use": "Owned: use",
    "max_gpus": "Max GPUs",
    "include_embodied": "Count embodied",
    "embodied_kgco2e": "Embodied kgCO2e",
    "host_embodied_kgco2e": "Host kgCO2e / server",
    "variant": "Variant",
    "availability": "Host availability",
}
SITE_LABELS = {
    "name": "Site",
    "electricity_usd_per_kwh": "$ / kWh",
    "grid_gco2_per_kwh": "gCO2e / kWh",
    "pue": "PUE",
    "grid_basis": "Grid basis",
}
SETTING_LABELS = {
    "name": "Scenario name",
    "model": "Model",
    "objective": "Objective",
    "carbon_price_usd_per_t": "Carbon price",
    "max_utilization": "Utilisation ceiling",
    "capacity_rule": "Capacity from",
    "capacity_at": "Plan on capacity's",
    "budget_usd_per_hour": "Budget",
    "carbon_cap_kg_per_hour": "Carbon cap",
    "time_limit_s": "Solver time limit (scenario file only)",
}
TABLES = {
    "classes": ("Traffic classes", CLASS_LABELS),
    "gpus": ("GPUs on offer", GPU_LABELS),
    "sites": ("Sites", SITE_LABELS),
}
CLASS_COLUMNS = tuple(CLASS_LABELS)
GPU_COLUMNS = tuple(GPU_LABELS)
SITE_COLUMNS = tuple(SITE_LABELS)
# The objective as the page offers it: a carbon price is "price" with its own number.
OBJECTIVE_CHOICES = ("cost", "carbon", "price")
# The scenario's `capacity_rule`, as the page offers it.
CAPACITY_RULES: tuple[str, ...] = get_args(CapacityRule)
CAPACITY_RULE_LABELS = {"model": "Latency model", "measured": "Measured levels"}
# The scenario's `capacity_at`: which end of each capacity interval the plan rests on.
CAPACITY_ENDS: tuple[str, ...] = get_args(CapacityAt)
CAPACITY_END_LABELS = {"low": "Low end", "mid": "Middle", "high": "High end"}


def cell_value(value: Any) -> Any:
    """A cell's value, or None for a missing one: None, NaN, pd.NA, NaT or a blank string (what
    `st.data_editor` and a DataFrame row give for an empty cell)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, str) and not value.strip():
        return None
    return value


def classes_table(scenario: Scenario) -> pd.DataFrame:
    """Traffic classes; `share_pct` (of a total rate) is an alternative way to give a rate."""
    rows = [{c: getattr(k, c, None) for c in CLASS_COLUMNS} for k in scenario.classes]
    return pd.DataFrame(rows, columns=list(CLASS_COLUMNS)).astype(
        {
            "rate_rps": float,
            "share_pct": float,
            "ttft_p99_ms": float,
            "tpot_p99_ms": float,
            "dataset": object,
            "input_len": "Int64",
            "output_len": "Int64",
            "attainment": float,
            "fallback": bool,
        }
    )


def _rates_from_shares(classes: list[dict[str, Any]], total_rps: float | None) -> list[dict]:
    """A class given as a share of the total rate gets its rate; the share is not kept."""
    out = []
    for i, row in enumerate(classes):
        share = row.pop("share_pct", None)
        if row.get("rate_rps") is None and share is not None:
            if not total_rps:
                where = place(f"classes.{i}.share_pct")
                raise InputError("a share needs the total rate below the table", field=where)
            row["rate_rps"] = total_rps * share / 100
        out.append(row)
    return out


_FACTS_SHOWN = ("idle_w", "rated_w", "embodied_kgco2e", "lifetime_years")
_GPU_TYPES = {
    "hourly_usd": float,
    "purchase_usd": float,
    "lifetime_years": float,
    "idle_w": float,
    "rated_w": float,
    "embodied_kgco2e": float,
    "host_embodied_kgco2e": float,
    "max_gpus": "Int64",
    "owned_count": "Int64",
    "owned_capital": object,
    "owned_use": object,
    "availability": float,
}
_INTEGERS = ("max_gpus", "owned_count", "input_len", "output_len")
_OWNED_ONLY = ("owned_capital", "owned_use")  # blank on a row that owns nothing


# The tables' money columns: shown and entered in the scenario's currency (services.currency)
GPU_MONEY = ("hourly_usd", "purchase_usd")
SITE_MONEY = ("electricity_usd_per_kwh",)


def _in_currency(row: dict[str, Any], columns: tuple[str, ...], factor: float) -> dict[str, Any]:
    return {k: (v * factor if k in columns and v is not None else v) for k, v in row.items()}


def gpus_table(scenario: Scenario, facts: dict[str, GpuFacts] | None = None) -> pd.DataFrame:
    """GPU offers, prices in the scenario's currency; power, embodied and lifetime figures the
    scenario leaves open show the catalog's."""
    rows = []
    factor = 1 / usd_per_unit(scenario)
    for offer in scenario.gpus:
        row = _in_currency({c: getattr(offer, c) for c in GPU_COLUMNS}, GPU_MONEY, factor)
        known = (facts or {}).get(offer.gpu_model)
        for column in _FACTS_SHOWN:
            if row[column] is None and known is not None:
                row[column] = getattr(known, column)
        if offer.owned_count is None:
            row |= dict.fromkeys(_OWNED_ONLY)
        rows.append(row)
    return pd.DataFrame(rows, columns=list(GPU_COLUMNS)).astype(_GPU_TYPES)


def sites_table(scenario: Scenario) -> pd.DataFrame:
    """Sites, electricity prices in the scenario's currency."""
    factor = 1 / usd_per_unit(scenario)
    rows = [
        _in_currency({c: getattr(s, c) for c in SITE_COLUMNS}, SITE_MONEY, factor)
        for s in scenario.sites
    ]
    return pd.DataFrame(rows, columns=list(SITE_COLUMNS))


def _labelled_records(table: pd.DataFrame, columns: tuple[str, ...]) -> list[tuple[Any, dict]]:
    """Each row that says something, with its index label (`day_fields`)."""
    records = []
    for label, row in zip(table.index, table.to_dict("records"), strict=True):
        cleaned = {c: cell_value(row.get(c)) for c in columns}
        if all(v is None for v in cleaned.values()):
            continue  # an empty row the editor added
        records.append(
            (
                label,
                {k: int(v) if k in _INTEGERS else v for k, v in cleaned.items() if v is not None},
            )
        )
    return records


def scenario_from_forms(
    base: Scenario,
    *,
    model: str,
    classes: pd.DataFrame,
    gpus: pd.DataFrame,
    sites: pd.DataFrame,
    settings: dict[str, Any],
    total_rps: float | None = None,
) -> Scenario:
    """The scenario the page's inputs describe; InputError names the table, row and column as
    the page shows them."""
    raw = base.model_dump(mode="json")
    # the tables and the money inputs showed `base`'s currency: back to USD at its rate, or at
    # the rate entered now where it stays EUR (a corrected rate keeps the euros typed)
    factor = usd_per_unit(base)
    if base.currency == "EUR" and settings.get("currency", base.currency) == "EUR":
        factor = settings.get("usd_per_eur") or factor
    gpu_rows = [
        (label, _in_currency(r, GPU_MONEY, factor))
        for label, r in _labelled_records(gpus, GPU_COLUMNS)
    ]
    site_rows = [
        (label, _in_currency(r, SITE_MONEY, factor))
        for label, r in _labelled_records(sites, SITE_COLUMNS)
    ]
    settings = _settings_in_usd(settings, factor)
    labelled = _labelled_records(classes, CLASS_COLUMNS)
    shared = _rates_from_shares([record for _, record in labelled], total_rps)
    raw |= {
        "name": follow_model(base.name, old_model=base.model, new_model=model),
        "model": model,
        # a day scenario's fields of each row (its hours, commitment, hourly grid): day_fields
        "classes": with_base_day_fields(
            [(label, r) for (label, _), r in zip(labelled, shared, strict=True)],
            base.classes,
            "name",
        ),
        "gpus": with_base_day_fields(gpu_rows, base.gpus, "gpu_model"),
        "sites": with_base_day_fields(site_rows, base.sites, "name"),
        **settings,
    }
    try:
        return Scenario.model_validate(raw)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        path = ".".join(str(part) for part in first["loc"])
        message = in_page_words(first["msg"].removeprefix("Value error, "))
        raise InputError(message, field=place(path) if path else "scenario") from None


def _settings_in_usd(settings: dict[str, Any], factor: float) -> dict[str, Any]:
    """The page's money settings (a budget, a carbon price), given in the currency the page
    showed, in USD."""
    out = dict(settings)
    if out.get("budget_usd_per_hour") is not None:
        out["budget_usd_per_hour"] = out["budget_usd_per_hour"] * factor
    objective = out.get("objective")
    if isinstance(objective, dict) and objective.get("carbon_price_usd_per_t") is not None:
        out["objective"] = {"carbon_price_usd_per_t": objective["carbon_price_usd_per_t"] * factor}
    return out


def place(field: str) -> str:
    """Where a scenario field is on the page: `gpus.h100-pcie.idle_w` or `gpus.0.idle_w` ->
    "GPUs on offer, h100-pcie, Idle W" / "GPUs on offer, row 1, Idle W"; a setting -> its
    label. A field the page does not show is returned as it is."""
    parts = field.split(".")
    if parts[0] in TABLES and len(parts) >= 2:
        title, labels = TABLES[parts[0]]
        row = f"row {int(parts[1]) + 1}" if parts[1].isdigit() else parts[1]
        column = [labels.get(parts[2], parts[2])] if len(parts) > 2 else []
        return ", ".join([title, row, *column])
    if parts[0] == "objective" and len(parts) > 1:
        return SETTING_LABELS.get(parts[1], field)
    return SETTING_LABELS.get(parts[0], field)


# Field names a message may quote: those with an underscore (plain words such as "name" or
# "site" read as English). Longest first, so that `idle_w` never eats part of a longer name.
_QUOTED = sorted(
    {n for t in (CLASS_LABELS, GPU_LABELS, SITE_LABELS, SETTING_LABELS) for n in t if "_" in n}
    | {"dataset"},
    key=len,
    reverse=True,
)
_ALL_LABELS = CLASS_LABELS | SITE_LABELS | SETTING_LABELS | GPU_LABELS
_NAME = re.compile(r"`?\b(" + "|".join(map(re.escape, _QUOTED)) + r")\b`?")


def in_page_words(message: str) -> str:
    """A message with the scenario's field names replaced by the labels the page shows."""
    return _NAME.sub(lambda m: _ALL_LABELS[m.group(1)], message)


# What the user can do about a field, said in the page's words, where the message alone does
# not say it (the planner speaks to scenario files as well as to the page).
_HINTS = {
    ("gpus", "idle_w"): "or tick Power in price",
    ("gpus", "rated_w"): "or tick Power in price",
}


def page_message(error: InputError) -> str:
    """An error from the planner or the forms, for the page: where (table, row, column as
    shown) and what, without the scenario's internal field names; a hint where one helps."""
    reason = in_page_words(error.reason)
    if not error.field:
        return reason
    parts = error.field.split(".")
    hint = _HINTS.get((parts[0], parts[-1])) if len(parts) == 3 else None
    where = place(".".join(parts[:2])) if hint else place(error.field)
    return f"{where}: {reason}" + (f" ({hint})" if hint else "")


def objective_choice(scenario: Scenario) -> str:
    """Which of `OBJECTIVE_CHOICES` the scenario's objective is."""
    return "price" if isinstance(scenario.objective, CarbonPrice) else str(scenario.objective)


def scenario_settings(
    *,
    objective: str,
    carbon_price_usd_per_t: float | None,
    max_utilization: float,
    budget_usd_per_hour: float | None,
    carbon_cap_kg_per_hour: float | None,
    capacity_rule: str | None = None,
    capacity_at: str | None = None,
    estimates: str | None = None,
) -> dict[str, Any]:
    """The page's single inputs as scenario fields (`scenario_from_forms`' `settings`); a budget
    or carbon cap of 0 means none; no capacity rule (or end) keeps the scenario's."""
    rule = {"capacity_rule": capacity_rule} if capacity_rule is not None else {}
    if capacity_at is not None:
        rule["capacity_at"] = capacity_at
    if estimates is not None:
        rule["estimates"] = estimates
    return rule | {
        "objective": (
            {"carbon_price_usd_per_t": carbon_price_usd_per_t}
            if objective == "price"
            else objective
        ),
        "max_utilization": max_utilization,
        "budget_usd_per_hour": budget_usd_per_hour or None,
        "carbon_cap_kg_per_hour": carbon_cap_kg_per_hour or None,
    }


def power_cleared(scenario: Scenario, before: Scenario) -> tuple[Scenario, list[str]]:
    """The page's rule for a purchase price or owned GPUs entered in a row that had neither:
    Power in price is cleared (a GPU bought or owned pays its own electricity; ticked, the rent's
    default, electricity would cost nothing). `before`: the scenario the table started from (a
    loaded file's rows are as the file says). The scenario, and a sentence per offer cleared."""
    earlier = {g.offer_name: g for g in before.gpus}
    gpus, notes = [], []
    for offer in scenario.gpus:
        was = earlier.get(offer.offer_name)
        bought = offer.purchase_usd is not None or offer.owned_count is not None
        was_bought = was is not None and (
            was.purchase_usd is not None or was.owned_count is not None
        )
        if bought and not was_bought and offer.electricity_included:
            offer = offer.model_copy(update={"electricity_included": False})
            notes.append(
                f"GPUs on offer, {offer.offer_name}: Power in price cleared: a GPU bought or "
                "owned pays its own electricity (at its site's $ / kWh); tick it again if "
                "someone else pays it."
            )
        gpus.append(offer)
    if not notes:
        return scenario, []
    return scenario.model_copy(update={"gpus": gpus}), notes


def site_names(sites: pd.DataFrame, scenario: Scenario) -> list[str]:
    """The sites named in the (edited) sites table, or the scenario's when it names none."""
    named = [s for s in sites["name"].dropna().tolist() if s]
    return named or [s.name for s in scenario.sites]


def through_the_page(scenario: Scenario, facts: dict[str, GpuFacts] | None = None) -> Scenario:
    """The scenario as the page's tables and inputs hold it (what a loaded file becomes)."""
    return scenario_from_forms(
        scenario,
        model=scenario.model,
        classes=classes_table(scenario),
        gpus=gpus_table(scenario, facts),
        sites=sites_table(scenario),
        settings={},
    )


def changed_fields(loaded: Scenario, shown: Scenario) -> list[str]:
    """Each field the loaded scenario gives that the page shows otherwise (or not at all), in
    the page's words: the page never drops a loaded field without saying so."""
    return [
        f"{place(path)}: {before!r} in the file, {'empty' if after is None else repr(after)} here"
        for path, before, after in _differences(
            loaded.model_dump(mode="json"), shown.model_dump(mode="json"), ""
        )
        if before is not None
    ]


def _differences(before: Any, after: Any, path: str):
    if isinstance(before, dict) and isinstance(after, dict):
        for key, value in before.items():
            yield from _differences(value, after.get(key), f"{path}.{key}".lstrip("."))
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for i, (one, other) in enumerate(zip(before, after, strict=True)):
            yield from _differences(one, other, f"{path}.{i}")
    elif before != after:
        yield path, before, after


def short_model(model: str) -> str:
    """A model's name without its organisation, as default scenario names use it."""
    return model.split("/")[-1]


def model_choice_label(model: str) -> str:
    """A model as the page's Model box shows it: its name first, its organisation after, so
    that a narrow box cut at its end still tells "...Qwen-14B" from "...Qwen-7B"."""
    if "/" not in model:
        return model
    organisation, name = model.rsplit("/", 1)
    return f"{name} ({organisation})"


def follow_model(name: str, *, old_model: str, new_model: str) -> str:
    """A scenario's name after its model changed: a name ending in " on <old model>" (the
    default names, "chatbot + batch eval on Qwen-14B") ends in the new model instead, so that
    the plan and its exports do not carry the previous model's name; any other name is the
    user's and stays."""
    old = f" on {short_model(old_model)}"
    if old_model != new_model and name.endswith(old):
        return name.removesuffix(old) + f" on {short_model(new_model)}"
    return name
