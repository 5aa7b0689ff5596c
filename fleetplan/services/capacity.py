"""How many requests per second one server of a configuration carries at given P99 targets:
`fleetplan capacity`, from the warehouse's levels.

A configuration is (model, GPU model, GPUs per server) and a traffic shape (a dataset, or input
and output token lengths), matched as the planner matches them (`planner.capacity.rules`'s
`points_for_model` and `points_for_class`). Its levels give a latency-against-load curve
(`planner.curve.load_curve.fit_curve`); the report says what the curve predicts (the capacity, its
basis, the P99s there), today's measured-level rule beside it for comparison, the saturation rate,
and the levels it rests on, each with the judgement of whether the server kept up. A model, GPU,
GPU count or traffic the warehouse does not hold is an InputError naming what it does hold.
"""

from __future__ import annotations

from typing import Annotated, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from fleetplan.core.errors import InputError
from fleetplan.core.gpus import canonical_gpu
from fleetplan.core.stats import finite_number
from fleetplan.planner.capacity.architecture import Architecture, find_architecture
from fleetplan.planner.capacity.configuration import SERVER, with_servers
from fleetplan.planner.capacity.envelope import level_flags
from fleetplan.planner.capacity.rules import points_for_class, points_for_model
from fleetplan.planner.curve.envelope_flags import flagged
from fleetplan.planner.curve.levels import CurveLevel
from fleetplan.planner.curve.load_curve import Basis, LoadCurve, fit_curve, measured_rule
from fleetplan.planner.estimate.prefix_cache import cached_shares
from fleetplan.planner.estimate.serving import Shape, kv_cache_tokens
from fleetplan.planner.scenario.parts import MAX_TOKENS
from fleetplan.planner.scenario.scenario import CapacityAt, TrafficClass
from fleetplan.services.envelope import (
    architecture_from_file,
    bundled_architectures,
    hardware_of,
    level_tpot,
    row_envelope,
    with_envelope_flags,
)
from fleetplan.services.estimate import EstimateBlock, bundled_specs
from fleetplan.warehouse.db import Warehouse
from fleetplan.warehouse.queries import benchmark_points, configurations, gpu_catalog

Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
KeptUp = Literal["kept up", "fell behind", "cannot tell"]


class _Schema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LatencyTargets(_Schema):
    """The P99 targets (ms) a capacity is computed at; None: no target on that metric. A
    target, never a measurement: measured and predicted P99s have names of their own
    (`CapacityLevel.ttft_p99_ms`, `CapacityReport.predicted_ttft_p99_ms`). The planner's pair of
    them, as a cache key, is `planner.capacity.curve_rule.TargetPair` (docs/definitions.md)."""

    ttft_p99_ms: Positive | None = None
    tpot_p99_ms: Positive | None = None

    @classmethod
    def of(cls, traffic: TrafficClass) -> LatencyTargets:
        """A scenario class's targets (its `ttft_p99_ms` and `tpot_p99_ms` fields)."""
        return cls(ttft_p99_ms=traffic.ttft_p99_ms, tpot_p99_ms=traffic.tpot_p99_ms)


class CapacityQuery(_Schema):
    """One configuration and traffic shape, and the P99 targets (a missing target: none)."""

    model: str = Field(min_length=1)
    gpu: str = Field(min_length=1, description="GPU model, any common label (4090, h100-pcie)")
    gpu_count: Annotated[int, Field(ge=1)]
    dataset: str | None = None
    input_len: Annotated[int, Field(ge=1, le=MAX_TOKENS)] | None = None
    output_len: Annotated[int, Field(ge=1, le=MAX_TOKENS)] | None = None
    targets: LatencyTargets = Field(default_factory=LatencyTargets)
    extrapolate: bool = False  # past the highest stable level, toward saturation
    # The server (engine, version, dtype, TP, variant:
    # `planner.capacity.configuration.server_label`) or its variant label: needed only where the
    # configuration was measured with several servers.
    server: str | None = None
    capacity_at: CapacityAt = "low"  # the end of the capacity's interval `capacity_rps` is
    # A Hugging Face config.json of the model, for its physical bounds where the bundled table
    # (sample_data/models/architectures.toml) has none, or to replace it.
    model_config_path: str | None = None
    # Where no run of the configuration is held: estimate it (fleetplan.services.estimate).
    estimate: bool = False

    @field_validator("input_len", "output_len", mode="before")
    @classmethod
    def _at_most_max_tokens(cls, value: object, info: ValidationInfo) -> object:
        """A length over `MAX_TOKENS` (a scenario class's limit too) refused as an InputError
        naming it, as a command line reports one (the Field's bound stays behind it)."""
        if isinstance(value, int) and not isinstance(value, bool) and value > MAX_TOKENS:
            flag = "--" + str(info.field_name).replace("_", "-")
            raise InputError(
                f"{flag} {value:,} is more than {MAX_TOKENS:,} tokens, the most a prompt or a "
                "response may have",
                field=info.field_name,
            )
        return value


class CapacityLevel(_Schema):
    """A measured level of the configuration, as the curve judged it."""

    offered_rps: float
    sustained_rps: float | None  # the rate the server sustained, the drain left out
    kept_up: KeptUp
    in_curve: bool  # the curve runs through the levels the server kept up with
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    reason: str  # the judgement, in a sentence
    source_file: str
    run_id: str
    level_index: int


class LevelEnvelope(_Schema):
    """A level of the configuration against its server's physical bounds."""

    run_id: str
    level_index: int
    offered_rps: float | None
    sequences: float | None  # sequences in flight the KV cache holds at the level's tokens
    rate_rps: float | None  # the KV-cache bound on requests/s (Little's law)
    rate_basis: str
    output_tps: float | None  # the decode-bandwidth bound on output tokens/s
    flags: list[str]  # what the level claims beyond them; empty: nothing


class ServerEnvelope(_Schema):
    """The server's physical bounds (`planner.capacity.envelope`), per level, and what they rest
    on."""

    architecture: str | None  # where the model's figures come from; None: no architecture
    memory_gb: float | None
    bandwidth_gb_s: float | None
    kv_tokens: float | None
    weights_fit: bool
    levels: list[LevelEnvelope]
    # What the engine allocates (vLLM's rule: memory x 0.9 - weights - a reserve,
    # `planner.estimate.serving.kv_cache_tokens`), beside the bound; None where unknown. Not the
    # bound levels are held to: a real level exceeds it (a run at a higher utilisation).
    engine_kv_tokens: float | None = None
    flagged: int  # levels claiming more than a bound allows
    note: str | None = None  # why there are none, where there are none
    # A hybrid or recurrent model: its recurrent layers in words, and the bytes of the state
    # each sequence keeps in them (beside its attention layers' KV); None for attention only.
    # Without attention layers, kv_tokens counts the sequences whose states the memory holds.
    recurrent: str | None = None
    state_bytes_per_sequence: float | None = None
    # Memory a vision encoder takes beside the weights (not read by text requests), GB.
    vision_encoder_gb: float | None = None
    # A NAS model (`planner.capacity.nas`): its layers in words (which attend, with how many KV
    # heads: a token's KV counts those), None where every layer has the same shape.
    nas_layers: str | None = None


class CapacityReport(_Schema):
    model: str
    gpu_model: str
    gpu_count: int
    server: str = ""  # engine, version, dtype, TP and variant in words; "" where none is said
    traffic: str  # the traffic shape, in words
    targets: LatencyTargets
    extrapolate: bool
    capacity_rps: float  # 0.0 when no rate meets the targets (`reason` says why)
    # The capacity's interval (one value where the curve gives one) and which end capacity_rps is.
    rps_low: float = 0.0
    rps_high: float = 0.0
    capacity_at: CapacityAt = "low"
    basis: Literal[
        "measured", "interpolated", "extrapolated", "none", "identical architecture", "estimated"
    ]
    reason: str | None
    predicted_ttft_p99_ms: float | None  # at capacity_rps
    predicted_tpot_p99_ms: float | None
    measured_rule_rps: float  # today's rule: the best achieved throughput among passing levels
    saturation_rps: float | None  # None: not reached in the data (`load_model.saturation_of`)
    levels: list[CapacityLevel]
    bounds: ServerEnvelope | None = None  # None where no GPU catalog was given
    # An estimate's curve, calibration and error band (basis "estimated"); None for measured.
    estimate: EstimateBlock | None = None
    identical_to: str | None = None  # the measured model of the same shape (its basis)
    # Where levels found their prompts in the engine's prefix cache (`prefix_cache`), in words:
    # their TTFT holds no prefill, which a team's own prompts would; None where none did.
    prompts_cached: str | None = None


def _kept_up(stable: bool | None) -> KeptUp:
    return {True: "kept up", False: "fell behind"}.get(stable, "cannot tell")


def describe_shape(points: pd.DataFrame) -> str:
    """The traffic shape of points of one shape, in words ("sharegpt", "512/128 tokens")."""
    if points.empty:
        return "no traffic"
    row = points.iloc[0]
    parts = [str(row["dataset"])] if pd.notna(row["dataset"]) else []
    if pd.notna(row["input_len"]) or pd.notna(row["output_len"]):
        parts.append(f"{_int(row['input_len'])}/{_int(row['output_len'])} tokens")
    return " ".join(parts) or "unlabelled"


def _int(value: object) -> str:
    return "?" if pd.isna(value) else str(int(value))


def _listed(values: object) -> str:
    return ", ".join(str(v) for v in sorted({str(v) for v in values})) or "none"


def configuration_points(points: pd.DataFrame, query: CapacityQuery) -> pd.DataFrame:
    """The levels of the query's configuration and traffic; an InputError says what there is."""
    mine = points_for_model(points, query.model)
    if mine.empty:
        raise InputError(
            f"no levels of model {query.model!r}; the warehouse has: {_listed(points['model'])}",
            field="model",
        )
    model = str(mine["model"].iloc[0])
    gpu = canonical_gpu(query.gpu)
    if not gpu.known:
        raise InputError(f"GPU {gpu.describe()}", field="gpu")
    configs = _listed(configurations(mine))
    chosen = mine[(mine["gpu_model"] == gpu.gpu_id) & (mine["gpu_count"] == query.gpu_count)]
    if chosen.empty:
        raise InputError(
            f"{model} was not measured on {query.gpu_count}x {gpu.gpu_id}; it was on: {configs}",
            field="gpu" if gpu.gpu_id not in set(mine["gpu_model"]) else "gpu_count",
        )
    chosen = _one_server(with_servers(chosen), query, f"{model} on {query.gpu_count}x {gpu.gpu_id}")
    traffic = TrafficClass(
        name="capacity",
        rate_rps=1.0,
        dataset=query.dataset,
        input_len=query.input_len,
        output_len=query.output_len,
    )
    shapes = chosen.groupby(["dataset", "input_len", "output_len"], dropna=False)
    measured = "; ".join(describe_shape(rows) for _, rows in shapes)
    try:
        matched = points_for_class(chosen, traffic)
    except InputError:
        raise InputError(
            f"{model} on {query.gpu_count}x {gpu.gpu_id} was measured with several kinds of "
            f"traffic ({measured}): say which with a dataset or input/output lengths",
            field="dataset",
        ) from None
    if matched.empty:
        raise InputError(
            f"{model} on {query.gpu_count}x {gpu.gpu_id} was not measured with that traffic; it "
            f"was with: {measured}",
            field="dataset",
        )
    return matched


def _one_server(rows: pd.DataFrame, query: CapacityQuery, where: str) -> pd.DataFrame:
    """The rows of the query's server: the one measured, or the one `query.server` names (its
    words, or its variant label); an InputError lists the servers where that is unclear."""
    servers = sorted({str(s) for s in rows[SERVER]})
    listed = "; ".join(repr(s) if s else "'' (none stated)" for s in servers)
    if query.server is None:
        if len(servers) > 1:
            raise InputError(
                f"{where} was measured with several servers ({listed}): say which with --server "
                "(its words as listed, or its variant label)",
                field="server",
            )
        return rows
    wanted = query.server.strip()
    variant = rows["variant"] if "variant" in rows.columns else pd.Series(None, rows.index)
    chosen = rows[(rows[SERVER] == wanted) | (variant == wanted)]
    if chosen.empty:
        raise InputError(f"{where} has no server {wanted!r}; it has: {listed}", field="server")
    return chosen


def _level(level: CurveLevel) -> CapacityLevel:
    return CapacityLevel(
        offered_rps=level.offered_rps,
        sustained_rps=level.sustained_rps,
        kept_up=_kept_up(level.stable),
        in_curve=bool(level.stable),
        ttft_p99_ms=level.ttft_p99_ms,
        tpot_p99_ms=level.tpot_p99_ms,
        reason=level.load_reason,
        source_file=level.source_file,
        run_id=level.run_id,
        level_index=level.level_index,
    )


def report_of(rows: pd.DataFrame, query: CapacityQuery, curve: LoadCurve) -> CapacityReport:
    """The report of one configuration's levels (`configuration_points`) and their curve."""
    estimate = curve.capacity(
        target_ttft_p99_ms=query.targets.ttft_p99_ms,
        target_tpot_p99_ms=query.targets.tpot_p99_ms,
        extrapolate=query.extrapolate,
    )
    first = with_servers(rows).iloc[0]
    # The interval as the planner plans it (planner.capacity.configuration.Capacity.at_end): "low"
    # what the stable levels prove, "mid" the curve's estimate, "high" the most the data supports.
    interval = curve.interval(
        target_ttft_p99_ms=query.targets.ttft_p99_ms, target_tpot_p99_ms=query.targets.tpot_p99_ms
    )
    low = interval.rps_low if interval.rps_low is not None else estimate.capacity_rps
    high = interval.rps_high if interval.rps_high is not None else max(low, estimate.capacity_rps)
    # "mid" as the planner plans it: the interval's estimate (the queue form up to a saturation
    # the levels measured, such as a closed loop's plateau), or with --extrapolate the curve's
    mid = interval.capacity_rps if not query.extrapolate else estimate.capacity_rps
    mid = min(max(mid, low), high)
    value = {"low": low, "mid": mid, "high": high}[query.capacity_at]
    if query.capacity_at == "mid" and not query.extrapolate and interval.capacity_rps > 0:
        estimate = interval  # what the mid end rests on, and the P99s predicted there
    return CapacityReport(
        model=str(first["model"]),
        gpu_model=str(first["gpu_model"]),
        gpu_count=int(first["gpu_count"]),
        server=str(first[SERVER]),
        rps_low=low,
        rps_high=high,
        capacity_at=query.capacity_at,
        traffic=describe_shape(rows),
        targets=query.targets,
        extrapolate=query.extrapolate,
        capacity_rps=value,
        basis=Basis(estimate.basis).value,
        reason=estimate.reason,
        predicted_ttft_p99_ms=estimate.ttft_p99_ms,
        predicted_tpot_p99_ms=estimate.tpot_p99_ms,
        measured_rule_rps=measured_rule(
            rows[~flagged(rows)],
            target_ttft_p99_ms=query.targets.ttft_p99_ms,
            target_tpot_p99_ms=query.targets.tpot_p99_ms,
        ),
        saturation_rps=curve.saturation_rps,
        levels=[_level(level) for level in curve.levels],
    )


def capacity_report(
    points: pd.DataFrame, query: CapacityQuery, catalog: pd.DataFrame | None = None
) -> CapacityReport:
    """The capacity of the query's configuration, from benchmark points (any models); with the
    GPU catalog, its server's physical bounds and the levels that claim more."""
    rows = configuration_points(points, query)
    architectures = _architectures(query, rows)  # a config.json read once
    if catalog is not None:  # a level over a physical bound is never stable (envelope_flags)
        rows = with_envelope_flags(rows, catalog, architectures)
    report = report_of(rows, query, fit_curve(rows))
    cached = prompts_cached_words(rows, architectures)
    report = report.model_copy(update={"prompts_cached": cached})
    if catalog is None:
        return report
    bounds = server_envelope_of(rows, catalog, architectures)
    return report.model_copy(update={"bounds": bounds})


def prompts_cached_words(rows: pd.DataFrame, architectures: dict[str, Architecture]) -> str | None:
    """How many of the configuration's levels found their prompts in the prefix cache, and
    what that means for their TTFT; None where none did."""
    shares = cached_shares(rows, architectures, bundled_specs())
    cached = int((shares > 0).sum())
    if not cached:
        return None
    partly = int(((shares > 0) & (shares < 1)).sum())
    how = (
        "sent the prompts of the run just before again to a server whose prefix cache held them"
        if not partly
        else "sent prompts the server had served before and still held in its prefix cache"
    )
    return (
        f"{cached} of its {len(rows)} levels {how}: their TTFT holds no prefill (one token "
        "a cached prompt), so a team's own prompts take longer to their first token than "
        "these levels show (docs/estimates.md)"
    )


def _architectures(query: CapacityQuery, rows: pd.DataFrame) -> dict[str, Architecture]:
    """The bundled architectures, and the model's from the config.json the query names."""
    architectures = dict(bundled_architectures())
    if query.model_config_path is not None and not rows.empty:
        model = str(rows["model"].iloc[0])
        dtype = rows["dtype"].dropna().iloc[0] if rows["dtype"].notna().any() else None
        given = architecture_from_file(query.model_config_path, model, dtype=dtype)
        architectures[model.lower()] = given
    return architectures


def server_envelope_of(
    rows: pd.DataFrame, catalog: pd.DataFrame, architectures: dict[str, Architecture]
) -> ServerEnvelope:
    """The physical bounds of the configuration's server at each of its levels
    (`architectures`: the query's, `_architectures`)."""
    model = str(rows["model"].iloc[0])
    architecture = find_architecture(architectures, model)
    hardware = hardware_of(catalog, str(rows["gpu_model"].iloc[0]))
    common = {"memory_gb": hardware.memory_gb, "bandwidth_gb_s": hardware.bandwidth_gb_s}
    if architecture is None:
        return ServerEnvelope(
            architecture=None,
            kv_tokens=None,
            weights_fit=True,
            levels=[],
            flagged=0,
            note=f"no architecture for {model}: give its config.json (--model-config)",
            **common,
        )
    levels, kv_tokens, fits = [], None, True
    for row in rows.to_dict("records"):
        bounds, _ = row_envelope(row, catalog, architectures)
        assert bounds is not None  # the architecture is there
        kv_tokens, fits = bounds.kv_tokens, bounds.fits
        offered = row.get("offered_rate_rps")
        levels.append(
            LevelEnvelope(
                run_id=str(row["run_id"]),
                level_index=int(row["level_index"]),
                offered_rps=None if offered is None or pd.isna(offered) else float(offered),
                sequences=bounds.sequences,
                rate_rps=bounds.rate_rps,
                rate_basis=bounds.rate_basis,
                output_tps=bounds.output_tps,
                flags=level_flags(
                    bounds,
                    request_throughput_rps=finite_number(row.get("request_throughput_rps")),
                    output_throughput_tps=finite_number(row.get("output_throughput_tps")),
                    weight_gb=architecture.weight_bytes / 1e9,
                    sustained_rps=finite_number(row.get("sustained_rps")),
                    tpot_ms=level_tpot(row),
                ),
            )
        )
    note = None
    if hardware.memory_gb is None:
        note = f"the GPU catalog has no memory figure for {hardware.gpu_model}: bounds unknown"
    return ServerEnvelope(
        architecture=architecture.source,
        engine_kv_tokens=engine_kv_tokens(architecture, rows),
        kv_tokens=kv_tokens,
        weights_fit=fits,
        levels=levels,
        flagged=sum(1 for level in levels if level.flags),
        note=note,
        **model_memory(architecture),
        **common,
    )


def model_memory(architecture: Architecture) -> dict:
    """The `ServerEnvelope` fields of what besides the weights and the KV cache takes memory:
    a hybrid's states, a vision encoder; and a NAS model's layers, whose attending ones a
    token's KV counts."""
    found: dict = {}
    if architecture.blocks is not None:
        found["nas_layers"] = architecture.blocks.words
    if architecture.recurrent is not None:
        found["recurrent"] = architecture.recurrent
        found["state_bytes_per_sequence"] = architecture.state_bytes
    if architecture.resident_bytes > 0:
        found["vision_encoder_gb"] = architecture.resident_bytes / 1e9
    return found


def engine_kv_tokens(architecture: Architecture, rows: pd.DataFrame) -> float | None:
    """The KV cache vLLM allocates on the configuration's server at utilisation 0.9."""
    spec = bundled_specs().get(str(rows["gpu_model"].iloc[0]))
    if spec is None:
        return None
    count = int(rows["gpu_count"].iloc[0])
    stated = rows["tensor_parallel_size"].dropna()
    tp = int(stated.iloc[0]) if not stated.empty else count
    replicas = max(count // tp, 1)
    return replicas * kv_cache_tokens(Shape.of(architecture), spec, tp)


def capacity_from_warehouse(warehouse: Warehouse, query: CapacityQuery) -> CapacityReport:
    """`fleetplan capacity`: the same, from what the warehouse holds now, with its catalog."""
    return capacity_report(benchmark_points(warehouse), query, gpu_catalog(warehouse))
