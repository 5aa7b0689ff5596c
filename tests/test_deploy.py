"""`fleetplan plan --deploy kubernetes|skypilot`: the recommended fleet as vLLM deployments,
read back by the tools' own code (tests/support/deploy_check.py: the Kubernetes Python client's
models, SkyPilot's `Task.from_yaml_config`), installed by `make test` in .venv/tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fleetplan.services.deploy import engine_arguments
from fleetplan.services.exports import plan_from_json
from fleetplan.services.router_config import url_variable

ROOT = Path(__file__).resolve().parents[1]
TOOLS = Path(os.environ.get("FLEETPLAN_DEPLOY_TOOLS", ROOT / ".venv" / "tools"))
CHECK = ROOT / "tests" / "support" / "deploy_check.py"
SCENARIO = ROOT / "examples" / "chat-batch-qwen14b.json"


def read_back(tool: str, *files: Path) -> subprocess.CompletedProcess:
    if not (TOOLS / "kubernetes").is_dir() or not (TOOLS / "sky").is_dir():
        pytest.fail(f"the deployment tools are not in {TOOLS}: `make test` installs them")
    env = {**os.environ, "PYTHONPATH": str(TOOLS)}
    return subprocess.run(
        [sys.executable, str(CHECK), tool, *map(str, files)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture
def planned(cli, tmp_path, sample_warehouse_template):
    out = tmp_path / "plan.json"
    done = cli(
        "plan",
        "--scenario",
        SCENARIO,
        "--json",
        out,
        "--deploy",
        "kubernetes",
        "--deploy-out",
        tmp_path / "fleet.yaml",
        "--warehouse",
        sample_warehouse_template,
    )
    assert done.returncode == 0, done.stderr
    raw = json.loads(out.read_text())
    plan = plan_from_json(raw)
    pools = [p for p in plan.recommended.pools if p.servers > 0]
    assert len(pools) >= 2
    return tmp_path, plan, pools


def test_kubernetes_deployments_and_services_read_back_by_the_client(planned):
    folder, _plan, pools = planned
    done = read_back("kubernetes", folder / "fleet.yaml")
    assert done.returncode == 0, done.stderr
    docs = json.loads(done.stdout)
    assert [d["kind"] for d in docs] == ["Deployment", "Service"] * len(pools)
    assert all(d["round_trip"] for d in docs)  # no field the API's models do not know
    for pool, deployment, service in zip(pools, docs[::2], docs[1::2], strict=True):
        spec = deployment["model"]["spec"]
        assert spec["replicas"] == pool.servers
        (container,) = spec["template"]["spec"]["containers"]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == str(pool.gpus_per_server)
        args = container["args"]
        assert args[args.index("--model") + 1] == "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"
        assert args[args.index("--tensor-parallel-size") + 1] == str(pool.gpus_per_server)
        assert args[args.index("--dtype") + 1] == "float16"
        assert container["image"] == "vllm/vllm-openai:v0.8.5"  # the version measured
        # The Service selects the Deployment's pods; its URL is the router's variable.
        labels = spec["template"]["metadata"]["labels"]
        selector = service["model"]["spec"]["selector"]
        assert selector.items() <= labels.items()
        assert spec["selector"]["matchLabels"].items() <= labels.items()
        annotations = deployment["model"]["metadata"]["annotations"]
        assert annotations["fleetplan.io/router-url-variable"] == url_variable(pool)
        product = spec["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"]
        assert product.startswith("NVIDIA-")


def test_skypilot_services_read_back_by_skypilot(cli, planned, sample_warehouse_template):
    folder, _plan, pools = planned
    out = folder / "sky"
    done = cli(
        "plan",
        "--scenario",
        SCENARIO,
        "--deploy",
        "skypilot",
        "--deploy-out",
        out,
        "--warehouse",
        sample_warehouse_template,
    )
    assert done.returncode == 0, done.stderr
    files = sorted(out.glob("*.yaml"))
    assert len(files) == len(pools)
    read = read_back("skypilot", *files)
    assert read.returncode == 0, read.stderr
    tasks = {t["name"]: t for t in json.loads(read.stdout)}
    for pool in pools:
        name = f"fleetplan-{pool.traffic_class}-{pool.gpus_per_server}x-{pool.gpu_model}"
        task = tasks[name]
        accelerator = {"h100-pcie": "H100", "rtx-4090": "RTX4090"}[pool.gpu_model]
        assert task["accelerators"] == {accelerator: pool.gpus_per_server}
        assert task["replicas"] == pool.servers
        assert task["readiness_path"] == "/health"
        assert f"--tensor-parallel-size {pool.gpus_per_server}" in task["run"]


def test_the_tools_refuse_what_is_broken(tmp_path):
    """The read-back can fail: a container without a name, a service field SkyPilot lacks."""
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "x"},
                "spec": {
                    "selector": {"matchLabels": {"a": "b"}},
                    "template": {"spec": {"containers": [{"image": "vllm/vllm-openai"}]}},
                },
            }
        )
    )
    assert read_back("kubernetes", broken).returncode != 0
    sky = tmp_path / "sky.yaml"
    sky.write_text(
        yaml.safe_dump(
            {
                "name": "x",
                "resources": {"accelerators": "H100:1"},
                "service": {"replicas": 2, "readiness": "/health"},
                "run": "true",
            }
        )
    )
    assert read_back("skypilot", sky).returncode != 0


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_to_standard_output_the_yaml_alone(cli, sample_warehouse_template):
    done = cli(
        "plan",
        "--scenario",
        SCENARIO,
        "--deploy",
        "kubernetes",
        "--warehouse",
        sample_warehouse_template,
    )
    assert done.returncode == 0, done.stderr
    docs = list(yaml.safe_load_all(done.stdout))  # | kubectl apply -f -
    assert docs[0]["kind"] == "Deployment"
    assert "Recommended fleet" in done.stderr and "Recommended fleet" not in done.stdout


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_variant_written_as_arguments_is_passed_and_any_other_is_named(planned):
    _folder, _plan, pools = planned
    pool = pools[0].model_copy(
        update={"server": "vllm 0.8.5, bfloat16, TP 1, --enable-prefix-caching"}
    )
    args, unknown = engine_arguments(pool, "m")
    assert "--enable-prefix-caching" in args and unknown == []
    assert args[args.index("--dtype") + 1] == "bfloat16"
    pool = pools[0].model_copy(update={"server": "vllm 0.8.5, float16, TP 1, prefix caching"})
    args, unknown = engine_arguments(pool, "m")
    assert unknown == ["prefix caching"] and "prefix" not in " ".join(args)


DAY = ROOT / "examples" / "day-two-models-owned.json"


def test_a_day_plan_deploys_its_days_pools_each_class_on_its_model(
    cli, tmp_path, sample_warehouse_template
):
    """A day plan's deployments (issue 36): the day's pools, not its peak plan's; each class on
    its own model; replicas the most servers of the day with the hours in an annotation; an
    on-demand pool's SkyPilot service autoscaled between its fewest and most servers."""
    out = tmp_path / "plan.json"
    done = cli(
        "plan", "--scenario", DAY, "--warehouse", sample_warehouse_template, "--json", out,
        "--deploy", "kubernetes", "--deploy-out", tmp_path / "fleet.yaml",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    day = json.loads(out.read_text())["day"]
    shares = [(u, c) for u in day["fleet"] for c in u["classes"]]
    assert shares
    read = read_back("kubernetes", tmp_path / "fleet.yaml")
    assert read.returncode == 0, read.stderr
    deployments = [d for d in json.loads(read.stdout) if d["kind"] == "Deployment"]
    assert len(deployments) == len(shares) and all(d["round_trip"] for d in deployments)
    models = {}
    for deployment in deployments:
        annotations = deployment["model"]["metadata"]["annotations"]
        spec = deployment["model"]["spec"]
        (container,) = spec["template"]["spec"]["containers"]
        args = container["args"]
        pool = annotations["fleetplan.io/pool"]
        models[pool.split("/")[0]] = args[args.index("--model") + 1]
        unit, share = next(
            (u, c)
            for u, c in shares
            if pool.startswith(f"{c['class']}/{u['gpus_per_server']}x-{u['gpu_model']}")
            and annotations["fleetplan.io/offer"] == u["offer"]
        )
        assert spec["replicas"] == max(share["servers_by_hour"])
        assert annotations["fleetplan.io/commitment"] == unit["commitment"]
        assert annotations["fleetplan.io/servers-by-hour"]
    assert models["code assistant"] == "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B"
    assert models["chat"] == "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B"

    sky = tmp_path / "sky"
    done = cli(
        "plan", "--scenario", DAY, "--warehouse", sample_warehouse_template,
        "--deploy", "skypilot", "--deploy-out", sky,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    read = read_back("skypilot", *sorted(sky.glob("*.yaml")))
    assert read.returncode == 0, read.stderr
    tasks = json.loads(read.stdout)
    assert len(tasks) == len(shares)
    rented = [t for t in tasks if "rented-h100" in t["name"]]
    assert rented and all(t["target_qps_per_replica"] for t in rented)
    assert all(t["max_replicas"] >= t["replicas"] for t in rented)
