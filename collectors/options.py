"""What one collection is asked to do, as frozen models: `CollectOptions` for a collection on one
host (the backend, the model and six groups of settings), `IngestOptions` for loading the run
files afterwards, `CampaignOptions` for a campaign over a Ray cluster.

The command line builds them from argv (fleetplan/cli/collect.py owns the flags, their defaults
and help); a campaign builds `CollectOptions` straight from a probe's settings and its `args`
mapping. Both name an option as the command line does, dashed or underscored (`num-requests`,
`num_requests`), and a rejected value is reported with its flag (`--num-requests: ...`).

A new option: a field in the group it belongs to (its name is the flag's, underscored), the flag
in fleetplan/cli/collect.py with the same default (tests/test_collect_options.py checks that they
agree), and the code that reads it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlparse

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from fleetplan.collectors.suite import Suite, TokenShape, parse_rates, standard_suite
from fleetplan.core.errors import InputError
from fleetplan.core.gpus import plain_gpu_label
from fleetplan.core.text import PlainName, hidden_characters, plain_name, printable

if TYPE_CHECKING:
    from fleetplan.collectors.search import SearchPlan

MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a week: any longer is no timeout at all
# what a run records as a name (core.contract.Text): plain, one line, at most 500 characters
_Name = Annotated[str, Field(min_length=1, max_length=500), PlainName]
# a GPU as a label: a name, and not one written with look-alike letters of a known GPU
GpuLabel = Annotated[
    str, Field(min_length=1, max_length=500), PlainName, AfterValidator(plain_gpu_label)
]
# what goes into a header, a path or a server's command line: one line, no control character
_Word = Annotated[str, Field(max_length=4096), PlainName]


def http_url(url: str) -> str:
    """An http(s) URL of a server (not file://, not a bare path), plain text: no spaces, and
    nothing the run file would record that it should not (a password) or that the paths
    fleetplan adds to it would break (a query, a fragment)."""
    plain_name(url)
    parts = urlparse(url)
    shown = repr(printable(url)[:80])
    if parts.scheme not in {"http", "https"} or not parts.netloc:
        raise ValueError(f"{shown} is not an http:// or https:// URL")
    if any(c.isspace() for c in url):
        raise ValueError(f"{shown} has a space: a URL has none")
    if "@" in parts.netloc:
        raise ValueError(
            "a server's URL with a user or password in it is recorded in every run file: "
            "give the key with --api-key instead"
        )
    if parts.query or parts.fragment or url.rstrip("/").endswith(("?", "#")):
        raise ValueError(
            f"{shown} has a query or fragment: give the server's address only "
            "(fleetplan adds /v1/completions, /v1/models to it)"
        )
    return url


def _plain_secret(key: str) -> str:
    """An API key: one line without control characters (it goes into a header), refused
    without showing it."""
    found = hidden_characters(key)
    if found:
        codes = ", ".join(dict.fromkeys(f"U+{ord(c):04X}" for c in found))
        raise ValueError(f"contains a control or formatting character ({codes}): not shown here")
    return key


BACKEND_NAMES = ("openai", "vllm", "torch")
BackendName = Literal["openai", "vllm", "torch"]
_LENGTH = Field(None, ge=1, le=1_000_000)  # the bounds a Suite's token shapes accept


class _Group(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MeasureOptions(_Group):
    """What to measure: the standard suite, or one token shape; the load levels."""

    suite: Literal["standard"] | None = None
    input_len: int | None = _LENGTH
    output_len: int | None = _LENGTH
    rates: tuple[float, ...] | None = None
    num_requests: int | None = Field(None, ge=1, le=1_000_000)
    warmup: int = Field(4, le=10_000)  # below 0 counts as 0, as on the command line
    seed: int = Field(0, ge=0, le=2**63 - 1)  # numpy's generators take no negative seed
    # the gamma gaps' shape: under 0.01 every gap but one rounds to 0 (no schedule at all)
    burstiness: float = Field(1.0, ge=0.01, le=1000, allow_inf_nan=False)
    max_concurrency: int | None = Field(None, ge=1, le=1_000_000)  # at most --num-requests'

    @field_validator("rates", mode="before")
    @classmethod
    def _rates(cls, value: object) -> object:
        """'1,2,inf' as on the command line, or a list of numbers and "inf" (a campaign)."""
        if isinstance(value, list | tuple):
            value = ",".join(str(item) for item in value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        return parse_rates(value) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_shape(self) -> MeasureOptions:
        custom = self.input_len is not None or self.output_len is not None
        if custom and self.suite:
            raise ValueError("give --suite standard or --input-len/--output-len, not both")
        if custom and (self.input_len is None or self.output_len is None):
            raise ValueError("a custom shape needs both --input-len and --output-len")
        slowest = min(self.rates or (math.inf,))
        requests = self.num_requests or Suite.model_fields["num_requests"].default
        if requests / slowest > MAX_TIMEOUT_S:  # a level's schedule has a bound, as a request
            raise ValueError(
                f"--rates: {slowest:g} req/s spreads a level of {requests} requests over "
                f"{requests / slowest:.3g} s, over a week: give a higher rate"
            )
        return self

    def plan(self) -> Suite:
        """The suite these options describe."""
        extra: dict[str, Any] = {
            "seed": self.seed,
            "warmup_requests": max(self.warmup, 0),
            "burstiness": self.burstiness,
            "max_concurrency": self.max_concurrency,
        }
        if self.rates:
            extra["rates"] = self.rates
        if self.num_requests:
            extra["num_requests"] = self.num_requests
        if self.input_len is None or self.output_len is None:
            return standard_suite(**extra)
        name = f"random-{self.input_len}-{self.output_len}"
        shape = TokenShape(name=name, input_len=self.input_len, output_len=self.output_len)
        return Suite(shapes=(shape,), **extra)


class ServerOptions(_Group):
    """The OpenAI-compatible server (openai; vllm fills in the one it starts)."""

    base_url: Annotated[str, Field(max_length=2000), AfterValidator(http_url)] | None = None
    tokenizer: _Word | None = None
    api_key: Annotated[str, Field(max_length=4096), AfterValidator(_plain_secret)] | None = None
    no_ignore_eos: bool = False
    # a request fails after this long without a token (and DEADLINE_FACTOR times it in all)
    # under 10 ms no server sends a token in time: every request would fail, the run measure nothing
    request_timeout: float = Field(600.0, ge=0.01, le=MAX_TIMEOUT_S, allow_inf_nan=False)


class EngineOptions(_Group):
    """The vLLM server that `--backend vllm` starts and stops."""

    tensor_parallel_size: int = Field(1, ge=1, le=4096)  # at most --gpu-count's bound
    load_format: _Word | None = None
    port: int | None = Field(None, ge=1, le=65535)
    startup_timeout: float = Field(900.0, gt=0, le=MAX_TIMEOUT_S, allow_inf_nan=False)
    engine_arg: tuple[_Word, ...] = ()

    @field_validator("engine_arg", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value


class HardwareOptions(_Group):
    """What the server runs on, and whether NVML measures its energy."""

    gpu: GpuLabel | None = None
    gpu_count: int | None = Field(None, ge=1, le=4096)  # a run's bound (core.contract.Run)
    telemetry: Literal["auto", "off"] = "auto"

    @field_validator("telemetry", mode="before")
    @classmethod
    def _yaml_off(cls, value: object) -> object:
        # YAML 1.1 reads a bare `off` as false (and `on` as true)
        return {False: "off", True: "auto"}.get(value, value) if isinstance(value, bool) else value


class TorchOptions(_Group):
    """Transformers on torch (torch): a batch sweep."""

    config: _Word | None = None
    device: _Word | None = None
    max_batch: int = Field(256, ge=1)


class SearchOptions(_Group):
    """`--find-capacity`: search the highest rate that meets P99 targets (openai, vllm)."""

    find_capacity: bool = False
    ttft_p99: float | None = Field(None, gt=0, allow_inf_nan=False)  # ms
    tpot_p99: float | None = Field(None, gt=0, allow_inf_nan=False)  # ms
    tolerance: float = Field(0.05, gt=0, lt=1)  # collectors.search.DEFAULT_TOLERANCE
    min_runs: int = Field(2, ge=1, le=3)  # collectors.search.MIN_RUNS (MAX_RUNS is 3)

    @model_validator(mode="after")
    def _targets(self) -> SearchOptions:
        if self.find_capacity and self.ttft_p99 is None:
            raise ValueError("--find-capacity needs --ttft-p99 MS, the P99 TTFT target")
        if not self.find_capacity:
            given = [
                flag(name)
                for name in ("ttft_p99", "tpot_p99", "tolerance", "min_runs")
                if getattr(self, name) != type(self).model_fields[name].default
            ]
            if given:
                raise ValueError(
                    f"{', '.join(given)} without --find-capacity: they set its targets and "
                    "tolerance (and --min-runs), so give it too"
                )
        return self

    def plan(self, num_requests: int | None) -> SearchPlan | None:
        """The search these options ask for (None: no search). `--num-requests`, when given,
        sets the fewest requests a level has (else `SEARCH_MIN_REQUESTS`)."""
        if not self.find_capacity:
            return None
        # imported here: every `fleetplan` command reads these options, few search (numpy)
        from fleetplan.collectors.search import SEARCH_MIN_REQUESTS, SearchPlan

        return SearchPlan(
            ttft_p99_ms=self.ttft_p99,
            tpot_p99_ms=self.tpot_p99,
            tolerance=self.tolerance,
            min_requests=num_requests or SEARCH_MIN_REQUESTS,
            min_runs=self.min_runs,
        )


_GROUPS: dict[str, type[_Group]] = {
    "measure": MeasureOptions,
    "search": SearchOptions,
    "server": ServerOptions,
    "engine": EngineOptions,
    "hardware": HardwareOptions,
    "torch": TorchOptions,
}
_TOP = ("backend", "model", "dtype")
# option name -> its group (None: a field of CollectOptions itself)
_GROUP_OF: dict[str, str | None] = {name: None for name in _TOP} | {
    name: group for group, model in _GROUPS.items() for name in model.model_fields
}
OPTION_NAMES = frozenset(_GROUP_OF)


def option_name(key: str) -> str:
    """`--tensor-parallel-size`, `tensor-parallel-size` -> `tensor_parallel_size`."""
    return key.lstrip("-").replace("-", "_")


def flag(name: str) -> str:
    """`tensor_parallel_size` -> `--tensor-parallel-size`."""
    return "--" + name.replace("_", "-")


class CollectOptions(BaseModel):
    """Everything a collection on one host needs to know, except where its run file goes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: BackendName
    model: _Name | None = None
    dtype: _Name | None = None  # the model's dtype (vllm, torch)
    measure: MeasureOptions = MeasureOptions()
    search: SearchOptions = SearchOptions()
    server: ServerOptions = ServerOptions()
    engine: EngineOptions = EngineOptions()
    hardware: HardwareOptions = HardwareOptions()
    torch: TorchOptions = TorchOptions()

    @model_validator(mode="after")
    def _search_needs_rates(self) -> CollectOptions:
        if not self.search.find_capacity:
            return self
        if self.backend == "torch":
            raise ValueError(
                "--find-capacity searches request rates; the torch backend runs a closed-loop "
                "batch sweep, which offers none: use --backend openai or vllm"
            )
        if self.measure.max_concurrency is not None:
            raise ValueError(
                "--find-capacity judges each level against the rate offered, which a client-side "
                "--max-concurrency would hold back: leave it out"
            )
        if self.measure.rates and not any(math.isfinite(rate) for rate in self.measure.rates):
            raise ValueError("--find-capacity needs a finite rate in --rates to start its ladder")
        return self

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> CollectOptions:
        """From option name -> value (None: not given). Raises InputError naming the option."""
        nested: dict[str, Any] = {group: {} for group in _GROUPS}
        for key, value in values.items():
            name = option_name(key)
            if name not in _GROUP_OF:
                raise InputError(f"{flag(name)} is not a `fleetplan collect` option")
            group = _GROUP_OF[name]
            if value is not None:
                (nested if group is None else nested[group])[name] = value
        try:
            return cls.model_validate(nested)
        except ValidationError as error:
            raise _named(error) from None

    def flat(self) -> dict[str, object]:
        """Option name -> value, every option."""
        values: dict[str, object] = {name: getattr(self, name) for name in _TOP}
        for group in _GROUPS:
            values.update(getattr(self, group).model_dump())
        return values

    def changed(self) -> dict[str, object]:
        """The options whose value is not their default."""
        return non_default(self.flat())

    def replace(self, **changes: object) -> CollectOptions:
        """A copy with some options changed (by option name), checked again."""
        return CollectOptions.from_mapping({**self.flat(), **changes})


def _default(name: str) -> object:
    group = _GROUP_OF[name]
    if group is None:
        return CollectOptions.model_fields[name].default
    return _GROUPS[group].model_fields[name].default


def non_default(values: Mapping[str, object]) -> dict[str, object]:
    """The entries of an option name -> value mapping that differ from the option's default
    (None counts as not given), in the mapping's order."""
    changed = {}
    for key, value in values.items():
        name = option_name(key)
        normal = tuple(value) if isinstance(value, list) else value
        if normal is not None and normal != _default(name):
            changed[name] = value
    return changed


def _named(error: ValidationError) -> InputError:
    """Pydantic's first complaint, in the words of the option it is about."""
    first = error.errors(include_url=False)[0]
    names = [part for part in first["loc"] if part in _GROUP_OF]
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] not in {"missing", "value_error", "assertion_error"}:
        shown = printable(repr(first.get("input")))
        message += f", got {shown[:77] + '...' if len(shown) > 80 else shown}"
    return InputError(f"{flag(str(names[-1]))}: {message}" if names else message)


class IngestOptions(BaseModel):
    """Load the run files into a warehouse when the collection is done."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    warehouse: str | None = None  # None: $FLEETPLAN_WAREHOUSE, else var/fleetplan.duckdb
    wait_s: float = 30.0  # for a warehouse another process holds


class CampaignOptions(BaseModel):
    """How a campaign runs on a Ray cluster (what each probe measures is in the campaign)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    address: str = "auto"  # auto: $RAY_ADDRESS or the cluster this host joined
    out: Path
    gpu_types: tuple[GpuLabel, ...] | None = None  # only these GPU types
    per_type: int | None = Field(None, ge=1)  # hosts of each type (default: the campaign's)
    restart: bool = False  # run everything again, ignoring what finished earlier
    ingest: IngestOptions | None = None

    @field_validator("gpu_types", mode="before")
    @classmethod
    def _listed(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(part for part in value.split(",") if part) or None
        return value
