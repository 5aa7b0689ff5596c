"""Money, power and carbon of a server pool: the linear coefficients the program optimises.

Per pool of one configuration serving one class, with s servers carrying r req/s:
- power (kW) = s x fixed_kw + r x per_rps_kw, where power rises linearly from idle (no load) to
  the measured server power at the measured level's throughput X ("measured"), or to the GPUs'
  rated power there ("modelled": n x idle_w + r / X x n x (rated_w - idle_w)); "unknown" when
  neither measured power nor idle and rated power are known;
- cost ($/h) = s x n x price per GPU-hour, plus energy x PUE x electricity price where
  electricity is not included in the price;
- operational carbon (kg/h) = energy x PUE x grid intensity; embodied carbon (kg/h) = s x (n x
  embodied kgCO2e per GPU + the host's share per server) / (lifetime x 8,760 h), calendar
  amortisation, unless switched off. The host's share is the offer's per server figure, else the
  catalog's share per GPU x n; where neither is known the GPUs alone are counted, with a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.configuration import Capacity, Level
from fleetplan.planner.scenario.parts import HOURS_PER_YEAR, GpuOffer
from fleetplan.planner.scenario.scenario import Scenario


class EnergyBasis(StrEnum):
    MEASURED = "measured"
    MODELLED = "modelled"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class GpuFacts:
    """Reference figures of a GPU model (from the catalog), each with where it came from."""

    gpu_model: str
    rated_w: float | None = None
    idle_w: float | None = None
    embodied_kgco2e: float | None = None
    host_embodied_kgco2e_per_gpu: float | None = None  # the host server's share, per GPU slot
    lifetime_years: float | None = None
    sources: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PoolEconomics:
    """Per-server and per-(req/s) coefficients of one candidate pool."""

    capacity: Capacity
    gpus_per_server: int
    usd_per_server_hour: float  # GPUs' price plus idle energy where electricity is not included
    usd_per_rps_hour: float  # energy of the carried load where electricity is not included
    kw_per_server: float | None
    kw_per_rps: float | None
    kg_per_server_hour: float | None  # operational at idle + embodied
    kg_per_rps_hour: float | None
    embodied_kg_per_server_hour: float | None  # GPUs and host
    energy_basis: EnergyBasis
    notes: tuple[str, ...] = ()
    host_embodied_kg_per_server_hour: float | None = None  # the host's part of the above
    pue: float = 1.0  # the site's: facility energy = GPU energy x PUE
    offer: str | None = None  # the offer's name where it is not the GPU model's

    @property
    def gpu_model(self) -> str:
        return self.capacity.configuration.gpu_model

    @property
    def offer_name(self) -> str:
        return self.offer or self.gpu_model


def _effective(
    scenario: Scenario, facts: dict[str, GpuFacts], gpu_model: str, offer: GpuOffer | None = None
) -> dict:
    offer = offer or scenario.offer(gpu_model)
    known = facts.get(gpu_model, GpuFacts(gpu_model))
    return {
        "idle_w": offer.idle_w if offer.idle_w is not None else known.idle_w,
        "rated_w": offer.rated_w if offer.rated_w is not None else known.rated_w,
        "embodied_kg": (
            offer.embodied_kgco2e if offer.embodied_kgco2e is not None else known.embodied_kgco2e
        ),
        "lifetime_years": offer.lifetime_years or known.lifetime_years,
        "host_per_gpu": known.host_embodied_kgco2e_per_gpu,
        "host_per_server": offer.host_embodied_kgco2e,
    }


def host_kg_per_server(figures: dict, n: int) -> float | None:
    """The host's embodied kgCO2e per server: the offer's, else the catalog's per GPU x n."""
    if figures["host_per_server"] is not None:
        return figures["host_per_server"]
    per_gpu = figures["host_per_gpu"]
    return None if per_gpu is None else per_gpu * n


def pool_economics(
    capacity: Capacity,
    scenario: Scenario,
    facts: dict[str, GpuFacts],
    offer: GpuOffer | None = None,
) -> PoolEconomics:
    """The pool's coefficients under `offer` (default: the GPU model's first offer)."""
    config = capacity.configuration
    n = config.gpus_per_server
    offer = offer or scenario.offer(config.gpu_model)
    site = scenario.site_named(offer.site)
    figures = _effective(scenario, facts, config.gpu_model, offer)
    level = capacity.level
    assert level is not None, "pools exist only where a level passes the targets"
    idle_w, rated_w = figures["idle_w"], figures["rated_w"]
    basis, fixed_kw, per_rps_kw, notes = _power(level, n, idle_w=idle_w, rated_w=rated_w)
    price = offer.usd_per_gpu_hour() * n
    energy_usd = site.pue * site.electricity_usd_per_kwh
    if offer.electricity_included:
        usd_fixed, usd_per_rps = price, 0.0
    elif fixed_kw is None or per_rps_kw is None:
        raise InputError(
            f"electricity is not included in the price of {config.gpu_model}, so its power is "
            f"needed, but it has no measured power and no {_missing(idle_w, rated_w)} in the "
            "catalog: set idle_w and rated_w for it",
            field=f"gpus.{config.gpu_model}.idle_w",
        )
    else:
        usd_fixed = price + fixed_kw * energy_usd
        usd_per_rps = per_rps_kw * energy_usd
    grid_kg = site.pue * site.grid_gco2_per_kwh / 1000
    embodied, host = _embodied(offer.include_embodied, figures, n)
    if embodied is not None and host is None and offer.include_embodied:
        notes.append("host server's embodied share unknown: embodied carbon counts the GPUs only")
    kg_fixed = kg_per_rps = None
    if fixed_kw is not None and per_rps_kw is not None and embodied is not None:
        kg_fixed = fixed_kw * grid_kg + embodied
        kg_per_rps = per_rps_kw * grid_kg
    return PoolEconomics(
        capacity=capacity,
        gpus_per_server=n,
        usd_per_server_hour=usd_fixed,
        usd_per_rps_hour=usd_per_rps,
        kw_per_server=fixed_kw,
        kw_per_rps=per_rps_kw,
        kg_per_server_hour=kg_fixed,
        kg_per_rps_hour=kg_per_rps,
        embodied_kg_per_server_hour=embodied,
        energy_basis=basis,
        notes=tuple(notes),
        host_embodied_kg_per_server_hour=host,
        pue=site.pue,
        offer=None if offer.offer_name == config.gpu_model else offer.offer_name,
    )


def _embodied(include: bool, figures: dict, n: int) -> tuple[float | None, float | None]:
    """Embodied kgCO2e per server-hour (GPUs and host) and the host's part of it; (0, 0) when
    switched off, (None, None) when the GPU's figure or the lifetime is unknown."""
    if not include:
        return 0.0, 0.0
    if figures["embodied_kg"] is None or not figures["lifetime_years"]:
        return None, None
    hours = figures["lifetime_years"] * HOURS_PER_YEAR
    host_kg = host_kg_per_server(figures, n)
    host = None if host_kg is None else host_kg / hours
    return n * figures["embodied_kg"] / hours + (host or 0.0), host


def _power(
    level: Level, n: int, *, idle_w: float | None, rated_w: float | None
) -> tuple[EnergyBasis, float | None, float | None, list[str]]:
    """Power of one server as fixed kW + kW per carried req/s, its basis, and notes on it."""
    throughput = level.request_throughput_rps
    if level.avg_power_w is not None:
        if idle_w is not None:
            fixed_kw = n * idle_w / 1000
            per_rps_kw = max(level.avg_power_w / 1000 - fixed_kw, 0.0) / throughput
            return EnergyBasis.MEASURED, fixed_kw, per_rps_kw, []
        note = "idle power unknown: each server counted at its measured loaded power"
        return EnergyBasis.MEASURED, level.avg_power_w / 1000, 0.0, [note]
    if idle_w is not None and rated_w is not None:
        fixed_kw = n * idle_w / 1000
        per_rps_kw = n * (rated_w - idle_w) / 1000 / throughput
        return EnergyBasis.MODELLED, fixed_kw, per_rps_kw, []
    return EnergyBasis.UNKNOWN, None, None, []


def _missing(idle_w: float | None, rated_w: float | None) -> str:
    missing = [name for name, v in (("idle power", idle_w), ("rated power", rated_w)) if v is None]
    return " and ".join(missing)


def carbon_gaps(
    pools: list[PoolEconomics], scenario: Scenario, facts: dict[str, GpuFacts]
) -> list[str]:
    """What keeps carbon from being known, per GPU model, for messages."""
    gaps = {}
    for pool in pools:
        if pool.kg_per_server_hour is not None:
            continue
        gpu = pool.gpu_model
        figures = _effective(scenario, facts, gpu)
        missing = []
        if pool.kw_per_server is None:
            unknown = _missing(figures["idle_w"], figures["rated_w"])
            missing.append(f"power (no measured power; {unknown} unknown)")
        if pool.embodied_kg_per_server_hour is None:
            missing.append("embodied carbon or lifetime")
        gaps[gpu] = f"{gpu}: {', '.join(missing)}"
    return sorted(gaps.values())
