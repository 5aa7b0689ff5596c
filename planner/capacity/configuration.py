"""What a capacity is made of: a configuration (GPU model x GPUs per server x the server: engine,
engine version, dtype, tensor parallelism and a free variant label), the measured level a
capacity rests on, and the capacity of one server of a configuration for one traffic class with
the basis it was found on. Both capacity rules (`measured_capacity`, `curve_capacity`) build these;
`capacity` chooses the rule.

A capacity is an interval, `rps_low` to `rps_high` (per server, after the utilisation ceiling, as
`capacity_rps`), with its `basis` in words. Where a rule finds one value, both ends are that
value; the planner plans on the end the scenario's `capacity_at` names (`at_end`).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace

import pandas as pd

from fleetplan.core.load import JUDGED_FROM
from fleetplan.planner.curve.envelope_flags import ENVELOPE_FLAG
from fleetplan.planner.curve.load_curve import LoadCurve, fit_curve
from fleetplan.planner.scenario.scenario import CapacityAt

# The columns `load_model.fit_curve` reads (its docstring lists them): curves are fitted from
# these alone (`curve_capacity.Curves`), since copying wide rows is much of a fit's time.
CURVE_COLUMNS = (
    "run_id",
    "level_index",
    "source_file",
    *JUDGED_FROM,
    "request_throughput_rps",  # where a closed-loop level sits on the curve
    "complete",
    "failed",
    "sustained_rps",
    "stable",
    "load_basis",
    "load_reason",
    ENVELOPE_FLAG,  # a level over a physical bound is never stable (`envelope_flags`)
)
BEHIND_FRACTION = 0.9  # achieved below this share of the offered rate: the server fell behind
MEASURED_RULE = "measured rule"  # the basis of a capacity found by today's rule
# What a server is beyond its GPUs (columns of `benchmark_points`): runs that differ in any of
# these are different servers, never one curve.
SERVER_COLUMNS = ("engine", "engine_version", "dtype", "tensor_parallel_size", "variant")
SERVER = "server"  # the column `with_servers` adds: the server in words ("" where none is said)
CONFIG_KEYS = ["gpu_model", "gpu_count", SERVER]  # a configuration's columns in the points


@dataclass(frozen=True, slots=True, order=True)
class Configuration:
    gpu_model: str
    gpus_per_server: int
    server: str = ""  # engine, version, dtype, TP and variant in words; "" where none is said

    @property
    def label(self) -> str:
        """The GPUs of the configuration ("1x h100-pcie"); `server` says how they serve."""
        return f"{self.gpus_per_server}x {self.gpu_model}"

    @property
    def name(self) -> str:
        """The GPUs and the server ("1x h100-pcie (vllm 0.8.5, float16, TP 1)")."""
        return f"{self.label} ({self.server})" if self.server else self.label

    @classmethod
    def of(cls, gpu_model: object, gpu_count: object, server: object = "") -> Configuration:
        return cls(str(gpu_model), int(gpu_count), str(server or ""))


def server_label(
    engine: object = None,
    engine_version: object = None,
    dtype: object = None,
    tensor_parallel_size: object = None,
    variant: object = None,
) -> str:
    """A server in words: "vllm 0.8.5, float16, TP 2, prefix-caching"; what is unknown is left
    out, and "" where nothing is said."""

    def known(value: object) -> bool:
        if value is None or value is pd.NA or value is pd.NaT:
            return False
        if isinstance(value, float) and math.isnan(value):
            return False
        return str(value).strip() != ""

    engine_part = " ".join(str(v) for v in (engine, engine_version) if known(v))
    parts = [engine_part] if engine_part else []
    if known(dtype):
        parts.append(str(dtype))
    if known(tensor_parallel_size):
        parts.append(f"TP {int(float(tensor_parallel_size))}")  # type: ignore[arg-type]
    if known(variant):
        parts.append(str(variant))
    return ", ".join(parts)


def with_servers(points: pd.DataFrame) -> pd.DataFrame:
    """`points` with the `server` column (`server_label` of each row's `SERVER_COLUMNS`), added
    where it is missing; a frame that has it is returned as it is."""
    if SERVER in points.columns:
        return points
    columns = [points[c] if c in points.columns else [None] * len(points) for c in SERVER_COLUMNS]
    labels = [server_label(*values) for values in zip(*columns, strict=True)]
    return points.assign(**{SERVER: pd.Series(labels, index=points.index, dtype=object)})


@dataclass(frozen=True, slots=True)
class Level:
    """The measured load level a capacity rests on."""

    run_id: str
    offered_rate_rps: float | None
    max_concurrency: int | None
    request_throughput_rps: float
    ttft_p99_ms: float | None
    tpot_p99_ms: float | None
    input_tokens_mean: float | None
    output_tokens_mean: float | None
    avg_power_w: float | None  # all GPUs of the server together; None when not measured
    source_file: str
    # The level's judgement (`fleetplan.core.load`) where the capacity rests on it (the model
    # rule); None where it does not (the measured rule reads achieved against offered).
    stable: bool | None = None
    load_reason: str | None = None
    # The rate the level's arrivals prove, drain excluded (`fleetplan.core.load`: the offered
    # rate where it kept up, else n / (D - w0)); None where the row has no judgement.
    sustained_rps: float | None = None
    # An estimated level (`fleetplan.services.fill`): what it rests on, as JSON text (basis,
    # error band, calibration); None for a measured one.
    estimate: str | None = None

    @property
    def behind(self) -> bool:
        """The server did not keep up with the offered load: as judged where the level was
        judged; else achieved below 90 % of offered (a burst at inf never keeps up)."""
        if self.stable is not None:
            return not self.stable
        if self.offered_rate_rps is None:
            return False
        if math.isinf(self.offered_rate_rps):
            return True
        return self.request_throughput_rps < BEHIND_FRACTION * self.offered_rate_rps

    def describe(self) -> str:
        load = (
            "all requests at once"
            if self.offered_rate_rps is not None and math.isinf(self.offered_rate_rps)
            else f"{self.offered_rate_rps:g} req/s offered"
            if self.offered_rate_rps is not None
            else f"concurrency {self.max_concurrency}"
        )
        return f"{load}, " + carried_text(
            self.offered_rate_rps, self.sustained_rps, self.request_throughput_rps
        )


def carried_text(
    offered: float | None, sustained: float | None, throughput: float, rate=lambda r: f"{r:.3g}"
) -> str:
    """What a level carried, in words: the rate its arrivals prove (drain excluded) where it was
    judged, beside the completions over the whole run; `rate` formats a rate. A server that kept
    up with 4 req/s for 50 s and drained for 9 s completed 3.4 req/s over its whole run: "4 req/s
    sustained over its arrivals (3.4 req/s over the whole run, its drain included)"."""
    whole = f"{rate(throughput)} req/s"
    if offered is None or not math.isfinite(offered) or sustained is None:
        return f"{whole} achieved"
    proven = (
        f"{rate(sustained)} req/s sustained"
        if sustained >= offered * (1 - 1e-9)
        else f"at least {rate(sustained)} req/s proven"
    )
    return f"{proven} over its arrivals ({whole} over the whole run, its drain included)"


class LazyCurve:
    """A configuration's latency-against-load curve for one traffic shape, fitted from its rows
    on first use: under the measured rule only the chosen pools' curves are ever needed."""

    __slots__ = ("_curve", "rows")

    def __init__(self, rows: pd.DataFrame | list[dict]) -> None:
        self.rows = rows
        self._curve: LoadCurve | None = None

    def get(self) -> LoadCurve:
        if self._curve is None:
            self._curve = fit_curve(self.rows)
        return self._curve


@dataclass(frozen=True, slots=True)
class Capacity:
    traffic_class: str
    configuration: Configuration
    capacity_rps: float  # per server, after the utilisation ceiling; 0 when no rate passes
    level: Level | None
    reason: str | None = None  # why no rate passes
    best_ttft_p99_ms: float | None = None
    best_tpot_p99_ms: float | None = None
    # "model: at a measured level" / "model: interpolated": the curve's capacity; "measured
    # rule": today's rule, asked for; "measured rule: <why>": the curve could not say.
    basis: str = MEASURED_RULE
    # Per server before the ceiling: what a pool's utilisation is measured against. None: the
    # level's achieved throughput (the measured rule).
    before_ceiling_rps: float | None = None
    # The configuration's latency-against-load curve for this traffic, where one was fitted: the
    # P99s a pool can expect at its planned load come from it.
    curve: LazyCurve | None = None
    # The interval the capacity lies in (per server, after the ceiling, as capacity_rps): None
    # where the rule found one value, which is then both ends (`low`, `high`).
    rps_low: float | None = None
    rps_high: float | None = None

    @property
    def low(self) -> float:
        return self.capacity_rps if self.rps_low is None else self.rps_low

    @property
    def high(self) -> float:
        return self.capacity_rps if self.rps_high is None else self.rps_high

    @property
    def interval_basis(self) -> str:
        """The basis in words, with the interval where its ends differ."""
        if self.high - self.low <= 1e-9 * max(self.high, 1.0):
            return self.basis
        return f"{self.basis} ({self.low:.3g} to {self.high:.3g} req/s per server)"

    def at_end(self, end: CapacityAt) -> Capacity:
        """This capacity with `capacity_rps` at the interval's `end`, what the planner plans on:
        "low" what the data proves, "mid" the rule's own estimate (the load model's queue form up
        to saturation; `capacity_rps` as found, kept within the interval), "high" the most the
        data supports; the ends are kept. Unchanged where the interval is one value."""
        low, high = self.low, self.high
        estimate = min(max(self.capacity_rps, low), high)
        value = {"low": low, "mid": estimate, "high": high}[end]
        if abs(value - self.capacity_rps) <= 1e-12 * max(value, 1.0):
            return self
        scale = value / self.capacity_rps if self.capacity_rps > 0 else None
        before = self.before_ceiling_rps
        if before is None and self.level is not None:
            before = self.level.request_throughput_rps
        return replace(
            self,
            capacity_rps=value,
            rps_low=low,
            rps_high=high,
            before_ceiling_rps=before * scale if before is not None and scale else before,
        )

    @property
    def full_rps(self) -> float:
        """Per server before the utilisation ceiling."""
        if self.before_ceiling_rps is not None:
            return self.before_ceiling_rps
        return self.level.request_throughput_rps if self.level else 0.0


# The columns of `benchmark_points` `level_from_row` reads.
LEVEL_COLUMNS = (
    "run_id",
    "offered_rate_rps",
    "max_concurrency",
    "request_throughput_rps",
    "ttft_p99_ms",
    "tpot_p99_ms",
    "input_tokens_mean",
    "output_tokens_mean",
    "avg_power_w",
    "source_file",
    "sustained_rps",
    "estimate",
)


def level_from_row(
    row: dict, *, stable: bool | None = None, load_reason: str | None = None
) -> Level:
    """A `benchmark_points` row as the level a capacity rests on."""

    def opt(name: str) -> float | None:
        value = row.get(name)
        return None if value is None or pd.isna(value) else float(value)

    concurrency = opt("max_concurrency")
    return Level(
        run_id=str(row["run_id"]),
        offered_rate_rps=opt("offered_rate_rps"),
        max_concurrency=int(concurrency) if concurrency is not None else None,
        request_throughput_rps=float(row["request_throughput_rps"]),
        ttft_p99_ms=opt("ttft_p99_ms"),
        tpot_p99_ms=opt("tpot_p99_ms"),
        input_tokens_mean=opt("input_tokens_mean"),
        output_tokens_mean=opt("output_tokens_mean"),
        avg_power_w=opt("avg_power_w"),
        source_file=str(row.get("source_file", "")),
        stable=stable,
        load_reason=load_reason,
        sustained_rps=opt("sustained_rps"),
        estimate=_text(row.get("estimate")),
    )


def estimate_of(level: Level | None) -> dict:
    """An estimated level's account of itself (`fleetplan.services.fill`: its `basis` and its
    `error`, the band), parsed; {} for a measured level."""
    if level is None or not level.estimate:
        return {}
    return json.loads(level.estimate)


def level_basis(level: Level | None) -> str:
    """Where a level comes from: "measured", or its estimate's basis ("estimated", "identical
    architecture")."""
    return str(estimate_of(level).get("basis", "measured"))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
