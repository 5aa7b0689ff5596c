"""The hosts of a Ray cluster that can run a probe: the live nodes that say their GPU type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fleetplan.core.gpus import canonical_gpu

RESOURCE_PREFIX = "fleetplan-gpu:"
RAY_TYPE_PREFIX = "accelerator_type:"


@dataclass(frozen=True)
class Host:
    node_id: str
    ip: str
    name: str
    gpu_type: str  # canonical id where the label is unambiguous, else the label as advertised
    resource: str  # the resource that marks this host's GPU type
    amount: float  # how much of it the host has (a task takes all of it)
    gpus: int  # GPUs Ray manages on the host (0 with a declared-only resource)

    def describe(self) -> str:
        return f"{self.name} ({self.ip}, node {self.node_id[:8]})"


def hosts_from_nodes(nodes: list[dict[str, Any]]) -> list[Host]:
    """The live nodes that say which GPU type they have, in a stable order."""
    hosts = []
    for node in nodes:
        if not node.get("Alive"):
            continue
        resources: dict[str, float] = node.get("Resources", {})
        ours = sorted(k for k in resources if k.startswith(RESOURCE_PREFIX))
        rays = sorted(k for k in resources if k.startswith(RAY_TYPE_PREFIX))
        if ours:
            resource, label = ours[0], ours[0][len(RESOURCE_PREFIX) :]
        elif rays:
            resource, label = rays[0], rays[0][len(RAY_TYPE_PREFIX) :]
        else:
            continue
        hosts.append(
            Host(
                node_id=node["NodeID"],
                ip=node.get("NodeManagerAddress", "?"),
                name=node.get("NodeManagerHostname", "?"),
                gpu_type=canonical_gpu(label).gpu_id,
                resource=resource,
                amount=float(resources[resource]),
                gpus=int(resources.get("GPU", 0)),
            )
        )
    return sorted(hosts, key=lambda h: (h.gpu_type, h.ip, h.name, h.node_id))
