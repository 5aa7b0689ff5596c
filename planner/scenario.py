"""The planning scenario: what a team tells fleetplan about its traffic, prices and sites.

Public contract (JSON): field names here are what scenario files and the dashboard's download use.
Every model forbids unknown keys; every error names the field.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
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
MIN_AVAILABILITY = 0.01  # one host up 1 % of the time
MAX_ATTAINMENT = 0.999999  # six nines: 1 itself no finite fleet of flaky hosts reaches


def _bounded(low: float, high: float, *, strict_low: bool = False):
    """A finite number from `low` (excluded when `strict_low`) to `high`."""
    if strict_low:
        return Annotated[float, Field(gt=low, le=high, allow_inf_nan=False)]
    return Annotated[float, Field(ge=low, le=high, allow_inf_nan=False)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TrafficClass(_Model):
    """A kind of traffic with its own latency targets; served by pools of its own."""

    name: Name
    rate_rps: _bounded(0, MAX_RATE_RPS, strict_low=True) = Field(
        description="Peak request rate to serve (requests/s), above 0 and at most 1,000,000."
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
    attainment: Annotated[float, Field(gt=0, le=MAX_ATTAINMENT, allow_inf_nan=False)] | None = (
        Field(
            default=None,
            description="The probability that the class's demand is served at its targets at a "
            "random moment (e.g. 0.999), above 0 and at most 0.999999; null: pools are sized "
            "to their load only (planner.availability).",
        )
    )
    fallback: bool = Field(
        default=False,
        description="True: the class's pools cover for each other (the router sends a pool's "
        "excess to the class's other pools), so the plan sizes them together; False: each "
        "pool must carry its own share.",
    )

    @model_serializer(mode="wrap")
    def _without_unset_availability(self, handler):
        # A class that says nothing of attainment dumps as before these fields existed, so that
        # files and plans of scenarios without them stay byte for byte what they were.
        out = handler(self)
        if isinstance(out, dict):
            if self.attainment is None:
                out.pop("attainment", None)
            if not self.fallback:
                out.pop("fallback", None)
        return out


class GpuOffer(_Model):
    """A GPU model the fleet may use, at a price, in a site."""

    gpu_model: Name
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
    variant: Name | None = Field(
        default=None,
        description="Plan only this server variant of the GPU (the runs' free `variant` label); "
        "null: every server measured on it is a candidate.",
    )
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
    availability: _bounded(MIN_AVAILABILITY, 1) = Field(
        default=1.0,
        description="The share of time one server of this offer is up (e.g. 0.95 for a "
        "decentralised host, 0.999 for a datacenter one), 0.01 to 1; 1: always up (plans as "
        "without it). Servers are taken to fail independently (planner.availability).",
    )

    @model_serializer(mode="wrap")
    def _without_full_availability(self, handler):
        out = handler(self)  # as TrafficClass's: availability 1 dumps as before the field
        if isinstance(out, dict) and self.availability >= 1.0:
            out.pop("availability", None)
        return out

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

    def usd_per_gpu_hour(self) -> float:
        if self.hourly_usd is not None:
            return self.hourly_usd
        assert self.purchase_usd is not None and self.lifetime_years is not None
        return self.purchase_usd / (self.lifetime_years * HOURS_PER_YEAR)


GridBasis = Literal["lifecycle", "direct", "marginal", "unknown"]


class Site(_Model):
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


class CarbonPrice(_Model):
    carbon_price_usd_per_t: _bounded(0, MAX_CARBON_PRICE_USD_PER_T) = Field(
        description="Price of a tonne of CO2e (USD), 0 to 1,000,000."
    )


Objective = Literal["cost", "carbon"] | CarbonPrice
CapacityRule = Literal["model", "measured"]
CapacityAt = Literal["low", "mid", "high"]
# Servers planned to carry at most 80 % of their capacity: room for traffic that bursts above its
# planned peak and for the capacity model's error (README, "The utilisation ceiling").
DEFAULT_HEADROOM = 0.8


class Scenario(_Model):
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
    capacity_at: CapacityAt = Field(
        default="low",
        description="Which end of each capacity's interval the plan rests on: 'low' (the "
        "default: what the data proves), 'mid' (halfway) or 'high' (the most it allows).",
    )
    budget_usd_per_hour: _bounded(0, MAX_PER_HOUR) | None = Field(
        default=None, description="The most the fleet may cost (USD/h), 0 to 1e9."
    )
    carbon_cap_kg_per_hour: _bounded(0, MAX_PER_HOUR) | None = Field(
        default=None, description="The most CO2e the fleet may emit (kg/h), 0 to 1e9."
    )
    time_limit_s: Annotated[float, Field(gt=0, le=3600)] = 10.0

    @model_validator(mode="after")
    def _check(self) -> Scenario:
        _unique([c.name for c in self.classes], "classes", "name")
        _unique([g.gpu_model for g in self.gpus], "gpus", "gpu_model")
        _unique([s.name for s in self.sites], "sites", "name")
        sites = {s.name for s in self.sites}
        for i, gpu in enumerate(self.gpus):
            if gpu.site not in sites:
                known = ", ".join(sorted(sites))
                raise ValueError(f"gpus[{i}].site {gpu.site!r} is not defined in sites ({known})")
        return self

    def site_of(self, gpu_model: str) -> Site:
        offer = self.offer(gpu_model)
        return next(s for s in self.sites if s.name == offer.site)

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
        return next(g for g in self.gpus if g.gpu_model == gpu_model)

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
