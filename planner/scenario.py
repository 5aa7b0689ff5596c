"""The planning scenario: what a team tells fleetplan about its traffic, prices and sites.

Public contract (JSON): field names here are what scenario files and the dashboard's download use.
Every model forbids unknown keys; every error names the field.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from fleetplan.core.gpus import canonical_gpu
from fleetplan.core.text import PlainName

HOURS_PER_YEAR = 8760.0

# Names reach output (tables, CSV, the terminal): one line of plain text (fleetplan.core.text).
Name = Annotated[str, Field(min_length=1, max_length=200), PlainName]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]

# Bounds on what a scenario may say: each well past any real deployment, so that a typo (1e308,
# 1e-300) is refused naming the field instead of reaching the solver, where it overflowed,
# read as infeasible or stopped with a status code. Each is stated in the field's description.
MAX_RATE_RPS = 1e6  # a million requests/s: beyond any one model's deployment
MAX_TTFT_MS = 3_600_000.0  # an hour to the first token
MAX_TPOT_MS = 60_000.0  # a minute per output token
MAX_TOKENS = 10_000_000  # ten million tokens in a prompt or a response
MAX_HOURLY_USD = 1_000.0  # per GPU-hour (an H100 rents for a few dollars)
MAX_PURCHASE_USD = 1_000_000.0  # per GPU
MIN_LIFETIME_YEARS, MAX_LIFETIME_YEARS = 0.1, 50.0
MAX_GPUS = 10_000_000
MAX_USD_PER_KWH = 10.0  # electricity (retail prices are below 1)
MAX_GCO2_PER_KWH = 2_000.0  # grid intensity (coal is about 1,000)
MAX_KGCO2E_PER_GPU = 100_000.0  # embodied carbon of one GPU (estimates are hundreds of kg)
MAX_KGCO2E_PER_HOST = 100_000.0  # embodied carbon of one server's host (peers: 5,700 kg)
MAX_GPU_W = 10_000.0  # one GPU's power
MAX_CARBON_PRICE_USD_PER_T = 1_000_000.0
MAX_PER_HOUR = 1e9  # a budget (USD/h) or a carbon cap (kg/h)
MAX_PER_DAY = 24 * MAX_PER_HOUR  # a budget (USD/day) or a carbon cap (kg/day)
HOURS = 24  # a day scenario's hours, 0-23 of its timezone
MAX_DAILY_REQUESTS = MAX_RATE_RPS * 3600 * HOURS

# Shapes of a day (share of the peak in each hour 0-23), scaled to a class's `rate_rps`:
# "business-day" is the working day 9-18 h at its peak with a quiet night; "evening-peak" a
# consumer service peaking 19-22 h; "flat" the same rate all day (what `rate_rps` alone means).
SHAPES: dict[str, tuple[float, ...]] = {
    "business-day": (0.15,) * 7 + (0.4, 0.7) + (1.0,) * 9 + (0.6, 0.4, 0.3, 0.2, 0.15, 0.15),
    "evening-peak": (
        *(0.3, 0.2, 0.15, 0.1, 0.1, 0.1, 0.15, 0.3, 0.4, 0.45, 0.5, 0.55),
        *(0.6, 0.6, 0.55, 0.55, 0.6, 0.7, 0.85, 1.0, 1.0, 1.0, 1.0, 0.6),
    ),
    "flat": (1.0,) * HOURS,
}
Shape = Literal["business-day", "evening-peak", "flat"]
Hourly = Annotated[
    list[Annotated[float, Field(ge=0, allow_inf_nan=False)]],
    Field(min_length=HOURS, max_length=HOURS),
]
Hour = Annotated[int, Field(ge=0, le=23)]
HourEnd = Annotated[int, Field(ge=0, le=24)]


def _bounded(low: float, high: float, *, strict_low: bool = False):
    """A finite number from `low` (excluded when `strict_low`) to `high`."""
    if strict_low:
        return Annotated[float, Field(gt=low, le=high, allow_inf_nan=False)]
    return Annotated[float, Field(ge=low, le=high, allow_inf_nan=False)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # Fields of scenario version 2, written out only where they say something (a version 1
    # scenario writes out, and so exports, exactly what it did before version 2 existed).
    _day_fields: ClassVar[tuple[tuple[str, object], ...]] = ()

    @model_serializer(mode="wrap")
    def _without_unused_day_fields(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name, default in self._day_fields:
                if name in data and data[name] == default:
                    del data[name]
        return data


class TrafficClass(_Model):
    """A kind of traffic with its own latency targets; served by pools of its own (within an
    hour a server serves one class). Its demand is one of: `rate_rps` alone (the same rate all
    day: version 1), `hourly_rps` (24 rates), `shape` scaled to the peak `rate_rps`, or a volume:
    `daily_requests` served inside `window_hours`."""

    _day_fields = (
        ("hourly_rps", None),
        ("shape", None),
        ("daily_requests", None),
        ("window_hours", None),
        ("model", None),
        ("burstiness", None),
    )

    name: Name
    rate_rps: _bounded(0, MAX_RATE_RPS, strict_low=True) | None = Field(
        default=None,
        description="Peak request rate to serve (requests/s), above 0 and at most 1,000,000. "
        "Required unless `hourly_rps` or `daily_requests` is given; with `hourly_rps` it is its "
        "peak; with `shape`, the peak the shape is scaled to; of a volume class, its requests "
        "spread evenly over its window (what the class means planned at its peak).",
    )
    hourly_rps: Hourly | None = Field(
        default=None,
        description="Request rate in each hour 0-23 of the scenario's timezone (24 values, "
        "requests/s, 0 to 1,000,000; the highest above 0).",
    )
    shape: Shape | None = Field(
        default=None,
        description="A preset shape of the day scaled to the peak `rate_rps`: 'business-day' "
        f"({', '.join(f'{v:g}' for v in SHAPES['business-day'])} of the peak in hours 0-23), "
        f"'evening-peak' ({', '.join(f'{v:g}' for v in SHAPES['evening-peak'])}), 'flat' (1).",
    )
    daily_requests: _bounded(0, MAX_DAILY_REQUESTS, strict_low=True) | None = Field(
        default=None,
        description="A volume class (a nightly job, a backfill): this many requests a day, "
        "served inside `window_hours`; the planner chooses how many in each hour.",
    )
    window_hours: tuple[Hour, HourEnd] | None = Field(
        default=None,
        description="[start, end] hours of a volume class's window, end exclusive; it wraps "
        "past midnight when end <= start ([22, 6] is 22:00 to 06:00; [0, 0] the whole day, the "
        "default).",
    )
    model: Name | None = Field(
        default=None, description="The LLM this class is served by (default: the scenario's)."
    )
    burstiness: Annotated[float, Field(ge=1, le=3600, allow_inf_nan=False)] | None = Field(
        default=None,
        description="Peak 1-minute rate over the hour's mean (`fleetplan workload`), 1 to 3,600; "
        "planned for only where the scenario's plan_bursts is true.",
    )
    ttft_p99_ms: _bounded(0, MAX_TTFT_MS, strict_low=True) | None = Field(
        default=None, description="P99 time to first token (ms), at most 3,600,000 (an hour)."
    )
    tpot_p99_ms: _bounded(0, MAX_TPOT_MS, strict_low=True) | None = Field(
        default=None, description="P99 time per output token (ms), at most 60,000 (a minute)."
    )
    dataset: Name | None = Field(default=None, description="Benchmark dataset of this traffic.")
    input_len: Annotated[int, Field(ge=1, le=MAX_TOKENS)] | None = Field(
        default=None, description="Input tokens per request, 1 to 10,000,000."
    )
    output_len: Annotated[int, Field(ge=1, le=MAX_TOKENS)] | None = Field(
        default=None, description="Output tokens per request, 1 to 10,000,000."
    )

    @field_validator("hourly_rps")
    @classmethod
    def _rates_range(cls, values: list[float] | None) -> list[float] | None:
        return _in_range(values, MAX_RATE_RPS)

    @model_validator(mode="after")
    def _demand(self) -> TrafficClass:
        peak = _class_peak(self)
        if self.rate_rps is None:
            object.__setattr__(self, "rate_rps", peak)  # frozen: filled in once, here
        return self

    @property
    def is_volume(self) -> bool:
        return self.daily_requests is not None

    @property
    def is_day(self) -> bool:
        """Whether the class says anything a version 1 class cannot."""
        return any(getattr(self, name) is not None for name, _ in self._day_fields)

    def window(self) -> tuple[int, ...]:
        """The hours of a volume class's window, in order from its start (every hour for a
        class that is no volume)."""
        start, end = self.window_hours or (0, 0)
        length = (end - start) % HOURS or HOURS
        return tuple((start + i) % HOURS for i in range(length))

    def hourly_demand(self) -> tuple[float, ...]:
        """Requests/s in each hour: 24 values (a volume class: its even spread over its
        window, 0 outside)."""
        assert self.rate_rps is not None
        if self.hourly_rps is not None:
            return tuple(float(v) for v in self.hourly_rps)
        if self.shape is not None:
            return tuple(v * self.rate_rps for v in SHAPES[self.shape])
        if self.is_volume:
            inside = set(self.window())
            return tuple(self.rate_rps if h in inside else 0.0 for h in range(HOURS))
        return (self.rate_rps,) * HOURS


def _class_peak(traffic: TrafficClass) -> float:
    """The class's peak rate, its demand fields checked against one another."""
    given = traffic.rate_rps
    kinds = [f for f in ("hourly_rps", "daily_requests") if getattr(traffic, f) is not None]
    if len(kinds) > 1:
        raise ValueError("give hourly_rps or daily_requests, not both")
    if traffic.shape is not None and kinds:
        raise ValueError(f"give shape (with rate_rps as its peak) or {kinds[0]}, not both")
    if traffic.window_hours is not None and traffic.daily_requests is None:
        raise ValueError("window_hours is the window of daily_requests: give daily_requests")
    if traffic.daily_requests is not None:
        peak = traffic.daily_requests / (len(traffic.window()) * 3600)
        what = "daily_requests spread evenly over window_hours"
    elif traffic.hourly_rps is not None:
        peak = max(traffic.hourly_rps)
        if peak <= 0:
            raise ValueError("hourly_rps: at least one hour's rate must be above 0")
        what = "the highest of hourly_rps"
    else:
        if given is None:
            raise ValueError("give rate_rps, hourly_rps, or daily_requests with window_hours")
        return given
    if given is not None and abs(given - peak) > 1e-9 * max(1.0, peak):
        raise ValueError(f"rate_rps ({given:g}) is not {what} ({peak:g}): give one of them")
    return peak


Commitment = Literal["reserved", "on_demand"]


class GpuOffer(_Model):
    """A GPU model the fleet may use, at a price, in a site: reserved (paid every hour, whether
    its servers serve or not) or on demand (paid in the hours a server runs)."""

    _day_fields = (("name", None), ("commitment", "reserved"))

    gpu_model: Name
    name: Name | None = Field(
        default=None,
        description="The offer's name (default: its gpu_model); names are unique, so the same "
        "GPU may be offered twice (reserved and on demand) under two names.",
    )
    commitment: Commitment = Field(
        default="reserved",
        description="'reserved': servers paid every hour of the day (version 1's meaning); "
        "'on_demand': paid only in the hours a server runs; its max_gpus bounds each hour.",
    )
    hourly_usd: _bounded(0, MAX_HOURLY_USD) | None = Field(
        default=None, description="Price per GPU-hour (USD), 0 to 1,000."
    )
    purchase_usd: _bounded(0, MAX_PURCHASE_USD) | None = Field(
        default=None, description="Price of one GPU (USD), 0 to 1,000,000."
    )
    lifetime_years: _bounded(MIN_LIFETIME_YEARS, MAX_LIFETIME_YEARS) | None = Field(
        default=None,
        description="Amortisation period of a purchase (and of embodied carbon), 0.1 to 50 years.",
    )
    electricity_included: bool = Field(
        default=True, description="True for rented capacity; False adds energy x PUE x price."
    )
    site: Name
    max_gpus: Annotated[int, Field(ge=0, le=MAX_GPUS)] | None = Field(
        default=None, description="The most GPUs of this offer, 0 to 10,000,000; null: no limit."
    )
    include_embodied: bool = Field(
        default=True,
        description="False for hardware that already exists and would sit idle (its manufacture "
        "is not caused by this fleet).",
    )
    embodied_kgco2e: _bounded(0, MAX_KGCO2E_PER_GPU) | None = Field(
        default=None, description="Overrides the catalog (kg CO2e per GPU, 0 to 100,000)."
    )
    host_embodied_kgco2e: _bounded(0, MAX_KGCO2E_PER_HOST) | None = Field(
        default=None,
        description="Embodied carbon of one server's host (chassis, CPUs, memory, storage; kg "
        "CO2e per server whatever its GPU count, 0 to 100,000). Overrides the catalog's host "
        "share per GPU x GPUs per server.",
    )
    idle_w: _bounded(0, MAX_GPU_W) | None = Field(
        default=None, description="Overrides the catalog (W per GPU, 0 to 10,000)."
    )
    rated_w: _bounded(0, MAX_GPU_W, strict_low=True) | None = Field(
        default=None, description="Overrides the catalog (W per GPU, above 0, at most 10,000)."
    )

    @field_validator("gpu_model")
    @classmethod
    def _canonical(cls, label: str) -> str:
        identity = canonical_gpu(label)
        if not identity.known:
            raise ValueError(f"{label!r}: {identity.reason}")
        return identity.gpu_id

    @model_validator(mode="after")
    def _check(self) -> GpuOffer:
        bought = self.purchase_usd is not None
        if self.hourly_usd is None and not bought:
            raise ValueError("give hourly_usd, or purchase_usd with lifetime_years")
        if self.hourly_usd is not None and bought:
            raise ValueError("give hourly_usd or purchase_usd, not both")
        if bought and self.lifetime_years is None:
            raise ValueError("purchase_usd needs lifetime_years")
        if self.idle_w is not None and self.rated_w is not None and self.idle_w > self.rated_w:
            raise ValueError(f"idle_w ({self.idle_w}) exceeds rated_w ({self.rated_w})")
        return self

    @property
    def offer_name(self) -> str:
        return self.name or self.gpu_model

    def usd_per_gpu_hour(self) -> float:
        if self.hourly_usd is not None:
            return self.hourly_usd
        assert self.purchase_usd is not None and self.lifetime_years is not None
        return self.purchase_usd / (self.lifetime_years * HOURS_PER_YEAR)


GridBasis = Literal["lifecycle", "direct", "marginal", "unknown"]


def _in_range(values: list[float] | None, high: float) -> list[float] | None:
    for hour, value in enumerate(values or ()):
        if not (0 <= value <= high) or value != value:
            raise ValueError(f"hour {hour}: {value!r} is outside 0 to {high:g}")
    return values


class Site(_Model):
    _day_fields = (("hourly_grid_gco2_per_kwh", None), ("hourly_electricity_usd_per_kwh", None))

    name: Name
    electricity_usd_per_kwh: _bounded(0, MAX_USD_PER_KWH) = Field(
        description="Electricity price (USD/kWh), 0 to 10."
    )
    grid_gco2_per_kwh: _bounded(0, MAX_GCO2_PER_KWH) = Field(
        description="Grid carbon intensity (gCO2e/kWh), 0 to 2,000."
    )
    pue: Annotated[float, Field(ge=1, le=5, allow_inf_nan=False)] = 1.0
    grid_basis: GridBasis | None = Field(
        default=None,
        description="What the grid figure counts: 'direct' (combustion only, e.g. EPA eGRID), "
        "'lifecycle' (with upstream and construction, e.g. Ember), 'marginal', or 'unknown'. "
        "A plan whose sites differ in basis says so.",
    )
    hourly_grid_gco2_per_kwh: Hourly | None = Field(
        default=None,
        description="Grid carbon intensity in each hour 0-23 of the scenario's timezone (24 "
        "values, gCO2e/kWh, 0 to 2,000); default: grid_gco2_per_kwh all day.",
    )
    hourly_electricity_usd_per_kwh: Hourly | None = Field(
        default=None,
        description="Electricity price in each hour 0-23 of the scenario's timezone (24 "
        "values, USD/kWh, 0 to 10); default: electricity_usd_per_kwh all day.",
    )

    @field_validator("hourly_grid_gco2_per_kwh")
    @classmethod
    def _grid_range(cls, values: list[float] | None) -> list[float] | None:
        return _in_range(values, MAX_GCO2_PER_KWH)

    @field_validator("hourly_electricity_usd_per_kwh")
    @classmethod
    def _price_range(cls, values: list[float] | None) -> list[float] | None:
        return _in_range(values, MAX_USD_PER_KWH)

    def grid_at(self, hour: int) -> float:
        hourly = self.hourly_grid_gco2_per_kwh
        return self.grid_gco2_per_kwh if hourly is None else hourly[hour]

    def electricity_at(self, hour: int) -> float:
        hourly = self.hourly_electricity_usd_per_kwh
        return self.electricity_usd_per_kwh if hourly is None else hourly[hour]


class CarbonPrice(_Model):
    carbon_price_usd_per_t: _bounded(0, MAX_CARBON_PRICE_USD_PER_T) = Field(
        description="Price of a tonne of CO2e (USD), 0 to 1,000,000."
    )


Objective = Literal["cost", "carbon"] | CarbonPrice
CapacityRule = Literal["model", "measured"]
# Servers planned to carry at most 80 % of their capacity: room for traffic that bursts above its
# planned peak and for the capacity model's error (README, "The utilisation ceiling").
DEFAULT_HEADROOM = 0.8


class Scenario(_Model):
    """A scenario of version 1 (every class a constant rate, every GPU reserved: planned at its
    peak) or 2 (a day: hourly rates, volumes in windows, on-demand offers, hourly grids, several
    models, daily limits; planned over 24 hours, and at its peak beside it). A scenario that uses
    a field of version 2 is of version 2."""

    _day_fields = (
        ("version", None),
        ("timezone", "UTC"),
        ("budget_usd_per_day", None),
        ("carbon_cap_kg_per_day", None),
        ("plan_bursts", False),
    )

    version: Literal[1, 2] | None = Field(
        default=None,
        description="1: every class a constant peak rate, every GPU reserved; 2: a day of 24 "
        "hours. Default: 2 where a field of version 2 is used, else 1.",
    )
    name: Name = "scenario"
    model: Name
    classes: Annotated[list[TrafficClass], Field(min_length=1, max_length=500)]
    gpus: Annotated[list[GpuOffer], Field(min_length=1, max_length=100)]
    sites: Annotated[list[Site], Field(min_length=1, max_length=100)]
    objective: Objective = "cost"
    max_utilization: Annotated[float, Field(gt=0, le=1, allow_inf_nan=False)] = Field(
        default=DEFAULT_HEADROOM,
        description="Headroom: the share of a server's capacity a pool is planned to carry.",
    )
    capacity_rule: CapacityRule = Field(
        default="model",
        description="How a server's capacity for a class is found: 'model', the highest rate "
        "whose P99s the configuration's latency-against-load curve predicts within the targets; "
        "'measured', the highest achieved throughput among measured levels that meet them.",
    )
    budget_usd_per_hour: _bounded(0, MAX_PER_HOUR) | None = Field(
        default=None, description="The most the fleet may cost (USD/h), 0 to 1e9."
    )
    carbon_cap_kg_per_hour: _bounded(0, MAX_PER_HOUR) | None = Field(
        default=None, description="The most CO2e the fleet may emit (kg/h), 0 to 1e9."
    )
    budget_usd_per_day: _bounded(0, MAX_PER_DAY) | None = Field(
        default=None, description="The most the fleet may cost in a day (USD), 0 to 2.4e10."
    )
    carbon_cap_kg_per_day: _bounded(0, MAX_PER_DAY) | None = Field(
        default=None, description="The most CO2e the fleet may emit in a day (kg), 0 to 2.4e10."
    )
    plan_bursts: bool = Field(
        default=False,
        description="True: serve each class's rate x its burstiness (the peak minute's rate) in "
        "every hour, as headroom for bursts within the hour; False (the default): its rate.",
    )
    timezone: Name = Field(
        default="UTC",
        description="The timezone of the hours 0-23 of hourly rates, windows and hourly grid "
        "and price profiles (an IANA name such as 'Europe/Paris'; default UTC).",
    )
    time_limit_s: Annotated[float, Field(gt=0, le=3600)] = 10.0

    @field_validator("timezone")
    @classmethod
    def _zone(cls, zone: str) -> str:
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"{zone!r} is not a known timezone (e.g. 'UTC', 'Europe/Paris')"
            ) from None
        return zone

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        _unique([c.name for c in self.classes], "classes", "name")
        for i, gpu in enumerate(self.gpus):
            if gpu.name is None and any(g.offer_name == gpu.gpu_model for g in self.gpus[:i]):
                raise ValueError(
                    f"gpus[{i}].gpu_model {gpu.gpu_model!r} appears twice: to offer one GPU "
                    "twice (reserved and on demand), give each offer a name"
                )
        _unique([g.offer_name for g in self.gpus], "gpus", "name")
        _unique([s.name for s in self.sites], "sites", "name")
        day = self._uses_day_fields()
        if self.version == 1 and day:
            raise ValueError(f"version 1 cannot say {day}: make it version 2 (or leave it out)")
        sites = {s.name for s in self.sites}
        for i, gpu in enumerate(self.gpus):
            if gpu.site not in sites:
                known = ", ".join(sorted(sites))
                raise ValueError(f"gpus[{i}].site {gpu.site!r} is not defined in sites ({known})")
        return self

    def _uses_day_fields(self) -> str | None:
        """The first field of version 2 the scenario uses, in words (None: it uses none)."""
        for name, default in self._day_fields[1:]:
            if getattr(self, name) != default:
                return name
        for i, c in enumerate(self.classes):
            for name, _ in c._day_fields:
                if getattr(c, name) is not None:
                    return f"classes[{i}].{name}"
        for i, g in enumerate(self.gpus):
            if g.name is not None or g.commitment != "reserved":
                return f"gpus[{i}].{'name' if g.name is not None else 'commitment'}"
        for i, site in enumerate(self.sites):
            for name, _ in site._day_fields:
                if getattr(site, name) is not None:
                    return f"sites[{i}].{name}"
        return None

    @property
    def is_day(self) -> bool:
        """A scenario of version 2: planned over 24 hours (and at its peak beside it)."""
        return self.version == 2 or self._uses_day_fields() is not None

    def burst_factor(self, traffic: TrafficClass) -> float:
        """What a class's rates are multiplied by when planned: its burstiness where the
        scenario lets bursts be planned for (never a volume's: its total is what counts)."""
        if self.plan_bursts and traffic.burstiness is not None and not traffic.is_volume:
            return traffic.burstiness
        return 1.0

    def model_of(self, traffic: TrafficClass) -> str:
        return traffic.model or self.model

    def models(self) -> list[str]:
        """The LLMs of the scenario's classes, the scenario's first."""
        found = [self.model]
        for traffic in self.classes:
            if self.model_of(traffic) not in found:
                found.append(self.model_of(traffic))
        return found

    def site_of(self, gpu_model: str) -> Site:
        offer = self.offer(gpu_model)
        return self.site_named(offer.site)

    def site_named(self, name: str) -> Site:
        return next(s for s in self.sites if s.name == name)

    def offers_of(self, gpu_model: str) -> list[GpuOffer]:
        return [g for g in self.gpus if g.gpu_model == gpu_model]

    def grid_bases(self) -> dict[str, list[str]]:
        """Sites per grid basis ("unknown" for a site that gives none), for the sites the
        offered GPUs are in."""
        used = {g.site for g in self.gpus}
        bases: dict[str, list[str]] = {}
        for site in self.sites:
            if site.name in used:
                bases.setdefault(site.grid_basis or "unknown", []).append(site.name)
        return bases

    def offer(self, gpu_model: str) -> GpuOffer:
        """The first offer of `gpu_model` (its only one in a version 1 scenario)."""
        return next(g for g in self.gpus if g.gpu_model == gpu_model)

    def offer_named(self, name: str) -> GpuOffer:
        return next(g for g in self.gpus if g.offer_name == name)

    @property
    def carbon_price_usd_per_kg(self) -> float | None:
        if isinstance(self.objective, CarbonPrice):
            return self.objective.carbon_price_usd_per_t / 1000.0
        return None


def _unique(values: list[str], where: str, field: str) -> None:
    seen: set[str] = set()
    for i, value in enumerate(values):
        if value in seen:
            raise ValueError(f"{where}[{i}].{field} {value!r} appears twice")
        seen.add(value)
