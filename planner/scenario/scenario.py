"""The planning scenario: what a team tells fleetplan about its traffic, prices and sites.

Public contract (JSON): field names here are what scenario files and the dashboard's download use.
Every model forbids unknown keys; every error names the field.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pydantic import Field, field_validator, model_validator

from fleetplan.planner.scenario.parts import (
    BOUGHT,
    HOURS,
    MAX_ATTAINMENT,
    MAX_DAILY_REQUESTS,
    MAX_PER_DAY,
    MAX_PER_HOUR,
    MAX_RATE_RPS,
    MAX_TOKENS,
    MAX_TPOT_MS,
    MAX_TTFT_MS,
    MAX_USD_PER_EUR,
    MIN_USD_PER_EUR,
    MIN_UTILIZATION,
    SHAPES,
    CarbonPrice,
    GpuOffer,
    Hourly,
    HourOfDay,
    HourOfDayEnd,
    Name,
    Numeric,
    Schema,
    Shape,
    Site,
    in_range,
    ranged,
    unique,
)


class TrafficClass(Schema):
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
    _quiet_fields = (("attainment", None), ("fallback", False))

    name: Name
    rate_rps: ranged(0, MAX_RATE_RPS, strict_low=True) | None = Field(
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
    daily_requests: ranged(0, MAX_DAILY_REQUESTS, strict_low=True) | None = Field(
        default=None,
        description="A volume class (a nightly job, a backfill): this many requests a day, "
        "served inside `window_hours`; the planner chooses how many in each hour.",
    )
    window_hours: tuple[HourOfDay, HourOfDayEnd] | None = Field(
        default=None,
        description="[start, end] hours of a volume class's window, end exclusive; it wraps "
        "past midnight when end <= start ([22, 6] is 22:00 to 06:00; [0, 0] the whole day, the "
        "default).",
    )
    model: Name | None = Field(
        default=None, description="The LLM this class is served by (default: the scenario's)."
    )
    burstiness: Annotated[float, Numeric, Field(ge=1, le=3600, allow_inf_nan=False)] | None = Field(
        default=None,
        description="Peak 1-minute rate over the hour's mean (`fleetplan workload`), 1 to 3,600; "
        "planned for only where the scenario's plan_bursts is true.",
    )
    ttft_p99_ms: ranged(0, MAX_TTFT_MS, strict_low=True) | None = Field(
        default=None, description="P99 time to first token (ms), at most 3,600,000 (an hour)."
    )
    tpot_p99_ms: ranged(0, MAX_TPOT_MS, strict_low=True) | None = Field(
        default=None, description="P99 time per output token (ms), at most 60,000 (a minute)."
    )
    dataset: Name | None = Field(default=None, description="Benchmark dataset of this traffic.")
    input_len: Annotated[int, Numeric, Field(ge=1, le=MAX_TOKENS)] | None = Field(
        default=None, description="Input tokens per request, 1 to 10,000,000."
    )
    output_len: Annotated[int, Numeric, Field(ge=1, le=MAX_TOKENS)] | None = Field(
        default=None, description="Output tokens per request, 1 to 10,000,000."
    )
    attainment: (
        Annotated[float, Numeric, Field(gt=0, le=MAX_ATTAINMENT, allow_inf_nan=False)] | None
    ) = Field(
        default=None,
        description="The probability that the class's demand is served at its targets at a "
        "random moment (e.g. 0.999), above 0 and at most 0.999999; null: pools are sized "
        "to their load only (planner.availability.probability).",
    )
    fallback: bool = Field(
        default=False,
        description="True: the class's pools cover for each other (the router sends a pool's "
        "excess to the class's other pools), so the plan sizes them together; False: each "
        "pool must carry its own share.",
    )

    @field_validator("hourly_rps")
    @classmethod
    def _rates_range(cls, values: list[float] | None) -> list[float] | None:
        return in_range(values, MAX_RATE_RPS)

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
    def traffic_asked(self) -> tuple[str | None, int | None, int | None]:
        """(dataset, input_len, output_len): all that chooses the measured points the class's
        capacities rest on (`capacity.rules.points_for_class`); classes that ask the same share
        them."""
        return (self.dataset, self.input_len, self.output_len)

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
    if peak > MAX_RATE_RPS:  # a volume in a short window: the rate a rate_rps may not be
        raise ValueError(f"{what} is {peak:g} req/s, over the {MAX_RATE_RPS:g} a class may ask")
    return peak


Objective = Literal["cost", "carbon"] | CarbonPrice
CapacityRule = Literal["model", "measured"]
CapacityAt = Literal["low", "mid", "high"]
# Servers planned to carry at most 80 % of their capacity: room for traffic that bursts above its
# planned peak and for the capacity model's error (docs/plan.md, "The utilisation ceiling").
DEFAULT_HEADROOM = 0.8


MAX_MODEL_CONFIGS = 50  # config.json objects a scenario may carry


class Scenario(Schema):
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
    _quiet_fields = (
        ("estimates", "off"),
        ("model_configs", None),
        ("currency", "USD"),
        ("usd_per_eur", None),
    )

    version: Annotated[Literal[1, 2], Numeric] | None = Field(
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
    max_utilization: Annotated[
        float, Numeric, Field(ge=MIN_UTILIZATION, le=1, allow_inf_nan=False)
    ] = Field(
        default=DEFAULT_HEADROOM,
        description="Headroom: the share of a server's capacity a pool is planned to carry.",
    )
    capacity_rule: CapacityRule = Field(
        default="model",
        description="How a server's capacity for a class is found: 'model', the highest rate "
        "whose P99s the configuration's latency-against-load curve predicts within the targets; "
        "'measured', the highest achieved throughput among measured levels that meet them.",
    )
    estimates: Literal["off", "fill"] = Field(
        default="off",
        description="'off' (the default): only measured configurations are planned; 'fill': "
        "every offered GPU the model was not measured on gets a capacity estimated by the "
        "serving model calibrated on the warehouse (or a measured model of identical "
        "architecture's), labelled per pool with its error band.",
    )
    model_configs: (
        Annotated[dict[Name, dict[str, Any]], Field(max_length=MAX_MODEL_CONFIGS)] | None
    ) = Field(
        default=None,
        description="Hugging Face config.json objects, by model id, of models fleetplan has no "
        "shape for (not in sample_data/models/architectures.toml): with estimates 'fill', a "
        "model nobody measured is planned on estimates from its config.json. At most 50.",
    )
    capacity_at: CapacityAt = Field(
        default="low",
        description="Which end of each capacity's interval the plan rests on: 'low' (the "
        "default: what the data proves), 'mid' (the rule's own estimate) or 'high' (the most "
        "it allows).",
    )
    budget_usd_per_hour: ranged(0, MAX_PER_HOUR) | None = Field(
        default=None, description="The most the fleet may cost (USD/h), 0 to 1e9."
    )
    carbon_cap_kg_per_hour: ranged(0, MAX_PER_HOUR) | None = Field(
        default=None, description="The most CO2e the fleet may emit (kg/h), 0 to 1e9."
    )
    budget_usd_per_day: ranged(0, MAX_PER_DAY) | None = Field(
        default=None, description="The most the fleet may cost in a day (USD), 0 to 2.4e10."
    )
    carbon_cap_kg_per_day: ranged(0, MAX_PER_DAY) | None = Field(
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
    time_limit_s: Annotated[float, Numeric, Field(gt=0, le=3600)] = 10.0
    currency: Literal["USD", "EUR"] = Field(
        default="USD",
        description="The currency the Plan page shows and takes prices in: 'USD' (the "
        "default) or 'EUR', converted at usd_per_eur. The scenario's money fields (`*_usd*`) "
        "are USD whatever it says; the plan's figures too.",
    )
    usd_per_eur: ranged(MIN_USD_PER_EUR, MAX_USD_PER_EUR) | None = Field(
        default=None,
        description="The exchange rate the page converts EUR at (USD per EUR, 0.1 to 10), shown "
        "in the plan's sources; needed where currency is 'EUR'.",
    )

    @field_validator("timezone")
    @classmethod
    def _zone(cls, zone: str) -> str:
        try:
            ZoneInfo(zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"{zone!r} is not a known timezone (e.g. 'UTC', 'Europe/Paris')"
            ) from None
        if zone not in _iana_zones():  # posix/..., right/..., localtime: the host's files
            raise ValueError(
                f"{zone!r} is not an IANA timezone name (e.g. 'UTC', 'Europe/Paris'): names "
                "such as 'localtime' or 'posix/...' depend on the host"
            )
        return zone

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        if self.currency == "EUR" and self.usd_per_eur is None:
            raise ValueError("currency 'EUR' needs usd_per_eur, the rate prices are converted at")
        unique([c.name for c in self.classes], "classes", "name")
        for i, traffic in enumerate(self.classes):
            planned = (traffic.rate_rps or 0.0) * self.burst_factor(traffic)
            if planned > MAX_RATE_RPS:
                raise ValueError(
                    f"classes[{i}]: its peak rate times its burstiness (plan_bursts) is "
                    f"{planned:g} req/s, over the {MAX_RATE_RPS:g} a class may ask"
                )
        for i, gpu in enumerate(self.gpus):
            if gpu.name is None and any(g.offer_name == gpu.gpu_model for g in self.gpus[:i]):
                raise ValueError(
                    f"gpus[{i}].gpu_model {gpu.gpu_model!r} appears twice: to offer one GPU "
                    "twice (reserved and on demand), give each offer a name"
                )
        unique([g.offer_name for g in self.gpus], "gpus", "name")
        for i, gpu in enumerate(self.gpus):
            if gpu.offer_name.endswith(BOUGHT):
                raise ValueError(
                    f"gpus[{i}].name {gpu.offer_name!r}: a name ending {BOUGHT.strip()!r} is the "
                    "planner's, for the GPUs bought beyond an owned offer's"
                )
        unique([s.name for s in self.sites], "sites", "name")
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

    def as_planned(self) -> Scenario:
        """The scenario as the planner plans it: each owned offer as its owned GPUs and, where
        more may be bought, those (`GpuOffer.as_planned`); unchanged without owned offers."""
        if all(g.owned_count is None for g in self.gpus):
            return self
        return self.model_copy(update={"gpus": [o for g in self.gpus for o in g.as_planned()]})

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


@cache
def _iana_zones() -> frozenset[str]:
    """The IANA names zoneinfo knows, without the host-dependent ones."""
    hosts = ("posix/", "right/")
    return frozenset(
        z
        for z in available_timezones()
        if not z.startswith(hosts) and z not in {"localtime", "posixrules", "Factory"}
    )
