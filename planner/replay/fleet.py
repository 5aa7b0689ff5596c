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
    inputs = raw.get("inputs") or {}
    scenario = inputs.get("scenario") if isinstance(inputs, Mapping) else None
    if not isinstance(scenario, Mapping) or not isinstance(scenario.get("classes"), list):
        raise PlanShapeError(
            "the plan has no inputs.scenario.classes (the targets to judge by): write it with "
            "`fleetplan plan --scenario FILE --json plan.json`"
        )
    default_model = str(scenario.get("model") or raw.get("model") or "")
    targets, models = {}, {}
    for i, entry in enumerate(scenario["classes"]):
        if not isinstance(entry, Mapping) or not entry.get("name"):
            continue
        name = str(entry["name"])
        for target in ("ttft_p99_ms", "tpot_p99_ms"):
            value = entry.get(target)
            if value is not None and not (_number(value) is not None and value > 0):
                raise PlanShapeError(
                    f"inputs.scenario.classes[{i}].{target} is {_kind(value)}: a target in ms "
                    "above 0"
                )
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


MAX_POOL_SERVERS = 1_000_000


def _object(value: object, where: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise PlanShapeError(f"{where} is {_kind(value)}, not an object")
    return value


def _list(value: object, where: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise PlanShapeError(f"{where} is {_kind(value)}, not a list")
    return value


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, str):
        return f"the text {value[:40]!r}"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return repr(value)[:40]


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise PlanShapeError(f"{where} is {_kind(value)}, not a name")
    return value


def _int(value: object, where: str, low: int, high: int, default: int | None = None) -> int:
    """A whole number low..high; a float with no fraction counts; bools, text, null refused."""
    if value is None and default is not None:
        return default
    given = value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise PlanShapeError(f"{where} is {_kind(given)}: a whole number from {low} to {high:,}")
    return value


def _rate(value: object, where: str) -> float:
    """A rate or capacity: finite and 0 or more (null or absent: 0)."""
    if value is None:
        return 0.0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PlanShapeError(f"{where} is {_kind(value)}, not a number")
    if not (math.isfinite(value) and value >= 0):
        raise PlanShapeError(f"{where} is {value!r}: a finite number, 0 or more")
    return float(value)


def _servers(pool: Mapping, where: str) -> int:
    return _int(pool.get("servers"), f"{where}.servers", 0, MAX_POOL_SERVERS, default=0)


def _pool_key(pool: dict, at: str, class_field: str) -> PoolKey:
    """A pool's (class, GPU, GPUs per server), each checked, named by where it is."""
    return PoolKey(
        _text(pool.get(class_field), f"{at}.{class_field}"),
        _text(pool.get("gpu_model"), f"{at}.gpu_model"),
        _int(pool.get("gpus_per_server"), f"{at}.gpus_per_server", 1, 1024),
    )


def fleet_of(raw: Mapping) -> Fleet:
    """The fleet of a plan JSON (a day plan's hours where it has them)."""
    raw = _object(raw, "the plan")
    targets, models = _classes(raw)
    recommended = _object(raw.get("recommended") or {}, "recommended")
    pools = _list(recommended.get("pools"), "recommended.pools")
    availability: dict[PoolKey, float] = {}
    servers: dict[PoolKey, str] = {}
    capacity: dict[PoolKey, float] = {}
    peak: dict[str, list[tuple[PoolKey, int, float]]] = {}
    for i, pool in enumerate(pools):
        at = f"recommended.pools[{i}]"
        pool = _object(pool, at)
        key = _pool_key(pool, at, "traffic_class")
        a = pool.get("availability")
        if a is not None:
            a = _rate(a, f"{at}.availability")
            if not 0 < a <= 1:
                raise PlanShapeError(f"{at}.availability is {a!r}: a share above 0 and at most 1")
            if a < 1:
                availability[key] = a
        servers[key] = str(pool.get("server") or "")
        capacity[key] = _rate(pool.get("capacity_rps_per_server"), f"{at}.capacity_rps_per_server")
        peak.setdefault(key.traffic_class, []).append(
            (key, _servers(pool, at), _rate(pool.get("rate_rps"), f"{at}.rate_rps"))
        )
    for i, row in enumerate(_list(raw.get("capacities"), "capacities")):
        at = f"capacities[{i}]"
        row = _object(row, at)
        configuration = row.get("configuration")
        configuration = configuration if isinstance(configuration, str) else ""
        count, _, gpu = configuration.partition("x ")
        if count.isdigit() and len(count) <= 4 and gpu:
            key = PoolKey(str(row.get("traffic_class")), gpu, int(count))
            servers.setdefault(key, str(row.get("server") or ""))
            capacity.setdefault(
                key, _rate(row.get("capacity_rps_per_server"), f"{at}.capacity_rps_per_server")
            )
    day = raw.get("day") or {}
    schedule = day.get("schedule") if isinstance(day, Mapping) else None
    if schedule:
        hours = _day_hours(_list(schedule, "day.schedule"))
        kind = "day"
    else:
        if not any(n for slots in peak.values() for _k, n, _r in slots):
            raise PlanShapeError("the plan has no servers to replay through")
        hours = [{name: _weights(slots) for name, slots in peak.items()} for _ in range(HOURS)]
        kind = "peak"
    return Fleet(kind, hours, availability, targets, models, servers, capacity)


def _day_hours(schedule: list) -> list[dict[str, list[Slot]]]:
    hours: list[dict[str, list[Slot]]] = [{} for _ in range(HOURS)]
    for e, entry in enumerate(schedule):
        at = f"day.schedule[{e}]"
        entry = _object(entry, at)
        hour = entry.get("hour")
        if isinstance(hour, int) and not isinstance(hour, bool) and not 0 <= hour < HOURS:
            raise PlanShapeError(f"day.schedule has hour {hour}: hours are 0-23")
        h = _int(hour, f"{at}.hour", 0, HOURS - 1)
        by_class: dict[str, list[tuple[PoolKey, int, float]]] = {}
        for i, pool in enumerate(_list(entry.get("pools"), f"{at}.pools")):
            where = f"{at}.pools[{i}]"
            pool = _object(pool, where)
            key = _pool_key(pool, where, "class")
            by_class.setdefault(key.traffic_class, []).append(
                (key, _servers(pool, where), _rate(pool.get("rate_rps"), f"{where}.rate_rps"))
            )
        merged: dict[str, list[Slot]] = {}
        for name, slots in by_class.items():
            # A configuration bought reserved and rented on demand is one pool to the router.
            totals: dict[PoolKey, list[float]] = {}
            for key, n, rate in slots:
                total = totals.setdefault(key, [0, 0.0])
                total[0] += n
                total[1] += rate
            for key, (n, _rate_sum) in totals.items():
                if n > MAX_POOL_SERVERS:
                    raise PlanShapeError(
                        f"{at}: pool {key.label()} has {n:,} servers, over the "
                        f"{MAX_POOL_SERVERS:,} a replay routes to"
                    )
            merged[name] = _weights([(k, int(v[0]), v[1]) for k, v in totals.items()])
        hours[h] = merged
    return hours
