"""Readable column headers for the reference tables the Data page shows (the catalog's,
prices' and regions' field names, e.g. `memory_bandwidth_gb_s` -> "Memory bandwidth (GB/s)"):
the name's words, its unit suffix spelt as a unit. The field names stay the data's (CSV, JSON)."""

from __future__ import annotations

from collections.abc import Iterable

# Name endings -> the unit they mean, longest first.
UNITS = (
    ("_usd_per_gpu_hour", "$/GPU-hour"),
    ("_usd_per_kwh", "$/kWh"),
    ("_gco2_per_kwh", "gCO2e/kWh"),
    ("_kgco2e_per_gpu", "kgCO2e per GPU"),
    ("_kgco2e", "kgCO2e"),
    ("_gb_s", "GB/s"),
    ("_gb", "GB"),
    ("_w", "W"),
    ("_usd", "$"),
    ("_years", "years"),
    ("_pct", "%"),
)
WORDS = {"id": "ID", "gpu": "GPU", "pue": "PUE", "tdp": "TDP", "usd": "$"}


def header(name: str) -> str:
    """`memory_bandwidth_gb_s` -> "Memory bandwidth (GB/s)"; `gpu_id` -> "GPU ID"."""
    unit = ""
    for suffix, spelt in UNITS:
        if name.endswith(suffix) and name != suffix.lstrip("_"):
            name, unit = name.removesuffix(suffix), f" ({spelt})"
            break
    words = [WORDS.get(word, word) for word in name.split("_") if word]
    text = " ".join(words) or name
    return text[:1].upper() + text[1:] + unit


def headers(columns: Iterable[str]) -> dict[str, str]:
    """Each column's readable header (for `st.dataframe`'s column_config)."""
    return {column: header(str(column)) for column in columns}
