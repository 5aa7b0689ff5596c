"""What a plan says, as the models `fleetplan plan --json`, the dashboard and the CSV export read:
a `Plan` holds the recommended `FleetPlan`, its baselines, the cost/carbon frontier
(`ParetoPoint`s) and why each class can or cannot run on each configuration (`CapacityRow`s). A
fleet is a list of `PoolPlan`s (servers of one configuration serving one class) and its `Totals`.

Field names are public (JSON and CSV columns): rename none without a migration note.
"""

from __future__ import annotations

import math
from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
)

from fleetplan.planner.peak.economics import EnergyBasis

HOURS_PER_MONTH = 730.0  # 8,760 h / 12


class PlanStatus(StrEnum):
    """A plan's status: the solver kernel's (`solve.kernel.SolveStatus`, whose every value is
    one of these: `PlanStatus(status)` is the map), or a baseline without GPUs."""

    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"
    INFEASIBLE = "infeasible"
    NOT_APPLICABLE = "not_applicable"  # a baseline the scenario offers no GPUs for
    ERROR = "error"


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# Fields only a plan with availability fills (planner.availability.plan_available); None elsewhere,
# and then left out of the dump, so that a plan without availability is byte for byte what it was.
_AVAILABILITY_FIELDS = ("servers_needed", "availability", "probability", "classes")


def _drop_unset_availability(out: object) -> object:
    if isinstance(out, dict):
        for key in (*_AVAILABILITY_FIELDS, "estimate_error"):
            if key in out and out[key] is None:
                del out[key]
        if out.get("basis") == "measured":  # written out only for a pool resting on estimates
            del out["basis"]
    return out


class PoolPlan(_Out):
    """Servers of one configuration serving one class."""

    traffic_class: str
    gpu_model: str
    gpus_per_server: int
    server: str = Field(
        default="",
        description="How the GPUs serve the model: engine, engine version, dtype, tensor "
        "parallelism and the runs' free variant label, in words; empty where the runs say none.",
    )
    servers: int
    gpus: int
    rate_rps: float
    capacity_rps_per_server: float = Field(
        description="What one server is planned to carry: its capacity after the utilisation "
        "ceiling (full_capacity_rps_per_server x max_utilization)."
    )
    full_capacity_rps_per_server: float | None = Field(
        default=None,
        description="One server's capacity before the utilisation ceiling: what `utilization` "
        "is measured against.",
    )
    capacity_low_rps_per_server: float | None = Field(
        default=None,
        description="The low end of one server's capacity interval (after the ceiling, as "
        "capacity_rps_per_server); the plan rests on the end the scenario's capacity_at names.",
    )
    capacity_high_rps_per_server: float | None = Field(
        default=None, description="The high end of that interval."
    )
    utilization: float = Field(
        description="Carried rate over the servers' capacity before the utilisation ceiling "
        "(rate_rps / (servers x full_capacity_rps_per_server))."
    )
    hourly_cost_usd: float
    monthly_cost_usd: float
    power_kw: float | None = Field(description="The GPUs' power, before PUE.")
    gpu_energy_kwh_month: float | None = Field(
        description="The GPUs' energy in a month, before PUE (power_kw x 730 h)."
    )
    facility_energy_kwh_month: float | None = Field(
        default=None,
        description="gpu_energy_kwh_month x the site's PUE: the energy cost and operational "
        "carbon are computed from.",
    )
    operational_kgco2e_month: float | None
    embodied_kgco2e_month: float | None = Field(
        description="Embodied carbon of the GPUs and their host servers, amortised per month."
    )
    host_embodied_kgco2e_month: float | None = Field(
        default=None,
        description="The host servers' part of embodied_kgco2e_month; None where unknown (then "
        "embodied_kgco2e_month counts the GPUs only).",
    )
    energy_basis: EnergyBasis
    output_tokens_per_s: float | None
    total_tokens_per_s: float | None
    level_offered_rate_rps: float | None
    level_throughput_rps: float
    level_sustained_rps: float | None = Field(
        default=None,
        description="The rate the level's arrivals prove, drain excluded (the offered rate where "
        "it kept up; else what its completions prove); None where the level was not judged. "
        "level_throughput_rps counts the whole run, drain included.",
    )
    level_ttft_p99_ms: float | None
    level_tpot_p99_ms: float | None
    level_source_file: str
    behind: bool = Field(description="The level's server fell behind its offered load.")
    basis: Literal["measured", "identical architecture", "estimated"] = Field(
        default="measured",
        description="Where the configuration's levels come from: 'measured' (its own runs), "
        "'identical architecture' (a measured model of the same shape), 'estimated' (the "
        "serving model calibrated on the warehouse: see estimate_error). Left out of the "
        "JSON where 'measured', so a plan of measured pools reads as it always did.",
    )
    estimate_error: dict[str, list[float] | str | None] | None = Field(
        default=None,
        description="For an estimated pool: the validation's relative error band (P10, P90 of "
        "predicted / measured - 1) of saturation, P99 TTFT and P99 TPOT, its kind, and which "
        "GPU's coefficients it borrows; None for a measured pool.",
    )
    capacity_basis: str = Field(
        default="measured rule",
        description="What the capacity rests on: 'model: at a measured level' or 'model: "
        "interpolated' (the latency-against-load curve), 'measured rule' (asked for), or 'measured "
        "rule: why' (the curve could not say, so today's rule).",
    )
    predicted_ttft_p99_ms: float | None = Field(
        default=None,
        description="P99 TTFT the curve predicts at the pool's load per server (rate / servers);"
        " None where it says nothing (no curve, or above the highest stable level).",
    )
    predicted_tpot_p99_ms: float | None = Field(
        default=None, description="P99 TPOT predicted likewise."
    )
    level_power_w: float | None = Field(
        default=None,
        description="Measured power of one server (all its GPUs) at the level; None where not "
        "measured. With idle and rated power it is what the pool's power is computed from.",
    )
    notes: list[str] = Field(
        default_factory=list,
        description="What a reader of this pool's figures should know (e.g. idle power unknown).",
    )
    servers_needed: int | None = Field(
        default=None,
        description="Servers the pool needs, all up, at its planned load (rate over planned "
        "capacity per server, rounded up); `servers` is what is planned with spares for hosts "
        "that are down. None: a plan without availability (servers are what is needed).",
    )
    availability: float | None = Field(
        default=None, description="The share of time one server of the offer is up."
    )
    probability: float | None = Field(
        default=None,
        description="The chance the pool carries its load at a random moment: P(Binomial("
        "servers, availability) >= servers_needed), servers failing independently.",
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        return _drop_unset_availability(handler(self))

    @property
    def rate_per_server_rps(self) -> float:
        return self.rate_rps / self.servers if self.servers else 0.0

    @field_serializer("level_offered_rate_rps", when_used="json")
    def _inf(self, value: float | None) -> float | str | None:
        return "inf" if value is not None and math.isinf(value) else value


class Totals(_Out):
    """A fleet's sums; a figure stays unknown (None) when any pool's is."""

    hourly_cost_usd: float
    monthly_cost_usd: float
    servers: int
    gpus: dict[str, int]
    power_kw: float | None  # the GPUs', before PUE
    gpu_energy_kwh_month: float | None  # before PUE
    facility_energy_kwh_month: float | None = None  # x PUE: what cost and carbon rest on
    operational_kgco2e_month: float | None
    embodied_kgco2e_month: float | None  # GPUs and hosts
    host_embodied_kgco2e_month: float | None = None  # the hosts' part; None where unknown
    carbon_kgco2e_month: float | None
    output_tokens_per_s: float | None
    total_tokens_per_s: float | None
    usd_per_million_output_tokens: float | None
    usd_per_million_total_tokens: float | None
    gco2e_per_million_output_tokens: float | None
    gco2e_per_million_total_tokens: float | None
    kwh_per_million_output_tokens: float | None  # GPU energy, before PUE
    kwh_per_million_total_tokens: float | None  # GPU energy, before PUE


class ClassAttainment(_Out):
    """How often a class is served at its targets, planned against asked (a plan with
    availability)."""

    traffic_class: str
    rate_rps: float
    fallback: bool = Field(description="The class's pools cover for each other.")
    attainment_target: float | None = Field(
        description="The scenario's `attainment`: the probability asked for; None: none asked."
    )
    attainment: float = Field(
        description="The probability that the fleet serves the class at its targets at a random "
        "moment, servers failing independently (planner.availability.probability)."
    )


class FleetPlan(_Out):
    """A named fleet (the recommendation, a baseline, a frontier point); no totals without a
    plan."""

    name: str
    status: PlanStatus
    message: str
    pools: list[PoolPlan] = Field(default_factory=list)
    totals: Totals | None = None
    classes: list[ClassAttainment] | None = Field(
        default=None,
        description="Each class's attainment, in a plan with availability; None otherwise.",
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        return _drop_unset_availability(handler(self))


class ParetoPoint(_Out):
    """A fleet no other fleet beats on both cost and carbon."""

    hourly_cost_usd: float
    carbon_kg_per_hour: float
    monthly_cost_usd: float
    carbon_kgco2e_month: float
    gpus: dict[str, int]
    proven_optimal: bool = True


class CapacityRow(_Out):
    """Why a class can or cannot run on a configuration."""

    traffic_class: str
    configuration: str
    capacity_rps_per_server: float
    capacity_low_rps_per_server: float | None = None  # the interval (as PoolPlan's)
    capacity_high_rps_per_server: float | None = None
    server: str = ""  # as PoolPlan.server
    overlaps: list[str] = Field(
        default_factory=list,
        description="The other configurations for this class whose capacity intervals overlap "
        "this one's: the data does not say which of them carries more.",
    )
    level: str | None
    reason: str | None
    behind: bool
    basis: str = "measured rule"  # as PoolPlan.capacity_basis


class Plan(_Out):
    """The answer to a scenario. An infeasible scenario is a status with a message, not an
    exception."""

    scenario: str
    model: str
    objective: str
    capacity_rule: str = "model"  # the scenario's: "model" or "measured"
    capacity_at: str = "low"  # the scenario's: the end of each capacity interval planned on
    status: PlanStatus
    message: str
    recommended: FleetPlan
    baselines: list[FleetPlan] = Field(default_factory=list)
    pareto: list[ParetoPoint] = Field(default_factory=list)
    pareto_message: str | None = None
    capacities: list[CapacityRow] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    day: Any = Field(
        default=None,
        description="A day scenario's (version 2) `day_plan.DayPlan`: the plan over 24 hours; "
        "None for a version 1 scenario (planned at its peak only, as `recommended` is).",
    )

    @model_serializer(mode="wrap")
    def _without_day(self, handler: SerializerFunctionWrapHandler) -> Any:
        """A version 1 plan is written out as before version 2: without `day`."""
        data = handler(self)
        if isinstance(data, dict) and data.get("day") is None:
            data.pop("day", None)
        return data
