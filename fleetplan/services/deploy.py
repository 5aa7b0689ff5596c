"""A plan's pools as deployments: per pool, a Kubernetes Deployment and Service of vLLM's
OpenAI-compatible server, or a SkyPilot service. Pure writers: a `Plan` in, YAML text out.

Per pool with servers (the recommended fleet):
- the model: the class's model, by its full id where the warehouse knows it (`models`);
- the engine: vLLM's OpenAI-compatible server, the image `vllm/vllm-openai:v<version>` of the
  version the pool's capacity was measured on (the `server` words; the latest where none is
  said, or where what is said is not a version: digits and dots, then letters, digits and
  `.+-`), with `--tensor-parallel-size` (the GPUs per server), `--dtype` where the runs name one,
  and the variant's engine arguments where its label is written as arguments ("--enable-prefix-
  caching", "--max-num-seqs=128"; a value of letters, digits and `._/:,+-` only); any other
  variant label is kept as an annotation and a comment (its arguments are not known: set them by
  hand), and so is one that would set what fleetplan sets or what the file says the pool is
  (`RESERVED`: the model, its GPUs, the port, the API key);
- the replicas: the pool's servers (for a plan with availability, those planned, spares
  included); one server is one replica of `gpus_per_server` GPUs. A day plan's pools (a class
  on a configuration under an offer, `router_config.routes`) change by the hour: a Deployment
  gets the most servers the pool serves with in any hour and its servers hour by hour in the
  annotation `fleetplan.io/servers-by-hour` (scale it by them, or by the schedule CSV); a
  SkyPilot service of an on-demand pool autoscales between its fewest and most servers of the
  day on the pool's capacity per server (`replica_policy.target_qps_per_replica`), a reserved
  one keeps its servers. Reserved servers the day shares between classes hour by hour are named
  in `fleetplan.io/shares-servers-with`.

Kubernetes (`kubectl apply -f`): the Deployment requests `nvidia.com/gpu` (NVIDIA's device
plugin), selects nodes by the `nvidia.com/gpu.product` label GPU feature discovery writes (the
product names below; check yours with `kubectl get nodes -L nvidia.com/gpu.product`), mounts a
memory-backed /dev/shm (tensor parallelism's shared memory) and is ready when /health answers;
takes its API key from the Secret `vllm-api-key` where there is one (vLLM's `VLLM_API_KEY`: requests
without it refused) and a Hugging Face token from `hf-token`; the Service (ClusterIP, port 80 to
8000) is the pool's URL for the router,
`http://<service>.<namespace>.svc.cluster.local/v1` (its FLEETPLAN_..._URL in the LiteLLM export).

SkyPilot (`sky serve up <pool>.yaml`): one service per pool, `resources.accelerators`
`<name>:<count>` (SkyPilot's accelerator names below), the replicas fixed, the readiness probe
/health, and the vLLM command as `run`.

The benchmark runs' words reach the files as data, never as commands: SkyPilot's `setup` and `run`
are shell, each of their words quoted (`shlex.join`); Kubernetes expands `$(VAR)` in a container's
`args`, so each `$` there is written `$$` (read back as one `$`); in SkyPilot's environment
variable FLEETPLAN_VARIANT_NOT_SET, the labels of variants not set are written with any character
but letters, digits, spaces and `._/:,+=-` as `_`. Pool names are unique: names that would meet
are told apart by a number no other pool's name has.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from typing import Any

from fleetplan.planner.peak.results import Plan, PoolPlan
from fleetplan.services.exports import hours_text
from fleetplan.services.router_config import Route, dump_yaml, routes

PORT = 8000
IMAGE = "vllm/vllm-openai"
# GPU feature discovery's `nvidia.com/gpu.product` (the product name as NVML reports it, spaces
# as dashes) and SkyPilot's accelerator names, per catalog GPU.
GPU_PRODUCT = {
    "rtx-4090": "NVIDIA-GeForce-RTX-4090",
    "h100-pcie": "NVIDIA-H100-PCIe",
    "h100-sxm": "NVIDIA-H100-80GB-HBM3",
    "h100-nvl": "NVIDIA-H100-NVL",
    "h200": "NVIDIA-H200",
    "h200-nvl": "NVIDIA-H200-NVL",
    "l40s": "NVIDIA-L40S",
    "l4": "NVIDIA-L4",
    "a100-40gb": "NVIDIA-A100-SXM4-40GB",
    "a100-80gb": "NVIDIA-A100-SXM4-80GB",
    "a10g": "NVIDIA-A10G",
    "b200": "NVIDIA-B200",
}
SKYPILOT_ACCELERATOR = {
    "rtx-4090": "RTX4090",
    "h100-pcie": "H100",
    "h100-sxm": "H100",
    "h100-nvl": "H100-NVL",
    "h200": "H200",
    "l40s": "L40S",
    "l4": "L4",
    "a100-40gb": "A100",
    "a100-80gb": "A100-80GB",
    "a10g": "A10G",
    "b200": "B200",
}
# An engine argument as a variant label writes it: a flag, and a value of no character a shell or
# Kubernetes (`$(VAR)`) would read.
_ARGUMENT = re.compile(r"--([a-z0-9][a-z0-9-]*)(=[A-Za-z0-9._/:,+-]+)?")
# What fleetplan sets (`engine_arguments`), and what would make the pool something the file and
# the router do not say (another name served, other GPUs, no API key): a variant setting one of
# these (or a prefix of one, which vLLM's argparse may take for it) is not passed.
RESERVED = frozenset(
    {
        "model",
        "tensor-parallel-size",
        "dtype",
        "host",
        "port",
        "served-model-name",
        "pipeline-parallel-size",
        "data-parallel-size",
        "api-key",
        "config",
        "uds",
    }
)
# A version as pip and the image tags write it: 0.8.5, 0.8.5.post1, 0.10.1rc1, 0.9.0+cu126.
_VERSION = re.compile(r"[0-9]+(?:\.[0-9]+)*(?:[.+-]?[A-Za-z0-9])*")
_NOTE = re.compile(r"[^A-Za-z0-9 ._/:,+=-]")


def _name(route: Route) -> str:
    """A DNS-1035 name for the pool: lower case, digits and dashes, a letter first, 63 at most."""
    offer = f"-{route.offer}" if route.offer and route.offer != route.gpu_model else ""
    raw = f"fleetplan-{route.traffic_class}-{route.gpus_per_server}x-{route.gpu_model}{offer}"
    slug = re.sub(r"[^a-z0-9]+", "-", raw.lower()).strip("-")
    return slug[:63].rstrip("-")


def _named(found: list[Route]) -> list[tuple[str, Route]]:
    """Each pool with its name (`_name`), names that would meet told apart by a number: the
    first pool keeps the name, the next gets `-2` (cut to stay 63 characters), or `-3`, ...,
    whichever neither another pool's own name nor one given before is."""
    names = [_name(route) for route in found]
    taken = set(names)
    given: set[str] = set()
    out = []
    for name, route in zip(names, found, strict=True):
        chosen, count = name, 1
        while chosen in given or (chosen != name and chosen in taken):  # taken: another's own
            count += 1
            suffix = f"-{count}"
            chosen = name[: 63 - len(suffix)].rstrip("-") + suffix
        given.add(chosen)
        out.append((chosen, route))
    return out


def _server(pool: PoolPlan | Route) -> dict[str, Any]:
    """The engine's version, dtype and variant from the pool's `server` words."""
    parts = [p.strip() for p in (pool.server or "").split(",") if p.strip()]
    found: dict[str, Any] = {"version": None, "dtype": None, "variant": []}
    for i, part in enumerate(parts):
        words = part.split()
        if i == 0 and words and words[0].lower() == "vllm":
            found["version"] = _version(words[1]) if len(words) > 1 else None
        elif i == 0 and words:
            found["engine"] = words[0]
        elif re.fullmatch(r"TP \d+", part):
            continue
        elif found["dtype"] is None and part in {"float16", "bfloat16", "float32", "auto", "half"}:
            found["dtype"] = part
        else:
            found["variant"].append(part)
    return found


def _version(word: str) -> str | None:
    """The engine's version, or None (not known: the latest) where the word is not one."""
    return word if len(word) <= 64 and _VERSION.fullmatch(word) else None


def _passed(token: str) -> bool:
    """Whether a variant's word is an argument passed as it is (`_ARGUMENT`, not `RESERVED`)."""
    found = _ARGUMENT.fullmatch(token)
    return found is not None and not any(r.startswith(found[1]) for r in RESERVED)


def engine_arguments(pool: PoolPlan | Route, model: str) -> tuple[list[str], list[str]]:
    """vLLM's arguments for the pool, and the variant labels not passed: not arguments, or
    setting what fleetplan sets (`RESERVED`)."""
    server = _server(pool)
    args = ["--model", model, "--tensor-parallel-size", str(pool.gpus_per_server)]
    if server["dtype"]:
        args += ["--dtype", server["dtype"]]
    args += ["--host", "0.0.0.0", "--port", str(PORT)]  # inside its container
    unknown = []
    for label in server["variant"]:
        tokens = label.split()
        if tokens and all(_passed(t) for t in tokens):
            args += tokens
        else:
            unknown.append(label)
    return args, unknown


def _image(pool: PoolPlan | Route) -> str:
    """The vLLM image of the pool's version (a local version's `+...` cut: no tag has one)."""
    version = _server(pool)["version"]
    return f"{IMAGE}:v{version.split('+')[0]}" if version else f"{IMAGE}:latest"


def _kubernetes_text(word: str) -> str:
    """A word of a container's command or args as Kubernetes keeps it: `$$` is read as `$`, so
    that no `$(VAR)` in it is replaced by a variable."""
    return word.replace("$", "$$")


def kubernetes_documents(plan: Plan, models: Mapping[str, str]) -> list[dict[str, Any]]:
    """Per pool a Deployment and a Service (module docstring)."""
    docs: list[dict[str, Any]] = []
    for name, pool in _named(routes(plan, models)):
        args, unknown = engine_arguments(pool, pool.model)
        labels = {
            "app.kubernetes.io/name": "vllm",
            "app.kubernetes.io/part-of": "fleetplan",
            "fleetplan.io/pool": name,
        }
        annotations = {
            "fleetplan.io/pool": pool.pool,
            "fleetplan.io/server": pool.server or "",
            "fleetplan.io/planned-rate-rps": f"{pool.rate_rps:g}",
            "fleetplan.io/capacity-rps-per-server": f"{pool.capacity_rps_per_server:g}",
            "fleetplan.io/router-url-variable": pool.url_env,
        }
        annotations |= _day_annotations(pool)
        if unknown:
            annotations["fleetplan.io/variant-not-set"] = "; ".join(unknown)
        container = {
            "name": "vllm",
            "image": _image(pool),
            "command": ["python3", "-m", "vllm.entrypoints.openai.api_server"],
            "args": [_kubernetes_text(a) for a in args],
            "ports": [{"name": "http", "containerPort": PORT}],
            "resources": {
                "limits": {"nvidia.com/gpu": str(pool.gpus_per_server)},
                "requests": {"nvidia.com/gpu": str(pool.gpus_per_server)},
            },
            "env": [
                {
                    "name": "VLLM_API_KEY",  # the server refuses requests without it, where set
                    "valueFrom": {
                        "secretKeyRef": {"name": "vllm-api-key", "key": "key", "optional": True}
                    },
                },
                {
                    "name": "HF_TOKEN",
                    "valueFrom": {
                        "secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}
                    },
                },
            ],
            "readinessProbe": {
                "httpGet": {"path": "/health", "port": PORT},
                "periodSeconds": 10,
                "failureThreshold": 60,
            },
            "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"}],
        }
        spec: dict[str, Any] = {
            "containers": [container],
            "volumes": [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "16Gi"}}],
        }
        product = GPU_PRODUCT.get(pool.gpu_model)
        if product:
            spec["nodeSelector"] = {"nvidia.com/gpu.product": product}
        docs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "labels": labels, "annotations": annotations},
                "spec": {
                    "replicas": pool.servers,
                    "selector": {"matchLabels": {"fleetplan.io/pool": name}},
                    "template": {"metadata": {"labels": dict(labels)}, "spec": spec},
                },
            }
        )
        docs.append(
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {
                    "name": name,
                    "labels": labels,
                    "annotations": {"fleetplan.io/pool": pool.pool},
                },
                "spec": {
                    "type": "ClusterIP",
                    "selector": {"fleetplan.io/pool": name},
                    "ports": [{"name": "http", "port": 80, "targetPort": PORT}],
                },
            }
        )
    return docs


def skypilot_services(plan: Plan, models: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """Per pool (by its name) a SkyPilot service task (module docstring)."""
    out = {}
    for name, pool in _named(routes(plan, models)):
        args, unknown = engine_arguments(pool, pool.model)
        accelerator = SKYPILOT_ACCELERATOR.get(pool.gpu_model, pool.gpu_model.upper())
        version = _server(pool)["version"]
        task: dict[str, Any] = {
            "name": name,
            "resources": {"accelerators": f"{accelerator}:{pool.gpus_per_server}", "ports": PORT},
            "envs": {"HF_TOKEN": ""},
            "service": {
                "readiness_probe": {"path": "/health", "initial_delay_seconds": 1200},
                **_replicas(pool),
            },
            # Shell: every word quoted.
            "setup": shlex.join(["pip", "install", f"vllm=={version}" if version else "vllm"]),
            "run": shlex.join(["python", "-m", "vllm.entrypoints.openai.api_server", *args]),
        }
        if unknown:
            task["envs"]["FLEETPLAN_VARIANT_NOT_SET"] = "; ".join(
                _NOTE.sub("_", label) for label in unknown
            )
        out[name] = task
    return out


def _day_annotations(pool: Route) -> dict[str, str]:
    """A day pool's offer, commitment and servers hour by hour (none for a peak pool)."""
    if pool.servers_by_hour is None:
        return {}
    out = {
        "fleetplan.io/offer": pool.offer or "",
        "fleetplan.io/commitment": pool.commitment or "",
        "fleetplan.io/servers-by-hour": hours_text(list(pool.servers_by_hour)),
    }
    if pool.shares_servers_with:
        out["fleetplan.io/shares-servers-with"] = ", ".join(pool.shares_servers_with)
    return out


def _replicas(pool: Route) -> dict[str, Any]:
    """SkyPilot's replicas: a peak pool's servers; an on-demand day pool autoscaled between its
    fewest and most servers of the day at its capacity per server."""
    if pool.servers_by_hour is None or pool.commitment != "on_demand":
        return {"replicas": pool.servers}
    return {
        "replica_policy": {
            "min_replicas": min(pool.servers_by_hour),
            "max_replicas": max(pool.servers_by_hour),
            "target_qps_per_replica": round(pool.capacity_rps_per_server, 6),
        }
    }


def _header(plan: Plan, what: str, check: str) -> str:
    fleet = "the day's pools" if plan.day is not None else "the recommended fleet"
    return (
        f"# {what} written by fleetplan for {plan.scenario!r}: one per pool of {fleet}.\n"
        f"# {check}\n"
    )


_NOT_SET = (
    "a variant whose engine arguments are not known, or that would set what fleetplan sets (the "
    "model, its GPUs, the port, the API key: "
    + ", ".join(f"--{r}" for r in sorted(RESERVED))
    + "), is not passed and is named in"
)
K8S_CHECK = (
    "Check the nvidia.com/gpu.product names against your nodes (kubectl get nodes -L "
    f"nvidia.com/gpu.product); {_NOT_SET} fleetplan.io/variant-not-set."
)
SKY_CHECK = (
    "Check the accelerator against `sky show-gpus` (SkyPilot's H100 is the SXM part on most "
    f"clouds); {_NOT_SET} FLEETPLAN_VARIANT_NOT_SET."
)


def kubernetes_yaml(plan: Plan, models: Mapping[str, str]) -> str:
    docs = kubernetes_documents(plan, models)
    return _header(plan, "Kubernetes Deployments and Services", K8S_CHECK) + dump_yaml(
        docs, documents=True
    )


def skypilot_yaml(plan: Plan, models: Mapping[str, str]) -> dict[str, str]:
    """Per pool its file's name and text (`sky serve up <name>.yaml`)."""
    return {
        f"{name}.yaml": _header(plan, "A SkyPilot service", SKY_CHECK) + dump_yaml(task)
        for name, task in skypilot_services(plan, models).items()
    }
