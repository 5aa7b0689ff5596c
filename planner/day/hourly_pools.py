"""A day's candidate pools with their coefficients in each hour, and the day's limits
(`day`'s program is built from them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fleetplan.planner.peak.economics import PoolEconomics
from fleetplan.planner.scenario.parts import HOURS, GpuOffer
from fleetplan.planner.scenario.scenario import Scenario, TrafficClass


@dataclass(frozen=True, slots=True)
class DayPool:
    """A candidate pool with its coefficients in each hour 0-23."""

    econ: PoolEconomics
    offer: GpuOffer
    traffic: TrafficClass
    usd_server: tuple[float, ...]  # per server-hour: price + energy of its fixed power
    usd_rps: tuple[float, ...]  # per carried req/s-hour: its energy
    kg_server: tuple[float | None, ...]  # per server-hour: fixed power's carbon + embodied
    kg_rps: tuple[float | None, ...]
    energy_per_kwh_usd: tuple[float, ...]  # electricity x PUE paid per GPU kWh (0: included)
    grid_kg_per_kwh: tuple[float, ...]  # PUE x grid / 1000: kg per GPU kWh
    demand: tuple[float, ...] = ()  # the class's rate to serve each hour (x its burst factor)

    @property
    def reserved(self) -> bool:
        return self.offer.commitment == "reserved"

    @property
    def capacity(self) -> float:
        return self.econ.capacity.capacity_rps

    @property
    def unit(self) -> tuple[str, str, int]:
        return (self.offer.offer_name, self.econ.gpu_model, self.econ.gpus_per_server)


def day_pools(pools: Sequence[PoolEconomics], scenario: Scenario) -> list[DayPool]:
    """The candidate pools with their hourly coefficients (an offer's hourly prices and a
    class's hourly demand worked out once, shared by its pools)."""
    classes = {c.name: c for c in scenario.classes}
    demands: dict[str, tuple[float, ...]] = {}
    offers: dict[str, tuple[GpuOffer, tuple[float, ...], tuple[float, ...]]] = {}
    result = []
    for pool in pools:
        if pool.offer_name not in offers:
            offer = scenario.offer_named(pool.offer_name)
            site = scenario.site_named(offer.site)
            energy = tuple(
                0.0 if offer.electricity_included else site.pue * site.electricity_at(h)
                for h in range(HOURS)
            )
            grid = tuple(site.pue * site.grid_at(h) / 1000 for h in range(HOURS))
            offers[pool.offer_name] = (offer, energy, grid)
        offer, energy, grid = offers[pool.offer_name]
        traffic = classes[pool.capacity.traffic_class]
        if traffic.name not in demands:
            demands[traffic.name] = _demand(scenario, traffic)
        price = offer.usd_per_gpu_hour() * pool.gpus_per_server
        kw_s, kw_r, embodied = pool.kw_per_server, pool.kw_per_rps, pool.embodied_kg_per_server_hour
        known = kw_s is not None and kw_r is not None and embodied is not None
        result.append(
            DayPool(
                econ=pool,
                offer=offer,
                traffic=traffic,
                usd_server=tuple(price + (kw_s or 0.0) * e for e in energy),
                usd_rps=tuple((kw_r or 0.0) * e for e in energy),
                kg_server=tuple((kw_s * g + embodied) if known else None for g in grid),
                kg_rps=tuple((kw_r * g) if known else None for g in grid),
                energy_per_kwh_usd=energy,
                grid_kg_per_kwh=grid,
                demand=demands[traffic.name],
            )
        )
    return result


def _demand(scenario: Scenario, traffic: TrafficClass) -> tuple[float, ...]:
    factor = scenario.burst_factor(traffic)
    return tuple(r * factor for r in traffic.hourly_demand())


@dataclass(frozen=True, slots=True)
class DayLimits:
    """The scenario's limits in the day's terms: GPUs per offer (a reserved offer's in all, an
    on-demand offer's in each hour), budget and carbon per hour and per day."""

    max_gpus: dict[str, int]
    budget_usd_per_hour: float | None = None
    carbon_cap_kg_per_hour: float | None = None
    budget_usd_per_day: float | None = None
    carbon_cap_kg_per_day: float | None = None
    min_gpus: dict[str, int] = field(default_factory=dict)  # an owned (reserved) offer's

    @classmethod
    def of(cls, scenario: Scenario) -> DayLimits:
        return cls(
            min_gpus={g.offer_name: g.min_gpus for g in scenario.gpus if g.min_gpus},
            max_gpus={g.offer_name: g.max_gpus for g in scenario.gpus if g.max_gpus is not None},
            budget_usd_per_hour=scenario.budget_usd_per_hour,
            carbon_cap_kg_per_hour=scenario.carbon_cap_kg_per_hour,
            budget_usd_per_day=scenario.budget_usd_per_day,
            carbon_cap_kg_per_day=scenario.carbon_cap_kg_per_day,
        )

    @property
    def daily(self) -> bool:
        return self.budget_usd_per_day is not None or self.carbon_cap_kg_per_day is not None
