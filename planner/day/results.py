"""What a day plan says (the plan JSON's `day`, the schedule CSV): field names are public, rename
none without a note."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from fleetplan.planner.peak.results import PlanStatus


class _Out(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, serialize_by_alias=True, populate_by_name=True
    )


class Serving(_Out):
    """Servers of one configuration under one offer serving one class in one hour."""

    offer: str
    gpu_model: str
    gpus_per_server: int
    traffic_class: str = Field(alias="class")
    servers: int
    rate_rps: float
    servers_needed: int | None = Field(
        default=None,
        description="With availability: the servers the rate needs, all up (the rest are "
        "spares for the class's attainment); left out of the JSON otherwise.",
    )
    basis: str = Field(
        default="measured",
        description="Where the configuration's capacity comes from: 'measured', 'identical "
        "architecture' or 'estimated' (a scenario's estimates 'fill'); left out of the JSON where "
        "'measured'.",
    )

    @model_serializer(mode="wrap")
    def _quiet_basis(self, handler):
        data = handler(self)
        if isinstance(data, dict) and data.get("basis") == "measured":
            del data["basis"]
        if isinstance(data, dict) and data.get("servers_needed") is None:
            data.pop("servers_needed", None)
        return data


class Servers(_Out):
    """Servers of one configuration under one offer (reserved: all day; on demand: in an hour)."""

    offer: str
    commitment: str
    gpu_model: str
    gpus_per_server: int
    servers: int
    gpus: int


class HourPlan(_Out):
    """One hour of the day: which servers serve which class, and what the hour costs."""

    hour: int = Field(description="0-23 in the scenario's timezone.")
    pools: list[Serving]
    on_demand: list[Servers] = Field(description="On-demand servers rented this hour.")
    idle_reserved_servers: int = Field(description="Reserved servers serving no class.")
    demand_rps: dict[str, float] = Field(
        description="Each class's rate this hour (a volume class: what the plan serves)."
    )
    grid_gco2_per_kwh: dict[str, float] = Field(description="Each site's grid this hour.")
    cost_usd: float
    energy_kwh: float | None = Field(description="Facility energy (GPUs x PUE) this hour.")
    kgco2e: float | None


class DayShare(_Out):
    """What one class gets of one configuration under one offer through the day."""

    traffic_class: str = Field(alias="class")
    model: str = Field(description="The class's model (the scenario's, or the class's own).")
    server: str = Field(description="The engine the capacity was measured on, in words.")
    capacity_rps_per_server: float
    full_capacity_rps_per_server: float | None = Field(
        default=None,
        description="One server's capacity at the class's targets before the utilisation "
        "ceiling (capacity_rps_per_server = it x max_utilization): what `fleetplan simulate` "
        "lets an up server carry.",
    )
    servers_by_hour: list[int] = Field(description="Servers serving the class, hours 0-23.")
    rate_by_hour: list[float] = Field(description="The class's rate carried, hours 0-23.")
    requests: float = Field(description="Requests a day: the rates x 3,600 s, summed.")
    share: float = Field(
        description="Its share of the class's requests of the day (the router's weight)."
    )


class DayUnit(_Out):
    """One configuration under one offer through the day: what to reserve or rent, what it
    serves hour by hour and what it costs. The units' figures sum to the day's."""

    offer: str
    commitment: str
    gpu_model: str
    gpus_per_server: int
    servers: int = Field(
        description="Reserved: the servers paid every hour; on demand: the most rented in an hour."
    )
    servers_by_hour: list[int] = Field(
        description="Servers held each hour 0-23 (reserved: all of them, serving or idle)."
    )
    availability: float = Field(
        default=1.0,
        description="The offer's availability: the share of time each of its servers is up.",
    )
    gpu_hours: float
    cost_usd: float = Field(description="The unit's cost over the day (USD).")
    kgco2e: float | None = None
    energy_kwh: float | None = Field(default=None, description="Facility energy over the day.")
    monthly_cost_usd: float
    monthly_kgco2e: float | None = None
    basis: str = Field(
        default="measured",
        description="The least measured of its pools' capacities: 'measured', 'identical "
        "architecture' or 'estimated'.",
    )
    classes: list[DayShare] = Field(default_factory=list)


class DayAttainment(_Out):
    """A class's chance of being served at its targets, hour by hour (servers up independently,
    each with its offer's availability), with the spares the day adds for its target."""

    traffic_class: str = Field(alias="class")
    attainment_target: float | None = None
    fallback: bool = False
    attainment: float = Field(description="Its lowest over the hours it has traffic.")
    lowest_hour: int
    by_hour: list[float | None] = Field(description="Hours 0-23; None where it has no traffic.")


class DayFigures(_Out):
    """A fleet's day in figures, for the comparison."""

    name: str
    status: PlanStatus
    message: str
    cost_usd: float | None = None
    kgco2e: float | None = None
    monthly_cost_usd: float | None = None
    monthly_kgco2e: float | None = None
    gpu_hours: float | None = None


class DayPlan(_Out):
    """The day: reserved fleet, on-demand schedule, per-hour assignment and figures, totals per
    day and month, and the comparison with the peak plan and reserved-only."""

    status: PlanStatus
    message: str
    timezone: str
    optimality_gap: float | None = Field(
        default=None,
        description="How far the plan's objective may be above the best possible, relative to "
        "it: (objective - proven lower bound) / objective; 0 when proven optimal, None when no "
        "bound is known (or no plan).",
    )
    cost_usd: float | None = Field(default=None, description="The day's cost (USD).")
    kgco2e: float | None = Field(default=None, description="The day's carbon (kgCO2e).")
    energy_kwh: float | None = None
    monthly_cost_usd: float | None = None
    monthly_kgco2e: float | None = None
    gpu_hours: float | None = None
    reserved: list[Servers] = Field(default_factory=list)
    fleet: list[DayUnit] = Field(
        default_factory=list,
        description="Each configuration under each offer the day uses, with its classes hour "
        "by hour and its share of the day's figures (what the exports, the router and the "
        "deployment files are written from).",
    )
    schedule: list[HourPlan] = Field(default_factory=list)
    attainment: list[DayAttainment] = Field(
        default_factory=list,
        description="With availability below 1 or attainment targets: each class's attainment "
        "hour by hour (empty otherwise).",
    )
    compared: list[DayFigures] = Field(default_factory=list)
    saving_vs_peak_usd: float | None = None
    saving_vs_peak_kgco2e: float | None = None
