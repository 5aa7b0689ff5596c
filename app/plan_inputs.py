"""The Plan page's inputs: model, objective, capacity rule and headroom; traffic classes (with
their traffic shapes); GPUs on offer (rented or bought); sites and region presets; budget and
carbon limits. `scenario_inputs` draws them and returns the scenario they make.

How the widgets start and restart (per group of widgets), and the scenario in the page's link:
`app/plan_state.py`. What the tables hold and how they become a scenario is
fleetplan/services/scenario_forms.py.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fleetplan.app import data
from fleetplan.app.plan_columns import class_columns, gpu_columns, site_columns
from fleetplan.app.plan_state import restart
from fleetplan.core.errors import InputError
from fleetplan.planner.scenario.defaults import (
    DEFAULT_CARBON_PRICE_USD_PER_T,
    DEFAULT_REGION,
    DEFAULT_USD_PER_EUR,
)
from fleetplan.planner.scenario.parts import MAX_USD_PER_EUR, MIN_USD_PER_EUR, CarbonPrice
from fleetplan.planner.scenario.presets import PRESETS
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.services.currency import CURRENCIES, labelled, rate_note, shown
from fleetplan.services.energy_tables import assumed_idle_notes
from fleetplan.services.plain_text import plain
from fleetplan.services.scenario_defaults import (
    describe_region,
    region_preset,
    with_preset,
    with_region_site,
)
from fleetplan.services.scenario_forms import (
    CAPACITY_END_LABELS,
    CAPACITY_ENDS,
    CAPACITY_RULE_LABELS,
    CAPACITY_RULES,
    OBJECTIVE_CHOICES,
    classes_table,
    gpus_table,
    model_choice_label,
    objective_choice,
    page_message,
    scenario_from_forms,
    scenario_settings,
    short_model,
    site_names,
    sites_table,
)
from fleetplan.services.traffic_shapes import datasets, unmeasured_shapes, with_default_shapes
from fleetplan.warehouse.queries import models_by_coverage

OBJECTIVES = {"cost": "Lowest cost", "carbon": "Lowest carbon", "price": "Cost + carbon price"}
ESTIMATES_HELP = (
    "Off: only GPUs this model was measured on are planned. On: every offered GPU it was not "
    "measured on gets an estimated capacity, from a serving model of the engine (each step reads "
    "the weights and the batch's KV cache from memory and computes its tokens) whose "
    "efficiencies are fitted on all the runs the warehouse holds; a GPU with no run borrows "
    "the nearest measured GPU's, moved to its memory bandwidth and its link (the plan's text "
    "and CSV say whose). A measured model of the same shape counts as a measurement. "
    "Estimated pools are marked, carry the error band measured by leaving each model and GPU "
    "out of the fit in turn, and are planned on the band's low end: measure them (fleetplan "
    "collect --find-capacity) before you buy."
)


def scenario_inputs(
    bases: dict[str, Scenario], gens: dict[str, int], points: pd.DataFrame
) -> Scenario:
    """Every input of the page, drawn; the scenario they make (the page stops with the reason
    when they make none). Applies a preset or a region when its button was pressed."""
    for note in st.session_state.get("s_notes", []):
        st.info(plain(note), icon=":material/info:")
    name, model, objective, capacity_rule, headroom, carbon_price, capacity_at, estimates = _top(
        bases["top"], gens["top"], points
    )
    classes, total_rps, preset, apply_preset = _classes(bases["classes"], gens["classes"], points)
    gpus, currency, usd_per_eur = _gpus(bases["gpus"], gens["gpus"])
    left, right = st.columns(2)
    with left:
        sites = _sites(bases["sites"], gens["sites"])
    with right:
        target_site, region, apply_region = _regions(bases["sites"], gens["sites"], sites)
        budget, carbon_cap = _limits(bases["limits"], gens["limits"])
    base = st.session_state.s_base
    settings = scenario_settings(
        objective=objective,
        carbon_price_usd_per_t=carbon_price,
        max_utilization=headroom,
        capacity_rule=capacity_rule,
        capacity_at=capacity_at,
        estimates=estimates,
        budget_usd_per_hour=budget,
        carbon_cap_kg_per_hour=carbon_cap,
    ) | {"currency": currency, "usd_per_eur": usd_per_eur}
    try:
        named = base.model_copy(update={"name": name.strip() or base.name})
        scenario = scenario_from_forms(
            named,
            model=model,
            classes=classes,
            gpus=gpus,
            sites=sites,
            settings=settings,
            total_rps=total_rps or None,
        )
    except InputError as error:
        st.error(f"Check the inputs: {plain(page_message(error))}", icon=":material/edit:")
        st.stop()
    made = scenario
    if (scenario.currency, scenario.usd_per_eur) != (base.currency, base.usd_per_eur):
        # every price shown again in the new currency (or at the new rate): fresh tables
        restart(scenario, [rate_note(scenario) or "Prices are shown in USD."])
    if apply_preset:
        scenario = with_preset(scenario, preset)
        if scenario.name in {f"{p} on {short_model(model)}" for p in PRESETS}:
            # a preset's name (the default's, or one applied before): the one applied now
            scenario = scenario.model_copy(update={"name": f"{preset} on {short_model(model)}"})
    if apply_region:
        st.session_state.s_region_site = target_site  # the selector stays on it
        restart(with_region_site(scenario, target_site, region), made=made)
    shaped, notes = with_default_shapes(scenario, points)
    if apply_preset or shaped != scenario:
        restart(shaped, notes, made=made)
    for warning in unmeasured_shapes(scenario, points):
        st.warning(plain(warning), icon=":material/warning:")
    return scenario


def _top(base: Scenario, gen: int, points: pd.DataFrame):
    # the warehouse's models, and those the scenario gives a config.json of (planned on estimates)
    models = models_by_coverage(points)
    models += [m for m in base.model_configs or {} if m not in models]
    name = _name(base, gen)
    top = st.columns([3, 3, 2, 2])
    model = top[0].selectbox(
        "Model",
        models,
        index=models.index(base.model) if base.model in models else 0,
        format_func=model_choice_label,
        key=f"w_model_{gen}",
        help="Plans use this model's measured load levels (a class may name its own model: "
        "a scenario file's classes[].model).",
    )
    objective = top[1].radio(
        "Objective",
        OBJECTIVE_CHOICES,
        format_func=OBJECTIVES.get,
        index=OBJECTIVE_CHOICES.index(objective_choice(base)),
        key=f"w_objective_{gen}",
        horizontal=True,
    )
    capacity_rule = top[2].radio(
        "Capacity from",
        CAPACITY_RULES,
        format_func=CAPACITY_RULE_LABELS.get,
        index=CAPACITY_RULES.index(base.capacity_rule),
        key=f"w_capacity_rule_{gen}",
        help="Latency model: the highest rate whose P99s each configuration's latency-against-"
        "load curve predicts within the targets. Measured levels: the best achieved throughput "
        "among the measured levels that meet the targets (the rule before the model).",
    )
    capacity_at = top[2].radio(
        "Plan on capacity's",
        CAPACITY_ENDS,
        format_func=CAPACITY_END_LABELS.get,
        index=CAPACITY_ENDS.index(base.capacity_at),
        key=f"w_capacity_at_{gen}",
        horizontal=True,
        help="Each capacity is an interval (what the data proves to what it allows). Low end "
        "(the default): plan on what the data proves; Middle: the load model's own estimate; "
        "High end: the most it allows, with the risk that servers carry less.",
    )
    headroom = top[3].slider(
        "Utilisation ceiling",
        min(0.3, float(base.max_utilization)),  # a loaded file's lower ceiling stays shown
        1.0,
        float(base.max_utilization),
        0.05,
        key=f"w_headroom_{gen}",
        help="Servers are planned to carry at most this share of their capacity: headroom for "
        "bursts and for the model's error.",
    )
    estimates = top[3].toggle(
        "Use estimates",
        value=base.estimates == "fill",
        key=f"w_estimates_{gen}",
        help=ESTIMATES_HELP,
    )
    carbon_price = _carbon_price(base, gen) if objective == "price" else None
    return (
        name,
        model,
        objective,
        capacity_rule,
        headroom,
        carbon_price,
        capacity_at,
        "fill" if estimates else "off",
    )


def _carbon_price(base: Scenario, gen: int) -> float:
    price = shown(
        base.objective.carbon_price_usd_per_t
        if isinstance(base.objective, CarbonPrice)
        else DEFAULT_CARBON_PRICE_USD_PER_T,
        base,
    )
    return st.number_input(
        labelled("Carbon price ($ per tCO2e)", base),
        0.0,
        max(10_000.0, price),
        price,
        step=10.0,
        key=f"w_carbon_price_{gen}",
    )


def _name(base: Scenario, gen: int) -> str:
    return st.text_input(
        "Scenario name",
        base.name,
        max_chars=200,
        key=f"w_name_{gen}",
        help='The name the plan and its files carry. A name ending in "on <model>" follows '
        "the model; a preset applied renames a preset's name.",
    )


def _classes(base: Scenario, gen: int, points: pd.DataFrame):
    st.markdown(
        "**Traffic classes** — peak request rate, P99 targets (empty = no target) and the "
        "traffic each is planned on"
    )
    table = classes_table(base)
    options = sorted(set(datasets(points, base.model)) | set(table["dataset"].dropna()))
    classes = st.data_editor(
        table,
        num_rows="dynamic",
        hide_index=True,
        key=f"w_classes_{gen}",
        column_config=class_columns(options),
    )
    # Below the table: the editor's toolbar floats above its top edge and would cover them.
    row = st.columns([2, 2, 1], vertical_alignment="bottom")
    total_rps = row[0].number_input(
        "Total rate for the shares (req/s)",
        0.0,
        1e6,
        0.0,
        key=f"w_total_rps_{gen}",
        help="Only used by classes given as a share of the total.",
    )
    preset = row[1].selectbox("Workload preset", list(PRESETS), key=f"w_preset_{gen}")
    apply_preset = row[2].button("Use preset", key=f"w_apply_preset_{gen}")
    return classes, total_rps, preset, apply_preset


def _gpus(base: Scenario, gen: int) -> tuple[pd.DataFrame, str, float | None]:
    head = st.columns([5, 1, 1], vertical_alignment="bottom")
    head[0].markdown(
        "**GPUs on offer** — rented (price per GPU-hour), bought (price and lifetime) or owned; "
        "blank power = the catalog has none"
    )
    currency = head[1].selectbox(
        "Prices in",
        CURRENCIES,
        index=CURRENCIES.index(base.currency),
        key=f"w_currency_{gen}",
        help="The currency the tables, the budget and the headline figures are in. Plans, "
        "tables of results and files stay USD (their columns say so).",
    )
    usd_per_eur = None
    if currency == "EUR":
        usd_per_eur = head[2].number_input(
            "USD per EUR",
            MIN_USD_PER_EUR,
            MAX_USD_PER_EUR,
            base.usd_per_eur or DEFAULT_USD_PER_EUR,
            step=0.01,
            format="%.4f",
            key=f"w_usd_per_eur_{gen}",
            help="The exchange rate prices are converted at (starts at the ECB reference rate, "
            "2024 annual average, 1.0824, at which the bundled EU electricity prices were "
            "converted); shown in the plan's sources. A corrected rate keeps the euros on the "
            "page; the dollars they stand for move.",
        )
    gpus = st.data_editor(
        gpus_table(base, data.facts()),
        num_rows="dynamic",
        hide_index=True,
        key=f"w_gpus_{gen}",
        column_config=gpu_columns(base),
    )
    for note in assumed_idle_notes(gpus, data.catalog()):
        st.caption(plain(note))
    return gpus, currency, usd_per_eur


def _sites(base: Scenario, gen: int) -> pd.DataFrame:
    st.markdown("**Sites** — electricity price, grid carbon intensity, PUE")
    return st.data_editor(
        sites_table(base),
        num_rows="dynamic",
        hide_index=True,
        key=f"w_sites_{gen}",
        column_config=site_columns(base),
    )


def _regions(base: Scenario, gen: int, sites: pd.DataFrame):
    st.markdown("**Region presets** — fill a site from public figures")
    regions = data.regions()
    labels = dict(zip(regions["region_id"], regions["name"], strict=True))
    row = st.columns([2, 3, 1], vertical_alignment="bottom")
    names = site_names(sites, base)
    kept = st.session_state.get("s_region_site")  # the site a preset was last applied to
    target_site = row[0].selectbox(
        "Site",
        names,
        index=names.index(kept) if kept in names else 0,
        key=f"w_region_site_{gen}",
    )
    region_ids = list(labels)
    chosen = st.session_state.get("s_region", DEFAULT_REGION)  # kept across restarts and pages
    region_id = row[1].selectbox(
        "Region",
        region_ids,
        index=region_ids.index(chosen) if chosen in region_ids else 0,
        format_func=lambda r: f"{labels[r]} ({r})",
        key=f"w_region_{gen}",
    )
    st.session_state.s_region = region_id
    apply_region = row[2].button("Apply", key=f"w_apply_region_{gen}")
    region = region_preset(regions, region_id)
    for line in describe_region(region, base):
        st.caption(line)
    return target_site, region, apply_region


def _limits(base: Scenario, gen: int) -> tuple[float, float]:
    limits = st.columns(2)
    budget = limits[0].number_input(
        labelled("Budget ($/h, 0 = none)", base),
        0.0,
        value=shown(base.budget_usd_per_hour, base) or 0.0,
        key=f"w_budget_{gen}",
    )
    carbon_cap = limits[1].number_input(
        "Carbon cap (kgCO2e/h, 0 = none)",
        0.0,
        value=base.carbon_cap_kg_per_hour or 0.0,
        key=f"w_carbon_cap_{gen}",
    )
    return budget, carbon_cap
