"""Why the plan looks the way it does, in plain language: for each class, where it runs and what
the alternatives would have cost; which limits bind; why a pool that carries little exists; and
the trade-off between the cheapest and the cleanest fleet of the frontier.

Rates are written with enough significant digits to be true (0.02 req/s is not "0.0 req/s")."""

from __future__ import annotations

from dataclasses import dataclass

from fleetplan.planner.peak.results import ParetoPoint, Plan, PoolPlan
from fleetplan.planner.report.table import gpus_text, rate_text, share_text
from fleetplan.planner.scenario.scenario import Scenario

# Overlapping alternatives named per recommended configuration; the rest are counted ("and 3
# more"): with many configurations every pair would make the sentence unreadable.
MAX_NAMED_OVERLAPS = 3
# A pool planned to carry less than this share of its servers' planned capacity is "small":
# the explanation says why it exists (servers come whole).
SMALL_SHARE = 0.5


def explain(plan: Plan, scenario: Scenario) -> list[str]:
    if plan.recommended.totals is None:
        return [plan.message]
    lines = []
    for traffic in scenario.classes:
        pools = [p for p in plan.recommended.pools if p.traffic_class == traffic.name]
        lines.append(_class_line(plan, scenario, traffic.name, pools))
        lines += [_small_pool_line(plan, scenario, pool, pools) for pool in _small(pools)]
    used = plan.recommended.totals.gpus
    for offer in scenario.gpus:
        if offer.max_gpus is not None and used.get(offer.gpu_model, 0) >= offer.max_gpus:
            limit = f"{offer.max_gpus} {offer.gpu_model} GPUs"
            lines.append(f"The limit of {limit} binds: the plan uses all of them.")
    totals = plan.recommended.totals
    if scenario.budget_usd_per_hour is not None:
        lines.append(
            f"Budget: ${totals.hourly_cost_usd:.2f}/h used of ${scenario.budget_usd_per_hour:g}/h."
        )
    return lines


def _class_line(plan: Plan, scenario: Scenario, name: str, pools: list[PoolPlan]) -> str:
    traffic = next(c for c in scenario.classes if c.name == name)
    price = {g.gpu_model: g.usd_per_gpu_hour() for g in scenario.gpus}
    targets = []
    if traffic.ttft_p99_ms is not None:
        targets.append(f"P99 TTFT <= {traffic.ttft_p99_ms:g} ms")
    if traffic.tpot_p99_ms is not None:
        targets.append(f"P99 TPOT <= {traffic.tpot_p99_ms:g} ms")
    where = " and ".join(
        f"{p.servers} x {p.gpus_per_server}x {p.gpu_model} ({rate_text(p.rate_rps)} req/s, "
        f"{share_text(p.utilization)} utilisation, {p.capacity_basis})"
        for p in pools
    )
    options, excluded = [], []
    overlaps = _overlaps(plan, name, pools)
    for row in plan.capacities:
        if row.traffic_class != name:
            continue
        gpus, gpu_model = row.configuration.split("x ", 1)
        if row.capacity_rps_per_server > 0:
            per_rps = int(gpus) * price[gpu_model] / row.capacity_rps_per_server
            options.append((per_rps, row.configuration))
        else:
            excluded.append(f"{row.configuration} ({row.reason})")
    options.sort()
    ranking = ", ".join(f"{label} ${cost:.3f}" for cost, label in options[:4])
    line = (
        f"{name} ({rate_text(traffic.rate_rps)} req/s"
        + (f"; {', '.join(targets)}" if targets else "; no latency target")
        + f") runs on {where}."
    )
    if ranking:
        line += f" GPU cost per req/s-hour where its targets hold: {ranking}."
    if overlaps:
        line += (
            f" Capacity intervals overlap ({overlaps}): the data does not say which of them "
            "carries more, so this ranking rests on the end planned on."
        )
    if excluded:
        line += f" Excluded: {'; '.join(excluded)}."
    return line


def _overlaps(plan: Plan, name: str, pools: list[PoolPlan]) -> str:
    """For each configuration the class runs on (every one that serves it, where it runs on
    none), the alternatives whose capacity intervals overlap it: at most `MAX_NAMED_OVERLAPS`
    named, the rest counted; "" where none overlaps."""

    def named(configuration: str, server: str | None) -> str:
        return f"{configuration} ({server})" if server else configuration

    planned = {named(f"{p.gpus_per_server}x {p.gpu_model}", p.server) for p in pools if p.servers}
    parts = []
    for row in plan.capacities:
        own = named(row.configuration, row.server)
        if row.traffic_class != name or not row.overlaps or row.capacity_rps_per_server <= 0:
            continue
        if planned and own not in planned:
            continue
        shown = ", ".join(row.overlaps[:MAX_NAMED_OVERLAPS])
        more = len(row.overlaps) - MAX_NAMED_OVERLAPS
        parts.append(f"{own} with {shown}" + (f" and {more} more" if more > 0 else ""))
    return "; ".join(parts)


def _planned_share(pool: PoolPlan) -> float:
    """The share of its servers' planned capacity (after the utilisation ceiling) a pool
    carries."""
    planned = pool.servers * pool.capacity_rps_per_server
    return pool.rate_rps / planned if planned > 0 else 0.0


def _small(pools: list[PoolPlan]) -> list[PoolPlan]:
    return [p for p in pools if p.servers > 0 and _planned_share(p) < SMALL_SHARE]


def _small_pool_line(plan: Plan, scenario: Scenario, pool: PoolPlan, pools: list[PoolPlan]) -> str:
    """Why a pool that carries little of what its servers could exists."""
    config = f"{pool.gpus_per_server}x {pool.gpu_model}"
    planned = pool.servers * pool.capacity_rps_per_server
    head = (
        f"{pool.traffic_class} on {config} carries only {rate_text(pool.rate_rps)} req/s "
        f"({share_text(pool.utilization)} utilisation; {rate_text(planned)} req/s is what its "
        f"{pool.servers} server{'s' if pool.servers != 1 else ''} may carry under the ceiling)"
    )
    others = [p for p in pools if p is not pool]
    if not others:
        return (
            f"{head}: the class needs less than one server, and servers come whole, so the rest "
            "of this one stays unused."
        )
    ceiling = scenario.max_utilization
    full = [p for p in others if p.utilization >= ceiling * (1 - 1e-3)]
    what = _objective_words(plan.objective)
    if full:
        names = ", ".join(f"{p.gpus_per_server}x {p.gpu_model}" for p in full)
        return (
            f"{head}: the class's other pools ({names}) are at the utilisation ceiling "
            f"({ceiling:.0%}), so the rest of its traffic needs one more server, and one more "
            f"{config} server {what} than one more of theirs."
        )
    return (
        f"{head}: servers come whole, and for this plan's objective ({plan.objective}) this "
        "split came out best, though the class's other pools are below the utilisation ceiling."
    )


def _objective_words(objective: str) -> str:
    if objective == "carbon":
        return "adds less carbon"
    if objective == "cost":
        return "adds less cost"
    return "adds less cost with carbon priced in"


@dataclass(frozen=True, slots=True)
class TradeOff:
    """The cheapest and the cleanest fleet of the frontier, and what going from one to the other
    costs and saves per month."""

    cheapest: ParetoPoint
    cleanest: ParetoPoint

    @property
    def extra_usd_month(self) -> float:
        return self.cleanest.monthly_cost_usd - self.cheapest.monthly_cost_usd

    @property
    def saved_kgco2e_month(self) -> float:
        return self.cheapest.carbon_kgco2e_month - self.cleanest.carbon_kgco2e_month

    @property
    def usd_per_tonne(self) -> float | None:
        """The implied price of carbon avoided; None where nothing is saved."""
        saved = self.saved_kgco2e_month
        return self.extra_usd_month / (saved / 1000) if saved > 0 else None

    def sentence(self) -> str:
        if self.cheapest == self.cleanest or self.usd_per_tonne is None:
            return (
                f"The cheapest plan is also the cleanest: ${self.cheapest.monthly_cost_usd:,.0f} "
                f"and {self.cheapest.carbon_kgco2e_month:,.0f} kgCO2e per month "
                f"({gpus_text(self.cheapest.gpus)}); there is no trade-off to make."
            )
        return (
            f"The cleanest plan ({gpus_text(self.cleanest.gpus)}) costs "
            f"${self.extra_usd_month:,.0f} more per month than the cheapest "
            f"({gpus_text(self.cheapest.gpus)}) and emits "
            f"{self.saved_kgco2e_month:,.0f} kgCO2e less per month: "
            f"${self.usd_per_tonne:,.0f} per tonne of CO2e avoided."
        )


def trade_off(plan: Plan) -> TradeOff | None:
    """Cheapest against cleanest on the plan's frontier; None without a frontier."""
    if not plan.pareto:
        return None
    cheapest = min(plan.pareto, key=lambda p: (p.monthly_cost_usd, p.carbon_kgco2e_month))
    cleanest = min(plan.pareto, key=lambda p: (p.carbon_kgco2e_month, p.monthly_cost_usd))
    return TradeOff(cheapest=cheapest, cleanest=cleanest)
