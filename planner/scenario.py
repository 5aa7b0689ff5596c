"""The planning scenario: what a team tells fleetplan about its traffic, prices and sites.

Public contract (JSON): field names here are what scenario files and the dashboard's download use.
Every model forbids unknown keys; every error names the field.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fleetplan.core.gpus import canonical_gpu

HOURS_PER_YEAR = 8760.0

Name = Annotated[str, Field(min_length=1, max_length=200)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TrafficClass(_Model):
    """A kind of traffic with its own latency targets; served by pools of its own."""

    name: Name
    rate_rps: Positive = Field(description="Peak request rate to serve (requests/s).")
    ttft_p99_ms: Positive | None = Field(default=None, description="P99 time to first token.")
    tpot_p99_ms: Positive | None = Field(default=None, description="P99 time per output token.")
    dataset: Name | None = Field(default=None, description="Benchmark dataset of this traffic.")
    input_len: Annotated[int, Field(ge=1)] | None = None
    output_len: Annotated[int, Field(ge=1)] | None = None


class GpuOffer(_Model):
    """A GPU model the fleet may use, at a price, in a site."""

    gpu_model: Name
    hourly_usd: NonNegative | None = Field(default=None, description="Price per GPU-hour.")
    purchase_usd: NonNegative | None = Field(default=None, description="Price of one GPU.")
    lifetime_years: Positive | None = Field(
        default=None, description="Amortisation period of a purchase (and of embodied carbon)."
    )
    electricity_included: bool = Field(
        default=True, description="True for rented capacity; False adds energy x PUE x price."
    )
    site: Name
    max_gpus: Annotated[int, Field(ge=0)] | None = None
    include_embodied: bool = Field(
        default=True,
        description="False for hardware that already exists and would sit idle (its manufacture "
        "is not caused by this fleet).",
    )
    embodied_kgco2e: NonNegative | None = Field(default=None, description="Overrides the catalog.")
    idle_w: NonNegative | None = Field(default=None, description="Overrides the catalog.")
    rated_w: Positive | None = Field(default=None, description="Overrides the catalog.")

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


class Site(_Model):
    name: Name
    electricity_usd_per_kwh: NonNegative
    grid_gco2_per_kwh: NonNegative
    pue: Annotated[float, Field(ge=1, le=5, allow_inf_nan=False)] = 1.0


class CarbonPrice(_Model):
    carbon_price_usd_per_t: NonNegative


Objective = Literal["cost", "carbon"] | CarbonPrice
CapacityRule = Literal["model", "measured"]
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
    budget_usd_per_hour: NonNegative | None = None
    carbon_cap_kg_per_hour: NonNegative | None = None
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
