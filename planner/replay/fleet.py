"""A plan's fleet as the replay routes it: per hour, per class, the pools serving it with their
servers and router weights; per pool, its availability; per class, its targets and model.

Read from a plan JSON (`fleetplan plan --json`): a day plan's hours from its `day.schedule`, a
peak plan's one fleet (`recommended.pools`) in every hour; the classes' targets and models from
its `inputs.scenario`. A pool's weight is its planned share of the class's rate in that hour,
as the LiteLLM export weights it (`services.router_config`); a pool planned to carry nothing
(spare servers) is weighted by its servers where the class's pools carry nothing at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

HOURS = 24


@dataclass(frozen=True, slots=True, order=True)
class PoolKey:
    """A pool: its class and configuration (GPU, GPUs per server)."""

    traffic_class: str
    gpu_model: str
    gpus_per_server: int

    def label(self) -> str:
        return f"{self.traffic_class}/{self.gpus_per_server}x-{self.gpu_model}"


@dataclass(frozen=True, slots=True)
class Slot:
    """A pool in an hour: its servers and its router weight."""

    pool: PoolKey
    servers: int
    weight: float


@dataclass(frozen=True, slots=True)
class Targets:
    ttft_p99_ms: float | None = None
    tpot_p99_ms: float | None = None

    def holds(self, ttft_ms: float | None, tpot_ms: float | None) -> bool:
        """Both P99s within their targets (a target the class does not have always holds; an
        unknown P99 holds only where there is no target on it)."""
        return _within(ttft_ms, self.ttft_p99_ms) and _within(tpot_ms, self.tpot_p99_ms)


def _within(value: float | None, target: float | None) -> bool:
    if target is None:
        return True
    return value is not None and math.isfinite(value) and value <= target


@dataclass(frozen=True)
class Fleet:
    """What the replay routes to. `hours[h][class]` lists the class's pools in hour h."""

    kind: str  # "day" or "peak"
    hours: list[dict[str, list[Slot]]]
    availability: dict[PoolKey, float] = field(default_factory=dict)
    targets: dict[str, Targets] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)  # class -> LLM
    servers: dict[PoolKey, str] = field(default_factory=dict)  # pool -> engine, as planned
    capacity: dict[PoolKey, float] = field(default_factory=dict)  # req/s a server is planned at

    def pools(self) -> list[PoolKey]:
        """Every pool with a server in some hour."""
        return sorted({s.pool for hour in self.hours for slots in hour.values() for s in slots})

    def most_servers(self, pool: PoolKey) -> int:
        return max(
            (
                s.servers
                for hour in self.hours
                for s in hour.get(pool.traffic_class, ())
                if s.pool == pool
            ),
            default=0,
        )

    def classes(self) -> list[str]:
        return list(self.targets)


class PlanShapeError(ValueError):
    """The plan JSON lacks what a replay needs (said which)."""


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _classes(raw: Mapping) -> tuple[dict[str, Targets], dict[str, str]]:
    scenario = (raw.get("inputs") or {}).get("scenario")
    if not isinstance(scenario, Mapping) or not isinstance(scenario.get("classes"), list):
        raise PlanShapeError(
            "the plan has no inputs.scenario.classes (the targets to judge by): write it with "
            "`fleetplan plan --scenario FILE --json plan.json`"
        )
    default_model = str(scenario.get("model") or raw.get("model") or "")
    targets, models = {}, {}
    for entry in scenario["classes"]:
        if not isinstance(entry, Mapping) or not entry.get("name"):
            continue
        name = str(entry["name"])
        targets[name] = Targets(
            _number(entry.get("ttft_p99_ms")), _number(entry.get("tpot_p99_ms"))
        )
        models[name] = str(entry.get("model") or default_model)
    return targets, models


def _weights(slots: list[tuple[PoolKey, int, float]]) -> list[Slot]:
    carried = sum(rate for _p, servers, rate in slots if servers > 0)
    out = []
    for pool, servers, rate in slots:
        if servers <= 0:
            continue
        weight = rate if carried > 0 else float(servers)
        out.append(Slot(pool, servers, weight))
    return [s for s in out if s.weight > 0] or out


def fleet_of(raw: Mapping) -> Fleet:
    """The fleet of a plan JSON (a day plan's hours where it has them)."""
    targets, models = _classes(raw)
    recommended = raw.get("recommended") or {}
    pools = recommended.get("pools") or []
    availability: dict[PoolKey, float] = {}
    servers: dict[PoolKey, str] = {}
    capacity: dict[PoolKey, float] = {}
    peak: dict[str, list[tuple[PoolKey, int, float]]] = {}
    for pool in pools:
        key = PoolKey(
            str(pool["traffic_class"]), str(pool["gpu_model"]), int(pool["gpus_per_server"])
        )
        a = _number(pool.get("availability"))
        if a is not None and 0 < a < 1:
            availability[key] = a
        servers[key] = str(pool.get("server") or "")
        capacity[key] = float(pool.get("capacity_rps_per_server") or 0.0)
        peak.setdefault(key.traffic_class, []).append(
            (key, int(pool.get("servers") or 0), float(pool.get("rate_rps") or 0.0))
        )
    for row in raw.get("capacities") or []:
        configuration = str(row.get("configuration") or "")
        count, _, gpu = configuration.partition("x ")
        if count.isdigit() and gpu:
            key = PoolKey(str(row.get("traffic_class")), gpu, int(count))
            servers.setdefault(key, str(row.get("server") or ""))
            capacity.setdefault(key, float(row.get("capacity_rps_per_server") or 0.0))
    day = raw.get("day") or {}
    schedule = day.get("schedule") if isinstance(day, Mapping) else None
    if schedule:
        hours = _day_hours(schedule)
        kind = "day"
    else:
        if not any(n for slots in peak.values() for _k, n, _r in slots):
            raise PlanShapeError("the plan has no servers to replay through")
        hours = [{name: _weights(slots) for name, slots in peak.items()} for _ in range(HOURS)]
        kind = "peak"
    return Fleet(kind, hours, availability, targets, models, servers, capacity)


def _day_hours(schedule: list) -> list[dict[str, list[Slot]]]:
    hours: list[dict[str, list[Slot]]] = [{} for _ in range(HOURS)]
    for entry in schedule:
        h = int(entry["hour"])
        if not 0 <= h < HOURS:
            raise PlanShapeError(f"day.schedule has hour {h}: hours are 0-23")
        by_class: dict[str, list[tuple[PoolKey, int, float]]] = {}
        for pool in entry.get("pools") or []:
            key = PoolKey(str(pool["class"]), str(pool["gpu_model"]), int(pool["gpus_per_server"]))
            by_class.setdefault(key.traffic_class, []).append(
                (key, int(pool.get("servers") or 0), float(pool.get("rate_rps") or 0.0))
            )
        merged: dict[str, list[Slot]] = {}
        for name, slots in by_class.items():
            # A configuration bought reserved and rented on demand is one pool to the router.
            totals: dict[PoolKey, list[float]] = {}
            for key, n, rate in slots:
                total = totals.setdefault(key, [0, 0.0])
                total[0] += n
                total[1] += rate
            merged[name] = _weights([(k, int(v[0]), v[1]) for k, v in totals.items()])
        hours[h] = merged
    return hours
