"""Pool arithmetic: what s servers of a candidate pool carrying r req/s cost and emit, and the
totals of a fleet of such pools. Every figure is linear in (s, r) with the coefficients of
`economics.PoolEconomics`; a figure unknown for one pool is unknown for the fleet."""

from __future__ import annotations

from collections.abc import Sequence

from fleetplan.planner.capacity.configuration import Level, estimate_of
from fleetplan.planner.curve.load_curve import Prediction
from fleetplan.planner.peak.economics import PoolEconomics
from fleetplan.planner.peak.results import HOURS_PER_MONTH, PoolPlan, Totals


def pool_plan(pool: PoolEconomics, servers: int, rate: float) -> PoolPlan:
    """`servers` servers of `pool` carrying `rate` req/s, with their cost, power and carbon."""
    level = pool.capacity.level
    assert level is not None, "pools exist only where a level passes the targets"
    cost = servers * pool.usd_per_server_hour + rate * pool.usd_per_rps_hour
    power = _linear(servers, rate, per_server=pool.kw_per_server, per_rps=pool.kw_per_rps)
    per_server_embodied = pool.embodied_kg_per_server_hour
    embodied = servers * per_server_embodied if per_server_embodied is not None else None
    total_kg = _linear(
        servers, rate, per_server=pool.kg_per_server_hour, per_rps=pool.kg_per_rps_hour
    )
    operational = total_kg - embodied if total_kg is not None and embodied is not None else None
    host_kg = pool.host_embodied_kg_per_server_hour
    host = servers * host_kg if host_kg is not None else None
    out_tokens = level.output_tokens_mean
    in_tokens = level.input_tokens_mean
    full_capacity = servers * pool.capacity.full_rps
    predicted = _predicted(pool, servers, rate)
    return PoolPlan(
        traffic_class=pool.capacity.traffic_class,
        gpu_model=pool.gpu_model,
        gpus_per_server=pool.gpus_per_server,
        server=pool.capacity.configuration.server,
        servers=servers,
        gpus=servers * pool.gpus_per_server,
        rate_rps=rate,
        capacity_rps_per_server=pool.capacity.capacity_rps,
        full_capacity_rps_per_server=pool.capacity.full_rps,
        capacity_low_rps_per_server=pool.capacity.low,
        capacity_high_rps_per_server=pool.capacity.high,
        utilization=rate / full_capacity if full_capacity else 0.0,
        hourly_cost_usd=cost,
        monthly_cost_usd=cost * HOURS_PER_MONTH,
        power_kw=power,
        gpu_energy_kwh_month=_monthly(power),
        facility_energy_kwh_month=_monthly(power * pool.pue if power is not None else None),
        operational_kgco2e_month=_monthly(operational),
        embodied_kgco2e_month=_monthly(embodied),
        host_embodied_kgco2e_month=_monthly(host),
        energy_basis=pool.energy_basis,
        output_tokens_per_s=rate * out_tokens if out_tokens is not None else None,
        total_tokens_per_s=(
            rate * (out_tokens + in_tokens)
            if out_tokens is not None and in_tokens is not None
            else None
        ),
        level_offered_rate_rps=level.offered_rate_rps,
        level_throughput_rps=level.request_throughput_rps,
        level_sustained_rps=level.sustained_rps,
        level_ttft_p99_ms=level.ttft_p99_ms,
        level_tpot_p99_ms=level.tpot_p99_ms,
        level_source_file=level.source_file,
        behind=level.behind,
        capacity_basis=pool.capacity.basis,
        **_estimate_fields(level),
        predicted_ttft_p99_ms=predicted.ttft_p99_ms if predicted else None,
        predicted_tpot_p99_ms=predicted.tpot_p99_ms if predicted else None,
        level_power_w=level.avg_power_w,
        notes=list(pool.notes),
    )


def _estimate_fields(level: Level) -> dict:
    """A pool's basis and error band from its level's estimate, where it has one."""
    told = estimate_of(level)
    return {"basis": told["basis"], "estimate_error": told.get("error")} if told else {}


def _predicted(pool: PoolEconomics, servers: int, rate: float) -> Prediction | None:
    """The P99s the configuration's curve predicts at the pool's load per server, to saturation
    by its queue form (None where the curve says nothing: no curve, or a load at or past its
    saturation, or above the highest level it kept up with where no saturation is known)."""
    curve = pool.capacity.curve
    if curve is None or servers <= 0:
        return None
    return curve.get().predict(rate / servers, extrapolate=True)


def _linear(
    servers: int, rate: float, *, per_server: float | None, per_rps: float | None
) -> float | None:
    """servers x per_server + rate x per_rps; unknown when a coefficient is."""
    if per_server is None or per_rps is None:
        return None
    return servers * per_server + rate * per_rps


def _monthly(per_hour: float | None) -> float | None:
    return per_hour * HOURS_PER_MONTH if per_hour is not None else None


def _sum(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return float(sum(known)) if len(known) == len(values) else None


def _per_million(per_hour: float | None, tokens_per_s: float | None) -> float | None:
    """A quantity per hour, per million tokens served in that hour."""
    if per_hour is None or not tokens_per_s:
        return None
    return per_hour / (tokens_per_s * 3600) * 1e6


def totals_of(pools: Sequence[PoolPlan]) -> Totals:
    """A fleet's totals: sums over its pools, and $, gCO2e and kWh per million tokens."""
    hourly = float(sum(p.hourly_cost_usd for p in pools))
    power = _sum([p.power_kw for p in pools])
    operational = _sum([p.operational_kgco2e_month for p in pools])
    embodied = _sum([p.embodied_kgco2e_month for p in pools])
    carbon = operational + embodied if operational is not None and embodied is not None else None
    out_tps = _sum([p.output_tokens_per_s for p in pools])
    total_tps = _sum([p.total_tokens_per_s for p in pools])
    carbon_g_hour = carbon / HOURS_PER_MONTH * 1000 if carbon is not None else None
    gpus: dict[str, int] = {}
    for pool in pools:
        gpus[pool.gpu_model] = gpus.get(pool.gpu_model, 0) + pool.gpus
    return Totals(
        hourly_cost_usd=hourly,
        monthly_cost_usd=hourly * HOURS_PER_MONTH,
        servers=sum(p.servers for p in pools),
        gpus=dict(sorted(gpus.items())),
        power_kw=power,
        gpu_energy_kwh_month=_monthly(power),
        facility_energy_kwh_month=_sum([p.facility_energy_kwh_month for p in pools]),
        operational_kgco2e_month=operational,
        embodied_kgco2e_month=embodied,
        host_embodied_kgco2e_month=_sum([p.host_embodied_kgco2e_month for p in pools]),
        carbon_kgco2e_month=carbon,
        output_tokens_per_s=out_tps,
        total_tokens_per_s=total_tps,
        usd_per_million_output_tokens=_per_million(hourly, out_tps),
        usd_per_million_total_tokens=_per_million(hourly, total_tps),
        gco2e_per_million_output_tokens=_per_million(carbon_g_hour, out_tps),
        gco2e_per_million_total_tokens=_per_million(carbon_g_hour, total_tps),
        kwh_per_million_output_tokens=_per_million(power, out_tps),
        kwh_per_million_total_tokens=_per_million(power, total_tps),
    )
