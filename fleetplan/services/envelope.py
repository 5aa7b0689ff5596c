"""The physical bounds (`fleetplan.planner.capacity.envelope`) of the warehouse's configurations,
and the levels that claim more than they allow.

Architectures come from the bundled table (`sample_data/models/architectures.toml`) and from any
Hugging Face config.json the user names (`fleetplan capacity --model-config PATH`, which applies
to the model asked about); GPU memory and bandwidth from the GPU catalog (the warehouse's
`gpu_catalog` table). A model or GPU without figures has unknown bounds, said so, never assumed.
"""

from __future__ import annotations

import math
import tomllib
from functools import cache
from pathlib import Path

import pandas as pd

from fleetplan.core.errors import FileTooLargeError, InputError
from fleetplan.core.files import read_at_most
from fleetplan.core.paths import sample_data_dir
from fleetplan.core.stats import finite_number
from fleetplan.core.strict import load_json
from fleetplan.planner.capacity.architecture import (
    Architecture,
    architecture_from_config,
    architectures_from_table,
    find_architecture,
)
from fleetplan.planner.capacity.envelope import Envelope, Hardware, level_flags, server_envelope
from fleetplan.planner.curve.envelope_flags import ENVELOPE_FLAG

TABLE = Path("models") / "architectures.toml"


@cache
def bundled_architectures() -> dict[str, Architecture]:
    """The bundled table, by lower-case model id."""
    path = sample_data_dir() / TABLE
    return architectures_from_table(tomllib.loads(path.read_text(encoding="utf-8")))


def architecture_named(architectures: dict[str, Architecture], model: str) -> Architecture | None:
    """The architecture of `model`, named by its full id or by the name after the '/' (as
    `points_for_model` names a model); None where the table has none."""
    wanted = model.lower()
    for key, arch in architectures.items():
        if key == wanted or key.split("/")[-1] == wanted:
            return arch
    return None


# A config.json is a few kB: a larger file is not one.
MAX_CONFIG_BYTES = 4 << 20


def config_from_file(path: str | Path) -> dict:
    """A Hugging Face config.json as a mapping, read bounded (a config is a few kB) and strictly
    (a key given twice refused, naming it); an InputError names the file."""
    return config_from_bytes(read_at_most(path, limit=MAX_CONFIG_BYTES), where=str(path))


def config_from_bytes(data: bytes, *, where: str) -> dict:
    """A config.json's content (an upload, a file read) as a mapping, as `config_from_file`."""
    if len(data) > MAX_CONFIG_BYTES:
        raise FileTooLargeError(
            f"a model's config.json is a few kB; this file is over {MAX_CONFIG_BYTES >> 20} MB",
            file=where,
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"cannot read the model config: {error}", file=where) from None
    config = load_json(text, file=where)
    if not isinstance(config, dict):
        raise InputError("a model config.json is a JSON object", file=where)
    return config


def architecture_from_file(
    path: str | Path, model: str, *, dtype: str | None = None, config: dict | None = None
) -> Architecture:
    """`model`'s architecture from a Hugging Face config.json, served in `dtype` (the run's;
    the config's `torch_dtype` where None); `config`: the file already read
    (`config_from_file`). An InputError names the file."""
    where = str(path)
    config = config_from_file(path) if config is None else config
    try:
        return architecture_from_config(
            model, config, source=f"config.json given: {where}", kv_dtype=dtype
        )
    except InputError as error:
        raise InputError(error.reason, file=where, field=error.field) from None


def hardware_of(catalog: pd.DataFrame, gpu_model: str) -> Hardware:
    """A GPU model's memory and bandwidth from the catalog table (unknown where absent)."""
    rows = catalog[catalog["gpu_id"] == gpu_model] if "gpu_id" in catalog else catalog.iloc[:0]
    if rows.empty:
        return Hardware(gpu_model, None, None)
    row = rows.iloc[0]
    return Hardware(
        gpu_model,
        finite_number(row.get("memory_gb")),
        finite_number(row.get("memory_bandwidth_gb_s")),
    )


def hardware_table(catalog: pd.DataFrame) -> dict[str, Hardware]:
    """Every catalog GPU's memory and bandwidth, by its id (`hardware_of` for each, once)."""
    ids = catalog["gpu_id"].dropna().unique() if "gpu_id" in catalog else []
    return {str(gpu): hardware_of(catalog, str(gpu)) for gpu in ids}


def row_envelope(
    row: dict,
    catalog: pd.DataFrame,
    architectures: dict[str, Architecture],
    hardware: dict[str, Hardware] | None = None,
) -> tuple[Envelope | None, str]:
    """The bounds of one `benchmark_points` row's server at its tokens and latencies, and what
    they rest on (or why there are none); `hardware`: the catalog's `hardware_table`, where a
    caller bounds many rows."""
    model = str(row.get("model"))
    architecture = find_architecture(architectures, model)
    if architecture is None:
        return None, f"no architecture for {model} (give its config.json)"
    gpu_model = str(row.get("gpu_model"))
    known = hardware.get(gpu_model) if hardware is not None else None
    hardware = known or hardware_of(catalog, gpu_model)
    tp = finite_number(row.get("tensor_parallel_size"))
    bounds = server_envelope(
        architecture,
        hardware,
        gpu_count=int(row.get("gpu_count") or 1),
        tensor_parallel_size=int(tp) if tp else None,
        input_tokens=finite_number(row.get("input_tokens_mean")),
        output_tokens=finite_number(row.get("output_tokens_mean")),
        e2el_mean_ms=finite_number(row.get("e2el_mean_ms")),
        ttft_mean_ms=finite_number(row.get("ttft_mean_ms")),
        tpot_mean_ms=finite_number(row.get("tpot_mean_ms")),
    )
    return bounds, architecture.source


def level_tpot(row: dict) -> float | None:
    """A level's typical TPOT, for the decode floor: its mean, else its median."""
    return finite_number(row.get("tpot_mean_ms")) or finite_number(row.get("tpot_p50_ms"))


def envelope_reasons(
    points: pd.DataFrame,
    catalog: pd.DataFrame,
    architectures: dict[str, Architecture] | None = None,
) -> pd.Series:
    """For each point, what it claims beyond its server's physical bounds (None: nothing, or no
    bounds known), aligned with `points`."""
    architectures = bundled_architectures() if architectures is None else architectures
    reasons = pd.Series(None, index=points.index, dtype=object)
    hardware = hardware_table(catalog)
    for index, row in zip(points.index, points.to_dict("records"), strict=True):
        bounds, _ = row_envelope(row, catalog, architectures, hardware)
        if bounds is None:
            continue
        architecture = find_architecture(architectures, str(row.get("model")))
        flags = level_flags(
            bounds,
            request_throughput_rps=finite_number(row.get("request_throughput_rps")),
            output_throughput_tps=finite_number(row.get("output_throughput_tps")),
            weight_gb=architecture.weight_bytes / 1e9 if architecture else None,
            sustained_rps=finite_number(row.get("sustained_rps")),
            tpot_ms=level_tpot(row),
        )
        if flags:
            reasons[index] = (
                "; ".join(flags) + ": more than the server can physically carry, so this level "
                "probably measured something else (a mislabelled GPU count or model, cached "
                "prompts, a miscounted window)"
            )
    return reasons


def with_envelope_flags(
    points: pd.DataFrame,
    catalog: pd.DataFrame,
    architectures: dict[str, Architecture] | None = None,
) -> pd.DataFrame:
    """`points` with the column the planner reads (`planner.curve.envelope_flags`): for each level,
    what it claims beyond its server's physical bounds, so that such a level never counts as stable
    for capacity; None where nothing (or no bound is known)."""
    if points.empty:
        return points.assign(**{ENVELOPE_FLAG: pd.Series(dtype=object)})
    return points.assign(**{ENVELOPE_FLAG: envelope_reasons(points, catalog, architectures)})


def describe_envelope(bounds: Envelope | None, basis: str) -> str:
    """The bounds in a sentence, for a report."""
    if bounds is None:
        return f"unknown: {basis}"
    if not bounds.fits:
        return "the model's weights do not fit in this server's GPU memory"
    parts = []
    if bounds.sequences is not None:
        parts.append(f"{bounds.sequences:,.0f} sequences in flight")
    if bounds.rate_rps is not None and math.isfinite(bounds.rate_rps):
        parts.append(f"{bounds.rate_rps:,.1f} req/s (Little's law, {bounds.rate_basis})")
    if bounds.output_tps is not None:
        parts.append(f"{bounds.output_tps:,.0f} output tokens/s (decode bandwidth)")
    if bounds.kv_tokens is not None:
        parts.append(f"{bounds.kv_tokens:,.0f} KV-cache tokens")
    text = "at most " + ", ".join(parts) if parts else "unknown"
    if bounds.unknown:
        text += f" ({bounds.unknown} unknown)"
    return f"{text}; architecture: {basis}"
