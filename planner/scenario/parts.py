"""The parts of a scenario (`scenario.Scenario`): bounds, names, GPU offers, sites and the
carbon price. Public contract as in `scenario`."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from fleetplan.core.gpus import canonical_gpu
from fleetplan.core.text import PlainName, look_alike_key

HOURS_PER_YEAR = 8760.0

# Names reach output (tables, CSV, the terminal): one line of plain text (fleetplan.core.text).
Name = Annotated[str, Field(min_length=1, max_length=200), PlainName]


def _a_number(value: Any) -> Any:
    """A number as JSON writes one: true/false and text such as "3" are refused (pydantic's lax
    mode read true as 1 and "500" as 500, so `"budget_usd_per_day": true` was a $1 budget)."""
    if isinstance(value, bool | str):
        kind = "true/false" if isinstance(value, bool) else "text"
        raise ValueError(f"a number is needed here, not {kind} ({value!r})")
    return value


Numeric = BeforeValidator(_a_number)
NonNegative = Annotated[float, Numeric, Field(ge=0, allow_inf_nan=False)]
Positive = Annotated[float, Numeric, Field(gt=0, allow_inf_nan=False)]

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
MIN_UTILIZATION = 0.01  # the utilisation ceiling's least: 1e-300 sized servers past any float
MIN_USD_PER_EUR, MAX_USD_PER_EUR = 0.1, 10.0  # an exchange rate, well around any seen
MAX_USD_PER_KWH = 10.0  # electricity (retail prices are below 1)
MAX_GCO2_PER_KWH = 2_000.0  # grid intensity (coal is about 1,000)
MAX_KGCO2E_PER_GPU = 100_000.0  # embodied carbon of one GPU (estimates are hundreds of kg)
MAX_KGCO2E_PER_HOST = 100_000.0  # embodied carbon of one server's host (peers: 5,700 kg)
MAX_GPU_W = 10_000.0  # one GPU's power
MAX_CARBON_PRICE_USD_PER_T = 1_000_000.0
MAX_PER_HOUR = 1e9  # a budget (USD/h) or a carbon cap (kg/h)
MAX_PER_DAY = 24 * MAX_PER_HOUR  # a budget (USD/day) or a carbon cap (kg/day)
MIN_AVAILABILITY = 0.01  # one host up 1 % of the time
MAX_ATTAINMENT = 0.999999  # six nines: 1 itself no finite fleet of flaky hosts reaches
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
    list[Annotated[float, Numeric, Field(ge=0, allow_inf_nan=False)]],
    Field(min_length=HOURS, max_length=HOURS),
]
HourOfDay = Annotated[int, Numeric, Field(ge=0, le=23)]
HourOfDayEnd = Annotated[int, Numeric, Field(ge=0, le=24)]


def ranged(low: float, high: float, *, strict_low: bool = False):
    """A finite number from `low` (excluded when `strict_low`) to `high`."""
    if strict_low:
        return Annotated[float, Numeric, Field(gt=low, le=high, allow_inf_nan=False)]
    return Annotated[float, Numeric, Field(ge=low, le=high, allow_inf_nan=False)]


class Schema(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    # Fields of scenario version 2, written out only where they say something (a version 1
    # scenario writes out, and so exports, exactly what it did before version 2 existed).
    _day_fields: ClassVar[tuple[tuple[str, object], ...]] = ()
    # Fields of either version written out likewise only where they say something (a server
    # variant, availability, attainment): a scenario without them dumps as before they existed.
    _quiet_fields: ClassVar[tuple[tuple[str, object], ...]] = ()

    @model_serializer(mode="wrap")
    def _without_unused_day_fields(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            for name, default in (*self._day_fields, *self._quiet_fields):
                if name in data and data[name] == default:
                    del data[name]
        return data


Commitment = Literal["reserved", "on_demand"]
OwnedCapital = Literal["sunk", "amortised"]
OwnedUse = Literal["minimum", "exact"]
BOUGHT = " (more, bought)"  # the name of the part of an owned offer bought beyond the owned


class GpuOffer(Schema):
    """A GPU model the fleet may use, at a price, in a site: reserved (paid every hour, whether
    its servers serve or not) or on demand (paid in the hours a server runs)."""

    # Written out only where they say something (a version 1 offer dumps as it always did).
    _day_fields = (("name", None), ("commitment", "reserved"))
    _quiet_fields = (
        ("variant", None),
        ("availability", 1.0),
        ("owned_count", None),
        ("owned_capital", "sunk"),
        ("owned_use", "minimum"),
    )

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
    hourly_usd: ranged(0, MAX_HOURLY_USD) | None = Field(
        default=None, description="Price per GPU-hour (USD), 0 to 1,000."
    )
    purchase_usd: ranged(0, MAX_PURCHASE_USD) | None = Field(
        default=None, description="Price of one GPU (USD), 0 to 1,000,000."
    )
    lifetime_years: ranged(MIN_LIFETIME_YEARS, MAX_LIFETIME_YEARS) | None = Field(
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
    max_gpus: Annotated[int, Numeric, Field(ge=0, le=MAX_GPUS)] | None = Field(
        default=None, description="The most GPUs of this offer, 0 to 10,000,000; null: no limit."
    )
    include_embodied: bool = Field(
        default=True,
        description="False for hardware that already exists and would sit idle (its manufacture "
        "is not caused by this fleet).",
    )
    embodied_kgco2e: ranged(0, MAX_KGCO2E_PER_GPU) | None = Field(
        default=None, description="Overrides the catalog (kg CO2e per GPU, 0 to 100,000)."
    )
    host_embodied_kgco2e: ranged(0, MAX_KGCO2E_PER_HOST) | None = Field(
        default=None,
        description="Embodied carbon of one server's host (chassis, CPUs, memory, storage; kg "
        "CO2e per server whatever its GPU count, 0 to 100,000). Overrides the catalog's host "
        "share per GPU x GPUs per server.",
    )
    idle_w: ranged(0, MAX_GPU_W) | None = Field(
        default=None, description="Overrides the catalog (W per GPU, 0 to 10,000)."
    )
    rated_w: ranged(0, MAX_GPU_W, strict_low=True) | None = Field(
        default=None, description="Overrides the catalog (W per GPU, above 0, at most 10,000)."
    )
    owned_count: Annotated[int, Numeric, Field(ge=1, le=MAX_GPUS)] | None = Field(
        default=None,
        description="GPUs of this offer already owned (1 to 10,000,000): the plan uses them "
        "first, at least this many ('minimum') or exactly these ('exact', owned_use); more of "
        "them are bought at purchase_usd where the use is 'minimum' and a purchase price is "
        "given, else none. A reserved offer.",
    )
    owned_capital: OwnedCapital = Field(
        default="sunk",
        description="What the owned GPUs' purchase costs the plan: 'sunk' (already spent: "
        "nothing, only their electricity and upkeep), or 'amortised' (purchase_usd over "
        "lifetime_years, every hour, as a bought GPU).",
    )
    owned_use: OwnedUse = Field(
        default="minimum",
        description="'minimum': the plan keeps every owned GPU and may buy more (at "
        "purchase_usd); 'exact': the plan's GPUs of this offer are the owned ones, no more.",
    )
    availability: ranged(MIN_AVAILABILITY, 1) = Field(
        default=1.0,
        description="The share of time one server of this offer is up (e.g. 0.95 for a "
        "decentralised host, 0.999 for a datacenter one), 0.01 to 1; 1: always up (plans as "
        "without it). Servers are taken to fail independently (planner.availability.probability).",
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
        owned = self.owned_count is not None
        if owned:
            self._check_owned()
        elif self.owned_capital != "sunk" or self.owned_use != "minimum":
            raise ValueError("owned_capital and owned_use are for owned GPUs: give owned_count")
        if self.hourly_usd is None and not bought and not owned:
            raise ValueError("give hourly_usd, or purchase_usd with lifetime_years")
        if self.hourly_usd is not None and bought:
            raise ValueError("give hourly_usd or purchase_usd, not both")
        if bought and self.lifetime_years is None:
            raise ValueError("purchase_usd needs lifetime_years")
        if self.idle_w is not None and self.rated_w is not None and self.idle_w > self.rated_w:
            raise ValueError(f"idle_w ({self.idle_w}) exceeds rated_w ({self.rated_w})")
        return self

    def _check_owned(self) -> None:
        if self.commitment != "reserved":
            raise ValueError("owned GPUs are reserved (paid for, there every hour): not on_demand")
        if self.hourly_usd is not None:
            raise ValueError(
                "owned GPUs are not rented: give their purchase_usd and lifetime_years (or "
                "neither, their capital being sunk), not hourly_usd"
            )
        if self.owned_capital == "amortised" and self.purchase_usd is None:
            raise ValueError("owned_capital 'amortised' needs purchase_usd and lifetime_years")
        if self.max_gpus is not None and self.max_gpus < self.owned_count:
            raise ValueError(
                f"max_gpus ({self.max_gpus}) is below owned_count ({self.owned_count}): the "
                "plan uses every owned GPU"
            )

    @property
    def offer_name(self) -> str:
        return self.name or self.gpu_model

    @property
    def min_gpus(self) -> int | None:
        """The fewest GPUs of this offer the plan may use: the owned ones, where owned."""
        return self.owned_count

    def usd_per_gpu_hour(self) -> float:
        if self.hourly_usd is not None:
            return self.hourly_usd
        if self.owned_count is not None and self.owned_capital == "sunk":
            return 0.0  # spent already: the plan pays only their electricity
        assert self.purchase_usd is not None and self.lifetime_years is not None
        return self.purchase_usd / (self.lifetime_years * HOURS_PER_YEAR)

    def as_planned(self) -> list[GpuOffer]:
        """The offers the planner plans with: an owned offer as its owned GPUs (at least and
        at most `owned_count`, priced by `owned_capital`) and, where the use is 'minimum' and
        a purchase price is given, the same GPU bought beyond them (named with `BOUGHT`, at
        the purchase price, within what max_gpus leaves); any other offer as it is."""
        if self.owned_count is None:
            return [self]
        owned = self.model_copy(update={"max_gpus": self.owned_count})
        if self.owned_use == "exact" or self.purchase_usd is None:
            return [owned]
        more = None if self.max_gpus is None else self.max_gpus - self.owned_count
        if more == 0:
            return [owned]
        bought = self.model_copy(
            update={
                "name": f"{self.offer_name}{BOUGHT}",
                "owned_count": None,
                "owned_capital": "sunk",
                "owned_use": "minimum",
                "max_gpus": more,
            }
        )
        return [owned, bought]


GridBasis = Literal["lifecycle", "direct", "marginal", "unknown"]


def in_range(values: list[float] | None, high: float) -> list[float] | None:
    for hour, value in enumerate(values or ()):
        if not (0 <= value <= high) or value != value:
            raise ValueError(f"hour {hour}: {value!r} is outside 0 to {high:g}")
    return values


class Site(Schema):
    _day_fields = (("hourly_grid_gco2_per_kwh", None), ("hourly_electricity_usd_per_kwh", None))

    name: Name
    electricity_usd_per_kwh: ranged(0, MAX_USD_PER_KWH) = Field(
        description="Electricity price (USD/kWh), 0 to 10."
    )
    grid_gco2_per_kwh: ranged(0, MAX_GCO2_PER_KWH) = Field(
        description="Grid carbon intensity (gCO2e/kWh), 0 to 2,000."
    )
    pue: Annotated[float, Numeric, Field(ge=1, le=5, allow_inf_nan=False)] = 1.0
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
        return in_range(values, MAX_GCO2_PER_KWH)

    @field_validator("hourly_electricity_usd_per_kwh")
    @classmethod
    def _price_range(cls, values: list[float] | None) -> list[float] | None:
        return in_range(values, MAX_USD_PER_KWH)

    def grid_at(self, hour: int) -> float:
        hourly = self.hourly_grid_gco2_per_kwh
        return self.grid_gco2_per_kwh if hourly is None else hourly[hour]

    def electricity_at(self, hour: int) -> float:
        hourly = self.hourly_electricity_usd_per_kwh
        return self.electricity_usd_per_kwh if hourly is None else hourly[hour]


class CarbonPrice(Schema):
    carbon_price_usd_per_t: ranged(0, MAX_CARBON_PRICE_USD_PER_T) = Field(
        description="Price of a tonne of CO2e (USD), 0 to 1,000,000."
    )


def unique(values: list[str], where: str, field: str) -> None:
    """No two names alike to a reader (`core.text.look_alike_key`: case, spaces, look-alike
    letters and Unicode forms ignored), and none blank or padded with spaces."""
    seen: dict[str, str] = {}
    for i, value in enumerate(values):
        if not value.strip() or value != value.strip():
            raise ValueError(f"{where}[{i}].{field} {value!r}: no blank name, no spaces around it")
        key = look_alike_key(value)
        if key in seen:
            if seen[key] == value:
                raise ValueError(f"{where}[{i}].{field} {value!r} appears twice")
            raise ValueError(
                f"{where}[{i}].{field} {value!r} looks like {seen[key]!r}: give names a reader "
                "can tell apart"
            )
        seen[key] = value
