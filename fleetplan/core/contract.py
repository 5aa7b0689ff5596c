"""The data contract: a benchmark *run* and its *points* (one per load level).

Definitions (docs/definitions.md, section 1) that must not drift:
- TTFT: request sent -> first streamed token. E2EL: request sent -> last token.
- TPOT (per request): (E2EL - TTFT) / (output_tokens - 1); statistics over requests.
- ITL: gaps between consecutive streamed chunks, pooled over all requests (vLLM's definition).
- Throughputs: completed requests, output tokens, input+output tokens, each over the level's wall
  duration.
- Energy: the NVML total-energy counter delta over the level's window (`nvml_counter`), power
  sampled and integrated (`power_integration`), or not measured (`none`: energy null, never 0).
  `gpu_energy_j` and `avg_power_w` cover all GPUs of the run together (the server's GPUs).

Units are in field names (`_ms`, `_s`, `_rps`, `_tps`, `_j`, `_w`). Models forbid unknown keys.
"""

from __future__ import annotations

import itertools
import math
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from fleetplan.core.errors import InputError
from fleetplan.core.gpus import canonical_gpu
from fleetplan.core.text import PlainName, PlainText

LATENCY_METRICS: tuple[str, ...] = ("ttft", "tpot", "itl", "e2el")
LATENCY_STATS: tuple[str, ...] = ("mean", "p50", "p90", "p95", "p99")
LATENCY_FIELDS: tuple[str, ...] = tuple(
    f"{metric}_{stat}_ms" for metric in LATENCY_METRICS for stat in LATENCY_STATS
)
# The `format` a fleetplan run file declares (collectors write it; the importer detects it).
RUN_FILE_FORMAT = "fleetplan.runs"

NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
INT32_MAX = 2**31 - 1  # the warehouse stores counts as 32-bit integers
Count = Annotated[int, Field(ge=0, le=INT32_MAX)]
# A name or label: one line of plain text (fleetplan.core.text: no control or direction marks).
Text = Annotated[str, Field(min_length=1, max_length=500), PlainName]


class EnergyMethod(StrEnum):
    NVML_COUNTER = "nvml_counter"
    POWER_INTEGRATION = "power_integration"
    NONE = "none"


class StatsSource(StrEnum):
    """Where a point's latency statistics come from."""

    REPORTED = "reported"  # as the tool wrote them
    RECOMPUTED = "recomputed"  # from per-request timings, by fleetplan's definitions


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class RequestLog(_Strict):
    """Per-request timings of one load level, kept so that its statistics can be recomputed.

    Seconds from the level's start (`start_s`) and from each request's send; a failed request
    has null timings and its error text (empty for a success).
    """

    start_s: tuple[NonNegative, ...]
    ttft_s: tuple[NonNegative | None, ...]
    e2el_s: tuple[NonNegative | None, ...]
    itl_s: tuple[tuple[NonNegative, ...], ...]
    input_tokens: tuple[Count, ...]
    output_tokens: tuple[Count, ...]
    error: tuple[Annotated[str, Field(max_length=2000)], ...]

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False)

    @model_validator(mode="after")
    def _same_length(self) -> RequestLog:
        lengths = {len(getattr(self, name)) for name in type(self).model_fields}
        if len(lengths) != 1:
            raise ValueError("every per-request list must have one entry per request")
        for error, ttft, e2el in zip(self.error, self.ttft_s, self.e2el_s, strict=True):
            if not error and (ttft is None or e2el is None):
                raise ValueError("a successful request needs ttft_s and e2el_s")
        return self

    @property
    def succeeded(self) -> list[int]:
        return [i for i, error in enumerate(self.error) if not error]


class Point(_Strict):
    """One load level of a run. Latency fields are null where the source lacks them."""

    offered_rate_rps: float | None = Field(
        default=None,
        description="The rate requests were really sent at (req/s), from the file's send times "
        "where it has them, else the configured rate; inf = all requests at once.",
    )
    configured_rate_rps: float | None = Field(
        default=None, description="The rate the tool was asked for (req/s), where it says."
    )
    max_concurrency: Annotated[int, Field(ge=1, le=INT32_MAX)] | None = None
    burstiness: Positive | None = None
    requests_sent: Count | None = None
    completed: Count
    failed: Count | None = None
    complete: bool = Field(default=True, description="False when the level was cut short.")
    duration_s: Positive
    request_throughput_rps: NonNegative | None = None
    output_throughput_tps: NonNegative | None = None
    total_throughput_tps: NonNegative | None = None

    ttft_mean_ms: NonNegative | None = None
    ttft_p50_ms: NonNegative | None = None
    ttft_p90_ms: NonNegative | None = None
    ttft_p95_ms: NonNegative | None = None
    ttft_p99_ms: NonNegative | None = None
    tpot_mean_ms: NonNegative | None = None
    tpot_p50_ms: NonNegative | None = None
    tpot_p90_ms: NonNegative | None = None
    tpot_p95_ms: NonNegative | None = None
    tpot_p99_ms: NonNegative | None = None
    itl_mean_ms: NonNegative | None = None
    itl_p50_ms: NonNegative | None = None
    itl_p90_ms: NonNegative | None = None
    itl_p95_ms: NonNegative | None = None
    itl_p99_ms: NonNegative | None = None
    e2el_mean_ms: NonNegative | None = None
    e2el_p50_ms: NonNegative | None = None
    e2el_p90_ms: NonNegative | None = None
    e2el_p95_ms: NonNegative | None = None
    e2el_p99_ms: NonNegative | None = None
    stats_source: Annotated[StatsSource, Field(strict=False)] = StatsSource.REPORTED

    input_tokens_mean: NonNegative | None = None
    output_tokens_mean: NonNegative | None = None
    gpu_energy_j: NonNegative | None = None
    avg_power_w: NonNegative | None = None
    energy_method: Annotated[EnergyMethod, Field(strict=False)] = EnergyMethod.NONE
    gpu_memory_used_gb: NonNegative | None = None
    gpu_utilization_pct: Annotated[float, Field(ge=0, le=100, allow_inf_nan=False)] | None = None
    requests: RequestLog | None = Field(
        default=None, description="Per-request timings (run files from fleetplan.collectors)."
    )
    # What a person should know about this level's figures (a configured rate the tool did not
    # send at, two stated figures that disagree): said at ingest and stored with the point.
    notes: Annotated[
        tuple[Annotated[str, Field(max_length=2000), PlainText], ...],
        Field(max_length=50, strict=False),
    ] = ()

    @field_validator("offered_rate_rps", "configured_rate_rps", mode="before")
    @classmethod
    def _rate(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in {"inf", "infinity"}:
            return math.inf
        if isinstance(value, bool):
            raise ValueError("expected a number of requests per second or 'inf'")
        if isinstance(value, int) and value.bit_length() > 1023:  # beyond a float: no rate
            raise ValueError(f"the rate {str(value)[:20]}... is implausibly large")
        if isinstance(value, int | float) and (math.isnan(value) or value <= 0):
            raise ValueError("expected a rate > 0 (or 'inf')")
        return value

    @field_serializer("offered_rate_rps", "configured_rate_rps", when_used="json")
    def _rate_out(self, value: float | None) -> float | str | None:
        return "inf" if value is not None and math.isinf(value) else value

    @model_validator(mode="after")
    def _consistent(self) -> Point:
        if self.offered_rate_rps is None and self.max_concurrency is None:
            raise ValueError("a point needs its offered load: offered_rate_rps or max_concurrency")
        sent, failed = self.requests_sent, self.failed
        if sent is not None and failed is not None and self.completed + failed > sent:
            raise ValueError(
                f"completed ({self.completed}) + failed ({self.failed}) exceeds "
                f"requests_sent ({self.requests_sent})"
            )
        measured = self.gpu_energy_j is not None
        if self.energy_method is EnergyMethod.NONE and measured:
            raise ValueError("gpu_energy_j is set but energy_method is 'none'")
        if self.energy_method is not EnergyMethod.NONE and not measured:
            raise ValueError(
                f"energy_method is {self.energy_method.value!r} but gpu_energy_j is null"
            )
        for metric in LATENCY_METRICS:
            ordered = [
                getattr(self, f"{metric}_{stat}_ms") for stat in ("p50", "p90", "p95", "p99")
            ]
            known = [v for v in ordered if v is not None]
            for low, high in itertools.pairwise(known):
                if high < low * (1 - 1e-9) - 1e-9:
                    raise ValueError(
                        f"{metric} percentiles are not increasing: {ordered} (p50, p90, p95, p99)"
                    )
        return self


class Provenance(_Strict):
    """Where a run's numbers come from, beyond the file itself."""

    repository: Text | None = None
    commit: Text | None = None
    path: Text | None = None
    licence: Text | None = None
    notes: Annotated[str, Field(max_length=2000), PlainText] | None = None


class Run(_Strict):
    """One benchmark invocation on one GPU configuration: a setup and its load levels."""

    tool: Text
    tool_version: Text | None = None
    engine: Text | None = None
    engine_version: Text | None = None
    model: Text
    dtype: Text | None = None
    gpu_model: Text = Field(description="Canonical GPU id; the label verbatim when unrecognised.")
    gpu_label: Text | None = Field(default=None, description="The GPU as the source named it.")
    gpu_count: Annotated[int, Field(ge=1, le=4096)]
    tensor_parallel_size: Annotated[int, Field(ge=1, le=4096)] | None = None
    # A free label of how the server was set up beyond engine, version, dtype and tensor
    # parallelism ("prefix-caching", "max-num-seqs 64", "fp8 kv"): with those, what makes two
    # runs on the same GPUs different servers, never one curve.
    variant: Text | None = None
    host: Text | None = None
    dataset: Text | None = None
    input_len: Annotated[int, Field(ge=1, le=INT32_MAX)] | None = Field(
        default=None, description="Fixed prompt length in tokens, for synthetic token shapes."
    )
    output_len: Annotated[int, Field(ge=1, le=INT32_MAX)] | None = None
    created_at: datetime | None = None
    # The file the run's numbers were read from. A run file that is itself the source may leave
    # these out: the importer fills them from the file (name, sha256, position of the run).
    source_file: Text | None = None
    source_sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None = None
    source_index: Count | None = None
    provenance: Provenance | None = None
    metadata: dict[
        Annotated[str, Field(max_length=200), PlainName],
        Annotated[str, Field(max_length=2000), PlainText],
    ] = Field(default_factory=dict)
    # strict=False on collections only: a list is as good as a tuple; numbers stay strict.
    points: Annotated[tuple[Point, ...], Field(min_length=1, max_length=10_000, strict=False)]

    @property
    def gpu_known(self) -> bool:
        return canonical_gpu(self.gpu_model).known

    @model_validator(mode="after")
    def _canonical(self) -> Run:
        identity = canonical_gpu(self.gpu_model)
        if identity.lookalike_of:  # never a GPU of its own, with no warning
            raise ValueError(f"gpu_model {self.gpu_model!r} {identity.reason}")
        if identity.known and identity.gpu_id != self.gpu_model:
            raise ValueError(
                f"gpu_model {self.gpu_model!r} is not a canonical id: use {identity.gpu_id!r}"
            )
        if self.tensor_parallel_size is not None and self.tensor_parallel_size > self.gpu_count:
            raise ValueError(
                f"tensor_parallel_size ({self.tensor_parallel_size}) exceeds gpu_count "
                f"({self.gpu_count})"
            )
        return self


class RunFile(_Strict):
    """A fleetplan run file: what collectors write and what sample data ships as."""

    format: Literal[RUN_FILE_FORMAT]
    format_version: Literal[1]
    generator: Text | None = None
    description: Annotated[str, Field(max_length=5000), PlainText] | None = None
    runs: Annotated[tuple[Run, ...], Field(min_length=1, strict=False)]


def validation_message(error: ValidationError, *, file: str | None = None) -> InputError:
    """Turn pydantic's error into one InputError that names the field and the offending value."""
    errors = error.errors(include_url=False)
    # A value that may be one of several kinds (a scenario's objective: 'cost', or an object
    # with a carbon price) fails once per kind: the error to show is the one from the kind that
    # was given (an object), not "should be 'cost' or 'carbon'"; the kinds' tags are no field.
    first = min(errors, key=lambda e: any(_is_branch(p) and "[" in str(p) for p in e["loc"]))
    field = ".".join(str(part) for part in first["loc"] if not _is_branch(part)) or None
    value = first.get("input")
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    extra = f" (and {error.error_count() - 1} more problems)" if error.error_count() > 1 else ""
    message = first["msg"]
    # the whole text as the input (`json_invalid`): never echoed, whatever file it is
    whole = first["type"] == "json_invalid" or isinstance(value, bytes | bytearray)
    if first["type"] not in {"missing", "value_error", "assertion_error"} and not whole:
        message = f"{message}, got {shown}"
    return InputError(f"{message}{extra}", file=file, field=field)


def _is_branch(part: object) -> bool:
    """A part of pydantic's error location that names a union's member (`literal['a','b']`,
    `CarbonPrice`), not a field: fields are snake_case."""
    text = str(part)
    return text.startswith("literal[") or (text[:1].isupper() and text.isidentifier())
