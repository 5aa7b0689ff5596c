"""A plan's routing as a router's configuration: a LiteLLM proxy config (YAML) or a plain routing
table (JSON). Pure writers: a `Plan` (or its JSON) in, text out.

What is routed (`routes`): the recommended fleet's pools (a class on a configuration) of a peak
plan; of a day plan (a scenario of version 2), the day's: each class on each configuration under
each offer the day reserves or rents (`DayPlan.fleet`), its servers and rate hour by hour. Each
class goes to its own model: the class's (`models`, the scenario's `model_of`; a day plan carries
them), else the plan's.

LiteLLM (https://docs.litellm.ai/docs/proxy/configs, `model_list` and `router_settings`):
- one deployment per pool, in the model group named after its class (clients ask for the class
  as the model); its `api_base` is a placeholder read from the environment,
  `os.environ/FLEETPLAN_<CLASS>_<GPU>_X<N>_URL` (a day pool under an offer not named after its
  GPU: `FLEETPLAN_<CLASS>_<OFFER>_<GPU>_X<N>_URL`; one URL per pool: its servers' load
  balancer; names that would meet are told apart by a number);
- `weight`: the pool's planned share of the class's rate (a day plan: of the class's requests
  over the day), so that the router's `simple-shuffle` sends each pool its share. LiteLLM's
  weights do not change by the hour: a day plan's deployments carry their servers and rates
  hour by hour in `model_info` (`servers_by_hour`, `rate_rps_by_hour`), and the schedule CSV
  (`fleetplan plan --schedule-csv`) says the same; scale each pool's servers by it;
- where a class has `fallback` in the plan, a second group `<class>-fallback` (`-fallback-2`,
  `-fallback-3`, ... where a class or another group already has that name: one group never
  holds two classes' pools) holding the class's pools with spare capacity (servers x capacity
  above their planned rate: typically the datacenter pool beside consumer hosts, or spare
  servers planned to carry nothing), weighted by that spare capacity, and
  `router_settings.fallbacks` from the class's group to it. A pool marked down (in cooldown)
  drops out of its group, and the group's other pools take its share; a request that fails on
  a pool goes to the fallback group. Without fallback in the plan, LiteLLM still sends a down
  pool's share to the class's other pools; the plan does not count on that capacity, so those
  pools may then miss their targets. (The day program plans no fallback.)

Every YAML fleetplan writes (this config, the deployment files) goes through `dump_yaml`: a
string any YAML 1.1, YAML 1.2 or Go (sigs.k8s.io/yaml, what kubectl reads with) resolver could
take for a boolean, a null or a number (`y`, `N`, `off`, `~`, `1e3`, `0o10`, `0x1F`, `1_000`,
`1:20`, `.inf`) is written double-quoted, so that every reader gets the name as written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import yaml

from fleetplan.planner.peak.results import FleetPlan, Plan, PoolPlan

ROUTING_STRATEGY = "simple-shuffle"

_STR = "tag:yaml.org,2002:str"
# What some YAML reader resolves a plain scalar to other than a string (module docstring):
# YAML 1.1's booleans and nulls in any case (PyYAML, Go's yaml.v2 and sigs.k8s.io/yaml), and
# numbers of YAML 1.1 (underscores, sexagesimal, leading-zero octal), YAML 1.2 (`0o`, `1e3`)
# and Go's strconv (`0b`, `0o`, `0x` in either case, a sign), with infinities and NaNs.
_NOT_A_STRING = re.compile(
    r"""
    (?: y | n | yes | no | on | off | true | false | null | ~ | )
    | [-+]? (?: 0b[01_]+ | 0o[0-7_]+ | 0x[0-9a-f_]+ )
    | [-+]? [0-9_]+ (?: :[0-5]?[0-9] )* (?: \.[0-9_]* )? (?: e[-+]?[0-9_]+ )?
    | [-+]? \.[0-9_]+ (?: e[-+]?[0-9_]+ )?
    | [-+]? \.? (?: inf | infinity | nan )
    """,
    re.IGNORECASE | re.VERBOSE,
)


class QuotingDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, a string that could be read as anything else double-quoted."""


def _represent_str(dumper: QuotingDumper, data: str) -> yaml.ScalarNode:
    if (
        _NOT_A_STRING.fullmatch(data)
        or dumper.resolve(yaml.ScalarNode, data, (True, False)) != _STR  # PyYAML's own
    ):
        return dumper.represent_scalar(_STR, data, style='"')
    return dumper.represent_str(data)


QuotingDumper.add_representer(str, _represent_str)


def dump_yaml(data: Any, *, documents: bool = False) -> str:
    """`data` as YAML (a list of documents where `documents`), every string read back as one."""
    options: dict[str, Any] = {"Dumper": QuotingDumper, "sort_keys": False, "allow_unicode": False}
    if documents:
        return yaml.dump_all(data, **options)
    return yaml.dump(data, **options)


def _pools(fleet: FleetPlan) -> list[PoolPlan]:
    return [p for p in fleet.pools if p.servers > 0]


def pool_id(pool: PoolPlan) -> str:
    return f"{pool.traffic_class}/{pool.gpus_per_server}x-{pool.gpu_model}"


def _variable(*parts: object) -> str:
    raw = "_".join(["FLEETPLAN", *(str(p) for p in parts), "URL"])
    return re.sub(r"[^A-Z0-9]+", "_", raw.upper()).strip("_")


def url_variable(pool: PoolPlan) -> str:
    """The environment variable holding the URL of the pool's servers."""
    return _variable(pool.traffic_class, pool.gpu_model, f"X{pool.gpus_per_server}")


@dataclass(frozen=True, slots=True)
class Route:
    """One pool as the router and the deployment files see it: a class on a configuration
    (under an offer, in a day plan), its model, its servers and its share of the class."""

    traffic_class: str
    model: str
    pool: str
    url_env: str
    gpu_model: str
    gpus_per_server: int
    server: str  # the engine its capacity was measured on, in words
    servers: int  # replicas: a peak pool's servers; a day pool's most in any hour
    rate_rps: float  # a peak pool's planned rate; a day pool's most in any hour
    capacity_rps_per_server: float
    share: float
    spare_rps: float = 0.0
    servers_needed: int | None = None
    availability: float | None = None
    offer: str | None = None  # a day pool's offer
    commitment: str | None = None
    servers_by_hour: tuple[int, ...] | None = None  # a day pool's, hours 0-23
    rate_by_hour: tuple[float, ...] | None = None
    shares_servers_with: tuple[str, ...] = ()  # a reserved day unit's other classes


def _peak_routes(plan: Plan, models: Mapping[str, str]) -> list[Route]:
    pools = _pools(plan.recommended)
    totals: dict[str, float] = {}
    for pool in pools:
        totals[pool.traffic_class] = totals.get(pool.traffic_class, 0.0) + pool.rate_rps
    return [
        Route(
            traffic_class=pool.traffic_class,
            model=models.get(pool.traffic_class) or plan.model,
            pool=pool_id(pool),
            url_env=url_variable(pool),
            gpu_model=pool.gpu_model,
            gpus_per_server=pool.gpus_per_server,
            server=pool.server,
            servers=pool.servers,
            rate_rps=pool.rate_rps,
            capacity_rps_per_server=pool.capacity_rps_per_server,
            share=pool.rate_rps / totals[pool.traffic_class] if totals[pool.traffic_class] else 0.0,
            spare_rps=max(0.0, pool.servers * pool.capacity_rps_per_server - pool.rate_rps),
            servers_needed=pool.servers_needed,
            availability=pool.availability,
        )
        for pool in pools
    ]


def _day_routes(plan: Plan, models: Mapping[str, str]) -> list[Route]:
    routes = []
    for unit in plan.day.fleet:
        named = unit.offer != unit.gpu_model
        for share in unit.classes:
            config = f"{unit.gpus_per_server}x-{unit.gpu_model}"
            routes.append(
                Route(
                    traffic_class=share.traffic_class,
                    model=models.get(share.traffic_class) or share.model or plan.model,
                    pool=f"{share.traffic_class}/{config}" + (f"@{unit.offer}" if named else ""),
                    url_env=_variable(
                        share.traffic_class,
                        *([unit.offer] if named else []),
                        unit.gpu_model,
                        f"X{unit.gpus_per_server}",
                    ),
                    gpu_model=unit.gpu_model,
                    gpus_per_server=unit.gpus_per_server,
                    server=share.server,
                    servers=max(share.servers_by_hour),
                    rate_rps=max(share.rate_by_hour),
                    capacity_rps_per_server=share.capacity_rps_per_server,
                    share=share.share,
                    offer=unit.offer,
                    commitment=unit.commitment,
                    servers_by_hour=tuple(share.servers_by_hour),
                    rate_by_hour=tuple(share.rate_by_hour),
                    shares_servers_with=tuple(
                        other.traffic_class
                        for other in unit.classes
                        if other.traffic_class != share.traffic_class
                        and unit.commitment == "reserved"
                    ),
                )
            )
    return routes


def routes(plan: Plan, models: Mapping[str, str] | None = None) -> list[Route]:
    """The plan's pools as routed (module docstring), each URL variable its own."""
    found = (
        _day_routes(plan, models or {})
        if plan.day is not None
        else _peak_routes(plan, models or {})
    )
    seen: dict[str, int] = {}
    out = []
    for route in found:
        count = seen.get(route.url_env, 0) + 1
        seen[route.url_env] = count
        if count > 1:  # two names that meet once made upper case and underscored
            route = replace(route, url_env=f"{route.url_env[: -len('_URL')]}_{count}_URL")
        out.append(route)
    return out


def _fallback_classes(fleet: FleetPlan) -> set[str]:
    return {c.traffic_class for c in fleet.classes or [] if c.fallback}


def routing_table(plan: Plan, models: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Per class: its model, its pools with their planned share, servers and where they fall
    back (a day plan's pools with their offer and their servers and rates hour by hour)."""
    fallback = _fallback_classes(plan.recommended) if plan.day is None else set()
    classes: dict[str, Any] = {}
    for route in routes(plan, models):
        entry = classes.setdefault(
            route.traffic_class, {"model": route.model, "fallback": False, "pools": []}
        )
        pool: dict[str, Any] = {
            "pool": route.pool,
            "gpu_model": route.gpu_model,
            "gpus_per_server": route.gpus_per_server,
            "servers": route.servers,
            "servers_needed": route.servers_needed,
            "availability": route.availability,
            "rate_rps": route.rate_rps,
            "spare_rps": route.spare_rps,
            "share": route.share,
            "url_env": route.url_env,
        }
        if route.servers_by_hour is not None:
            pool |= {
                "offer": route.offer,
                "commitment": route.commitment,
                "servers_by_hour": list(route.servers_by_hour),
                "rate_rps_by_hour": list(route.rate_by_hour or ()),
            }
            if route.shares_servers_with:
                pool["shares_servers_with"] = list(route.shares_servers_with)
        entry["pools"].append(pool)
    for name, entry in classes.items():
        targets = _fallback_targets(entry["pools"]) if name in fallback else []
        entry["fallback"] = bool(targets)
        entry["fallback_to"] = targets
    return {
        "scenario": plan.scenario,
        "model": plan.model,
        "plan": "day" if plan.day is not None else "peak",
        "classes": classes,
    }


def _fallback_targets(pools: list[dict[str, Any]]) -> list[str]:
    """The class's pools with spare capacity."""
    return [p["pool"] for p in pools if p["spare_rps"] > 1e-9]


def routing_json(plan: Plan, models: Mapping[str, str] | None = None) -> str:
    return json.dumps(routing_table(plan, models), indent=1) + "\n"


def litellm_config(
    plan: Plan, models: Mapping[str, str] | None = None, *, provider: str = "hosted_vllm"
) -> str:
    """The LiteLLM proxy configuration of the plan's routing (module docstring)."""
    table = routing_table(plan, models)
    model_list: list[dict[str, Any]] = []
    fallbacks: list[dict[str, list[str]]] = []
    # The groups taken: every class's (a class without pools too: its clients ask for it).
    taken = set(table["classes"]) | {c.traffic_class for c in plan.recommended.classes or []}
    for name, entry in table["classes"].items():
        for p in entry["pools"]:
            if p["share"] > 0:
                model_list.append(_deployment(name, p, entry["model"], provider, p["share"]))
        if entry["fallback_to"]:
            group = _unused(f"{name}-fallback", taken)
            taken.add(group)
            chosen = [p for p in entry["pools"] if p["pool"] in entry["fallback_to"]]
            spare = sum(p["spare_rps"] for p in chosen)
            for p in chosen:
                weight = p["spare_rps"] / spare
                model_list.append(
                    _deployment(group, p, entry["model"], provider, weight, "fallback")
                )
            fallbacks.append({name: [group]})
    config: dict[str, Any] = {
        "model_list": model_list,
        "router_settings": {"routing_strategy": ROUTING_STRATEGY, "num_retries": 0},
    }
    if fallbacks:
        config["router_settings"]["fallbacks"] = fallbacks
    return _header(plan, table) + dump_yaml(config)


def _unused(group: str, taken: set[str]) -> str:
    """`group`, or `group-2`, `group-3`, ...: the first no class or other group has."""
    found, count = group, 1
    while found in taken:
        count += 1
        found = f"{group}-{count}"
    return found


def _header(plan: Plan, table: dict[str, Any]) -> str:
    models = sorted({entry["model"] for entry in table["classes"].values()} or {plan.model})
    lines = [
        # repr: a name on one line whatever it holds (line breaks, U+2028 escaped)
        f"LiteLLM proxy configuration written by fleetplan for {plan.scenario!r} "
        f"({', '.join(repr(m) for m in models)}).",
        "Set each FLEETPLAN_..._URL to its pool's servers (e.g. http://host:8000/v1); clients "
        "ask for the class as the model.",
    ]
    if table["plan"] == "day":
        lines.append(
            "A day plan: each weight is the pool's share of its class's requests over the day; "
            "its servers and rates hour by hour are in model_info (servers_by_hour, "
            "rate_rps_by_hour) and in `fleetplan plan --schedule-csv`: scale each pool by them."
        )
    return "".join(f"# {line}\n" for line in lines)


def _deployment(
    group: str,
    pool: Mapping[str, Any],
    model: str,
    provider: str,
    weight: float,
    role: str = "primary",
) -> dict[str, Any]:
    info: dict[str, Any] = {"id": f"{pool['pool']}#{role}", "servers": pool["servers"]}
    if "servers_by_hour" in pool:
        info |= {
            "offer": pool["offer"],
            "servers_by_hour": pool["servers_by_hour"],
            "rate_rps_by_hour": [round(r, 6) for r in pool["rate_rps_by_hour"]],
        }
    return {
        "model_name": group,
        "litellm_params": {
            "model": f"{provider}/{model}",
            "api_base": f"os.environ/{pool['url_env']}",
            "weight": round(weight, 6),
        },
        "model_info": info,
    }
