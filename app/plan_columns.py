"""The Plan page's column configurations: each table's columns with the labels the page shows
(`fleetplan/services/scenario_forms.py` holds the labels), their bounds, formats and help."""

from __future__ import annotations

from typing import get_args

import streamlit as st

from fleetplan.planner.scenario.parts import (
    MAX_ATTAINMENT,
    MIN_AVAILABILITY,
    GridBasis,
    OwnedCapital,
    OwnedUse,
)
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.services.currency import labelled
from fleetplan.services.scenario_forms import CLASS_LABELS, GPU_LABELS, SITE_LABELS


def class_columns(options: list[str]) -> dict:
    number = st.column_config.NumberColumn
    labels = CLASS_LABELS
    return {
        "name": st.column_config.TextColumn(labels["name"], required=True),
        "rate_rps": number(labels["rate_rps"], min_value=0.0, format="%.2f"),
        "share_pct": number(
            labels["share_pct"],
            min_value=0.0,
            max_value=100.0,
            format="%.0f%%",
            help="Leave the rate empty and give a share of the total rate below.",
        ),
        "ttft_p99_ms": number(labels["ttft_p99_ms"], min_value=0.0),
        "tpot_p99_ms": number(labels["tpot_p99_ms"], min_value=0.0),
        "dataset": st.column_config.SelectboxColumn(
            labels["dataset"],
            options=options,
            help="The benchmark data this traffic is planned on: the datasets the model was "
            "measured with. Or leave it empty and give Input and Output tokens.",
        ),
        "input_len": number(labels["input_len"], min_value=1, step=1, format="%d"),
        "output_len": number(labels["output_len"], min_value=1, step=1, format="%d"),
        "attainment": number(
            labels["attainment"],
            min_value=0.0,
            max_value=MAX_ATTAINMENT,
            format="%.6g",
            help="The probability that the class is served at its targets at a random moment "
            "(e.g. 0.999) when hosts come and go; blank: pools sized to their load only.",
        ),
        "fallback": st.column_config.CheckboxColumn(
            labels["fallback"],
            help="On: the class's pools cover for each other (the router sends a pool's excess "
            "to its other pools), so they are sized together.",
        ),
    }


# Pixel widths that show every header whole; at 1440 px the columns up to Lifetime show without
# scrolling (price, power, site and purchase first: what a plan's cost and carbon rest on).
_GPU_WIDTHS = {
    "gpu_model": 85,
    "hourly_usd": 118,
    "electricity_included": 128,
    "idle_w": 82,
    "rated_w": 92,
    "site": 95,
    "purchase_usd": 145,
    "lifetime_years": 135,
    "max_gpus": 98,
    "owned_count": 110,
    "owned_capital": 125,
    "owned_use": 110,
    "include_embodied": 140,
    "embodied_kgco2e": 155,
    "variant": 120,
}


def gpu_columns(scenario: Scenario) -> dict:
    """The GPU table's columns, prices labelled in the scenario's currency."""
    number = st.column_config.NumberColumn
    labels = {k: labelled(v, scenario) for k, v in GPU_LABELS.items()}
    power = "Watts per GPU; blank = the catalog has no figure (needed when Power in price is off)."
    columns = {
        "gpu_model": st.column_config.TextColumn(labels["gpu_model"], required=True),
        "hourly_usd": number(labels["hourly_usd"], min_value=0.0, format="%.2f"),
        "electricity_included": st.column_config.CheckboxColumn(labels["electricity_included"]),
        "idle_w": number(labels["idle_w"], min_value=0.0, help=power),
        "rated_w": number(labels["rated_w"], min_value=0.0, help=power),
        "site": st.column_config.TextColumn(labels["site"], required=True),
        "purchase_usd": number(
            labels["purchase_usd"],
            min_value=0.0,
            format="%.0f",
            help="Buying instead of renting: clear $ / GPU-hour and give the price of one GPU "
            "and its Lifetime; the price is spread over the lifetime's hours.",
        ),
        "lifetime_years": number(
            labels["lifetime_years"],
            min_value=0.0,
            format="%.1f",
            help="Years a purchase (and its embodied carbon) is spread over; the catalog's "
            "default is shown.",
        ),
        "owned_count": number(
            labels["owned_count"],
            min_value=1,
            step=1,
            help="GPUs of this offer you already own: the plan keeps every one of them (give "
            "their purchase price to buy more of them at it, and Owned: capital 'amortised' to "
            "count what they cost; 'sunk', the default, counts only their electricity).",
        ),
        "owned_capital": st.column_config.SelectboxColumn(
            labels["owned_capital"],
            options=list(get_args(OwnedCapital)),
            help="sunk: the owned GPUs' purchase is spent, the plan pays their electricity; "
            "amortised: their purchase price over their lifetime counts every hour.",
        ),
        "owned_use": st.column_config.SelectboxColumn(
            labels["owned_use"],
            options=list(get_args(OwnedUse)),
            help="minimum: every owned GPU is kept and more may be bought (at the purchase "
            "price); exact: the owned GPUs and no more.",
        ),
        "max_gpus": number(labels["max_gpus"], min_value=0, step=1),
        "include_embodied": st.column_config.CheckboxColumn(labels["include_embodied"]),
        "embodied_kgco2e": number(labels["embodied_kgco2e"], min_value=0.0),
        "variant": st.column_config.TextColumn(
            labels["variant"],
            help="Plan only this server variant of the GPU (the runs' Variant label, as the "
            "Benchmarks page lists them); blank: every server measured on it is a candidate.",
        ),
        "host_embodied_kgco2e": number(
            labels["host_embodied_kgco2e"],
            min_value=0.0,
            help="The host server's embodied carbon, per server; blank = the catalog's share "
            "per GPU x GPUs per server.",
        ),
        "availability": number(
            labels["availability"],
            min_value=MIN_AVAILABILITY,
            max_value=1.0,
            format="%.4g",
            help="The share of the time one host of this offer is up (1 = always; typical "
            "figures: sample_data/availability.toml). Below 1, pools get spare servers.",
        ),
    }
    for name, column in columns.items():
        column["width"] = _GPU_WIDTHS.get(name, 160)
    return columns


def site_columns(scenario: Scenario) -> dict:
    """The sites table's columns, the electricity price labelled in the scenario's currency."""
    return {
        "name": st.column_config.TextColumn(SITE_LABELS["name"], required=True),
        "electricity_usd_per_kwh": st.column_config.NumberColumn(
            labelled(SITE_LABELS["electricity_usd_per_kwh"], scenario), format="%.4f"
        ),
        "grid_gco2_per_kwh": st.column_config.NumberColumn(
            SITE_LABELS["grid_gco2_per_kwh"], format="%.0f"
        ),
        "pue": st.column_config.NumberColumn(
            SITE_LABELS["pue"], min_value=1.0, max_value=5.0, format="%.2f"
        ),
        "grid_basis": st.column_config.SelectboxColumn(
            SITE_LABELS["grid_basis"],
            options=list(get_args(GridBasis)),
            help="What the grid figure counts: direct (combustion only, e.g. EPA eGRID), "
            "lifecycle (with upstream and construction, e.g. Ember), marginal, or unknown.",
        ),
    }
