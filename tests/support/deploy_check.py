"""Read fleetplan's deployment exports with the tools' own code, in a process whose path starts
with the tools' folder (.venv/tools: `make test` installs tests/deploy-tools.txt there, apart
from the project's environment). Run as `python deploy_check.py kubernetes|skypilot FILE...`;
prints, as JSON, what each tool read back.

- kubernetes: each document through the Kubernetes client's model of its kind (`V1Deployment`,
  `V1Service`: pydantic models of the API's schema; a missing required field or a wrong type
  is an error), and dumped back by alias: a field the model does not know would be lost there,
  so the dump must equal the document.
- skypilot: each file through `sky.Task.from_yaml_config` (SkyPilot's schema and its task and
  service parsers: an unknown field, a bad type or a bad service spec is an error).
"""

from __future__ import annotations

import json
import sys


def kubernetes(paths: list[str]) -> list[dict]:
    import yaml
    from kubernetes import client

    kinds = {"Deployment": client.V1Deployment, "Service": client.V1Service}
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            for doc in yaml.safe_load_all(handle):
                model = kinds[doc["kind"]].from_dict(doc)
                back = model.model_dump(by_alias=True, exclude_none=True, mode="json")
                out.append(
                    {
                        "kind": doc["kind"],
                        "name": model.metadata.name,
                        "round_trip": _clean(back) == _clean(doc),
                        "model": _clean(back),
                    }
                )
    return out


def _clean(value):
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def skypilot(paths: list[str]) -> list[dict]:
    import yaml
    from sky import Task

    out = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            task = Task.from_yaml_config(yaml.safe_load(handle))
        (resources,) = task.resources
        out.append(
            {
                "name": task.name,
                "accelerators": resources.accelerators,
                "ports": resources.ports,
                "replicas": task.service.min_replicas,
                "max_replicas": task.service.max_replicas,
                "target_qps_per_replica": task.service.target_qps_per_replica,
                "readiness_path": task.service.readiness_path,
                "run": task.run,
            }
        )
    return out


if __name__ == "__main__":
    tool, *files = sys.argv[1:]
    print(json.dumps({"kubernetes": kubernetes, "skypilot": skypilot}[tool](files)))
