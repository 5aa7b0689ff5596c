"""A plan's routing as a router's configuration: a LiteLLM proxy config (YAML) or a plain routing
table (JSON). Pure writers: a `Plan` (or its JSON) in, text out.

LiteLLM (https://docs.litellm.ai/docs/proxy/configs, `model_list` and `router_settings`):
- one deployment per pool, in the model group named after its class (clients ask for the class
  as the model); its `api_base` is a placeholder read from the environment,
  `os.environ/FLEETPLAN_<CLASS>_<GPU>_X<N>_URL` (one URL per pool: its servers' load balancer);
- `weight`: the pool's planned share of the class's rate, so that the router's `simple-shuffle`
  sends each pool its share;
- where a class has `fallback` in the plan, a second group `<class>-fallback` holding the class's
  pools with spare capacity (servers x capacity above their planned rate: typically the
  datacenter pool beside consumer hosts, or spare servers planned to carry nothing), weighted
  by that spare capacity, and `router_settings.fallbacks` from the class's group to it. A pool
  marked down (in cooldown) drops out of its group, and the group's other pools take its
  share; a request that fails on a pool goes to the fallback group. Without fallback in the
  plan, LiteLLM still sends a down pool's share to the class's other pools; the plan does not
  count on that capacity, so those
  pools may then miss their targets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import yaml

from fleetplan.planner.peak.results import FleetPlan, Plan, PoolPlan

ROUTING_STRATEGY = "simple-shuffle"


def _pools(fleet: FleetPlan) -> list[PoolPlan]:
    return [p for p in fleet.pools if p.servers > 0]


def pool_id(pool: PoolPlan) -> str:
    return f"{pool.traffic_class}/{pool.gpus_per_server}x-{pool.gpu_model}"


def url_variable(pool: PoolPlan) -> str:
    """The environment variable holding the URL of the pool's servers."""
    raw = f"FLEETPLAN_{pool.traffic_class}_{pool.gpu_model}_X{pool.gpus_per_server}_URL"
    return re.sub(r"[^A-Z0-9]+", "_", raw.upper()).strip("_")


def _fallback_classes(fleet: FleetPlan) -> set[str]:
    return {c.traffic_class for c in fleet.classes or [] if c.fallback}


def routing_table(plan: Plan) -> dict[str, Any]:
    """Per class: its pools with their planned share, servers and where they fall back."""
    fleet = plan.recommended
    fallback = _fallback_classes(fleet)
    classes: dict[str, Any] = {}
    for pool in _pools(fleet):
        entry = classes.setdefault(pool.traffic_class, {"fallback": False, "pools": []})
        entry["pools"].append(
            {
                "pool": pool_id(pool),
                "gpu_model": pool.gpu_model,
                "gpus_per_server": pool.gpus_per_server,
                "servers": pool.servers,
                "servers_needed": pool.servers_needed,
                "availability": pool.availability,
                "rate_rps": pool.rate_rps,
                "spare_rps": max(0.0, pool.servers * pool.capacity_rps_per_server - pool.rate_rps),
                "url_env": url_variable(pool),
            }
        )
    for name, entry in classes.items():
        total = sum(p["rate_rps"] for p in entry["pools"])
        for p in entry["pools"]:
            p["share"] = p["rate_rps"] / total if total else 0.0
        targets = _fallback_targets(entry["pools"]) if name in fallback else []
        entry["fallback"] = bool(targets)
        entry["fallback_to"] = targets
    return {"scenario": plan.scenario, "model": plan.model, "classes": classes}


def _fallback_targets(pools: list[dict[str, Any]]) -> list[str]:
    """The class's pools with spare capacity."""
    return [p["pool"] for p in pools if p["spare_rps"] > 1e-9]


def routing_json(plan: Plan) -> str:
    return json.dumps(routing_table(plan), indent=1) + "\n"


def litellm_config(plan: Plan, *, provider: str = "hosted_vllm") -> str:
    """The LiteLLM proxy configuration of the plan's routing (module docstring)."""
    table = routing_table(plan)
    model_list: list[dict[str, Any]] = []
    fallbacks: list[dict[str, list[str]]] = []
    for name, entry in table["classes"].items():
        for p in entry["pools"]:
            if p["share"] > 0:
                model_list.append(_deployment(name, p, table["model"], provider, p["share"]))
        if entry["fallback_to"]:
            group = f"{name}-fallback"
            chosen = [p for p in entry["pools"] if p["pool"] in entry["fallback_to"]]
            spare = sum(p["spare_rps"] for p in chosen)
            for p in chosen:
                weight = p["spare_rps"] / spare
                model_list.append(
                    _deployment(group, p, table["model"], provider, weight, "fallback")
                )
            fallbacks.append({name: [group]})
    config: dict[str, Any] = {
        "model_list": model_list,
        "router_settings": {"routing_strategy": ROUTING_STRATEGY, "num_retries": 0},
    }
    if fallbacks:
        config["router_settings"]["fallbacks"] = fallbacks
    header = (
        f"# LiteLLM proxy configuration written by fleetplan for {plan.scenario!r} "
        f"({plan.model}).\n# Set each FLEETPLAN_..._URL to its pool's servers (e.g. "
        "http://host:8000/v1); clients ask for the class as the model.\n"
    )
    return header + yaml.safe_dump(config, sort_keys=False)


def _deployment(
    group: str,
    pool: Mapping[str, Any],
    model: str,
    provider: str,
    weight: float,
    role: str = "primary",
) -> dict[str, Any]:
    return {
        "model_name": group,
        "litellm_params": {
            "model": f"{provider}/{model}",
            "api_base": f"os.environ/{pool['url_env']}",
            "weight": round(weight, 6),
        },
        "model_info": {"id": f"{pool['pool']}#{role}", "servers": pool["servers"]},
    }
