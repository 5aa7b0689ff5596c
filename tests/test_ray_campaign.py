"""`fleetplan collect --ray` on a real local Ray cluster: a head and two worker nodes on this
machine, each advertising a different GPU type (a declared resource; no GPU here), probing the
tests' streaming server. Runs land for both types and are ingested once; a killed worker is retried
once and then reported; running the campaign again skips what finished."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from fleetplan.collectors.options import CollectOptions
from fleetplan.collectors.ray_campaign.campaign_file import check_campaign, load_campaign
from fleetplan.collectors.ray_campaign.hosts import hosts_from_nodes
from fleetplan.collectors.ray_campaign.jobs import plan_jobs
from fleetplan.collectors.ray_campaign.resume import ResumeState
from fleetplan.collectors.ray_campaign.task import settle_gpu
from fleetplan.core.contract import RunFile
from fleetplan.core.errors import InputError
from fleetplan.warehouse.db import Warehouse
from tests.support.processes import fleetplan
from tests.support.ray_campaign import TYPES, Driver, campaign_file, ray_node

PLAN = {
    "name": "fleet",
    "model": "stream-test",
    "classes": [{"name": "chat", "rate_rps": 3.0, "ttft_p99_ms": 500}],
    "gpus": [
        {"gpu_model": "h100-pcie", "hourly_usd": 2.0, "site": "dc"},
        {"gpu_model": "rtx-4090", "hourly_usd": 0.25, "site": "dc"},
    ],
    "sites": [
        {"name": "dc", "electricity_usd_per_kwh": 0.12, "grid_gco2_per_kwh": 350, "pue": 1.2}
    ],
}


def kill_task(driver: Driver, gpu_type: str) -> None:
    """Wait until the task for `gpu_type` measures its first level, then kill -9 its worker."""
    line = driver.wait_for(f"[{gpu_type} #1", "level 1 of 2", "pid ")
    pid = int(line.split("(pid ")[1].split()[0])
    os.kill(pid, signal.SIGKILL)
    driver.wait_for(f"[{gpu_type} #1", "worker process died")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_campaign_lands_runs_for_every_gpu_type_once(ray_cluster, stream_server, tmp_path):
    urls = {t: stream_server(ttft_ms=20, tpot_ms=5) for t in TYPES}
    out, warehouse = tmp_path / "runs", tmp_path / "w.duckdb"
    driver = Driver(
        "--ray",
        ray_cluster.address,
        "--campaign",
        campaign_file(tmp_path, urls),
        "--out",
        out,
        "--ingest",
        "--warehouse",
        warehouse,
    )
    code, stdout, stderr = driver.finish()
    assert code == 0, stderr + stdout
    assert "campaign fleet: 2 run(s) of 1 probe(s) on 2 host(s) of 2 GPU type(s)" in stderr
    assert "level 2 of 2" in stderr  # progress per host, level by level
    files = sorted((out / "fleet").glob("*.json"))
    assert len(files) == 2
    gpus = {}
    assert len(files) > 0  # a loop over nothing asserts nothing
    for path in files:
        (run,) = RunFile.model_validate_json(path.read_text()).runs
        gpus[run.gpu_model] = run
        assert run.metadata["campaign"] == "fleet" and run.metadata["ray_node_id"]
        assert [p.offered_rate_rps for p in run.points] == [2.0, float("inf")]
    assert set(gpus) == set(TYPES)
    # each type probed its own server: the base URL per type reached the right host's task
    assert {t: r.metadata["base_url"] for t, r in gpus.items()} == urls
    assert stdout.count("imported: ") == 2
    # the planner's view: both GPU types are in the warehouse at once
    table = fleetplan("benchmarks", "--warehouse", warehouse, "--model", "stream-test", check=True)
    assert "rtx-4090" in table.stdout and "h100-pcie" in table.stdout
    scenario = tmp_path / "s.json"
    scenario.write_text(json.dumps(PLAN))
    plan = fleetplan(
        "plan", "--warehouse", warehouse, "--scenario", scenario, "--json", tmp_path / "plan.json"
    )
    assert plan.returncode == 0, plan.stderr
    # the planner uses the campaign's runs at once: the 4090 run serves the class, and the H100
    # run prices the all-H100 baseline
    (pool,) = json.loads((tmp_path / "plan.json").read_text())["recommended"]["pools"]
    assert pool["gpu_model"] == "rtx-4090"
    assert pool["level_source_file"].startswith("chat--rtx-4090--1--")
    (all_h100,) = [line for line in plan.stdout.splitlines() if "all-H100" in line]
    assert "$2.00/h" in all_h100


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_killed_worker_is_retried_once_then_reported_and_resume_skips_what_finished(
    ray_cluster, stream_server, tmp_path
):
    # slow enough to be caught mid-level: 16 tokens at 20 ms, 10 requests at 2 req/s per level
    urls = {t: stream_server(ttft_ms=50, tpot_ms=20) for t in TYPES}
    campaign, out = campaign_file(tmp_path, urls, name="retry"), tmp_path / "runs"

    # 1. the 4090 task dies and its retry succeeds
    driver = Driver("--ray", ray_cluster.address, "--campaign", campaign, "--out", out)
    kill_task(driver, "rtx-4090")
    driver.wait_for("[rtx-4090 #1", "queued on", "(attempt 2)")
    code, stdout, stderr = driver.finish()
    assert code == 0, stderr
    assert "retrying on" in stderr
    state = json.loads((out / "campaign-retry.json").read_text())
    assert state["jobs"]["chat/rtx-4090/1"]["attempts"] == 2
    assert state["jobs"]["chat/h100-pcie/1"]["attempts"] == 1
    assert len(list((out / "retry").glob("*.json"))) == 2

    # 2. killed again on its retry: reported as failed, the other type's run still lands
    out2 = tmp_path / "runs2"
    driver = Driver("--ray", ray_cluster.address, "--campaign", campaign, "--out", out2)
    kill_task(driver, "rtx-4090")
    driver.wait_for("[rtx-4090 #1", "(attempt 2)")
    kill_task(driver, "rtx-4090")
    code, stdout, stderr = driver.finish()
    assert code == 1
    assert "FAILED after 2 attempt(s): the task's worker process died" in stderr
    assert "1 of 2 run(s) done, 1 failed" in stdout
    assert "FAILED: the task's worker process died" in stdout
    state = json.loads((out2 / "campaign-retry.json").read_text())
    assert state["jobs"]["chat/rtx-4090/1"]["state"] == "failed"
    assert state["jobs"]["chat/h100-pcie/1"]["state"] == "done"
    first_h100 = sorted((out2 / "retry").glob("*h100*"))

    # 3. the same campaign again: the H100 run is kept, only the failed 4090 run is repeated
    driver = Driver("--ray", ray_cluster.address, "--campaign", campaign, "--out", out2)
    code, stdout, stderr = driver.finish()
    assert code == 0, stderr
    assert "resuming: 1 run(s) finished earlier are kept" in stderr
    assert "[h100-pcie #1" not in stderr  # not queued again
    assert sorted((out2 / "retry").glob("*h100*")) == first_h100
    assert len(list((out2 / "retry").glob("*rtx-4090*"))) == 1
    assert "2 of 2 run(s) done, 0 failed" in stdout

    # 4. all finished; --ingest while another process holds the warehouse: the runs are kept,
    # the command says how to load them later and exits 1; once it is free, they load
    warehouse = tmp_path / "w.duckdb"
    again = (
        "--ray",
        ray_cluster.address,
        "--campaign",
        campaign,
        "--out",
        out2,
        "--ingest",
        "--warehouse",
        warehouse,
        "--wait",
        "0",
    )
    with Warehouse.open(warehouse):
        code, stdout, stderr = Driver(*again).finish()
    assert code == 1
    assert "the runs were not ingested" in stderr and f"fleetplan ingest {out2 / 'retry'}" in stderr
    assert "resuming: 2 run(s) finished earlier are kept" in stderr
    code, stdout, stderr = Driver(*again).finish()
    assert code == 0, stderr
    assert stdout.count("imported: ") == 2


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_probe_that_fails_on_its_host_is_retried_there_then_reported(
    ray_cluster, stream_server, tmp_path
):
    from fleetplan.collectors.vllm_server import free_port

    urls = {"rtx-4090": stream_server(), "h100-pcie": f"http://127.0.0.1:{free_port()}"}
    out = tmp_path / "runs"
    driver = Driver(
        "--ray",
        ray_cluster.address,
        "--campaign",
        campaign_file(tmp_path, urls, name="down"),
        "--out",
        out,
    )
    code, stdout, stderr = driver.finish()
    assert code == 1
    # the error raised inside the task reaches the driver as the collector worded it
    assert "[h100-pcie #1 chat] failed: no server answers at " in stderr and "retrying on" in stderr
    assert "FAILED after 2 attempt(s): no server answers at" in stderr
    assert "1 of 2 run(s) done, 1 failed" in stdout
    assert len(list((out / "down").glob("*rtx-4090*.json"))) == 1


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_campaigns_capacity_searches_are_in_its_summary(ray_cluster, stream_server, tmp_path):
    """Each host runs `--find-capacity` and the driver says what each found, as it lands and
    in the summary: the H100 server has 2 slots of 20 + 15 x 10 ms (11.8 req/s at most), the
    RTX 4090 one misses the target even at the lowest rate. The target leaves the H100 server
    about 2 s for stalls of a loaded machine at 4 req/s (CI runs under load missed 300 ms, then
    600 ms: a P99 of 40 requests is their slowest, one stall decides it); above its 11.8 req/s
    the H100 server falls behind, which the search sees whatever the target."""
    urls = {
        "h100-pcie": stream_server(ttft_ms=20, tpot_ms=10, slots=2),
        "rtx-4090": stream_server(ttft_ms=4000, tpot_ms=5),
    }
    path = campaign_file(tmp_path, urls, name="search")
    campaign = json.loads(path.read_text())
    campaign["probes"][0].update(
        rates=[4], num_requests=40, args={"find-capacity": True, "ttft-p99": 2000, "tolerance": 0.3}
    )
    path.write_text(json.dumps(campaign))
    code, stdout, stderr = Driver(
        "--ray", ray_cluster.address, "--campaign", path, "--out", tmp_path / "runs"
    ).finish()
    # exit 1 says a run had a problem: under a loaded suite the client itself may lag at the
    # ladder's highest rate, which the run reports (the search's result is still said)
    assert code == 0 or (code == 1 and "it cannot drive this rate" in stderr), stderr + stdout
    found_lines = [
        line for line in stdout.splitlines() if "capacity search, " in line and " (bracket" in line
    ]
    assert len(found_lines) == 1, stdout + stderr
    (h100,) = found_lines
    found = float(h100.split("capacity search, ")[1].split("capacity ")[1].split()[0])
    assert 4 <= found <= 2 / 0.17 * 1.05, stdout  # between the ladder's first pass and the knee
    assert "no capacity: even 4 req/s misses" in stdout
    assert "[h100-pcie #1 chat] capacity search, " in stderr  # as the run lands
    (run_file,) = (tmp_path / "runs" / "search").glob("*h100-pcie*.json")
    (run,) = RunFile.model_validate_json(run_file.read_text()).runs
    assert float(run.metadata["search_capacity_rps"]) == pytest.approx(found, rel=1e-3)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_ctrl_c_stops_the_campaign_and_says_how_to_resume(ray_cluster, stream_server, tmp_path):
    urls = {t: stream_server(ttft_ms=50, tpot_ms=20) for t in TYPES}
    campaign, out = campaign_file(tmp_path, urls, name="stop"), tmp_path / "runs"
    driver = Driver("--ray", ray_cluster.address, "--campaign", campaign, "--out", out)
    line = driver.wait_for("level 1 of 2", "pid ")
    worker = int(line.split("(pid ")[1].split()[0])
    driver.process.send_signal(signal.SIGINT)
    code, _, stderr = driver.finish()
    assert code == 130
    assert "interrupted: the runs that finished are kept" in stderr and "Traceback" not in stderr
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the host's task does not run on without its driver
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            break
        time.sleep(0.5)
    else:
        pytest.fail(f"the task's worker {worker} still runs a minute after the driver stopped")
    driver = Driver("--ray", ray_cluster.address, "--campaign", campaign, "--out", out)
    code, stdout, stderr = driver.finish()
    assert code == 0, stderr
    assert "2 of 2 run(s) done, 0 failed" in stdout


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_lost_host_fails_only_its_own_run_which_moves_to_another_host_of_its_type(
    ray_cluster, stream_server, tmp_path
):
    spares = [ray_cluster.add_node(num_cpus=1, resources={"fleetplan-gpu:l40s": 1}) for _ in "ab"]
    ray_cluster.wait_for_nodes()
    try:
        urls = {t: stream_server(ttft_ms=50, tpot_ms=20) for t in ("rtx-4090", "l40s")}
        out = tmp_path / "runs"
        driver = Driver(
            "--ray",
            ray_cluster.address,
            "--campaign",
            campaign_file(tmp_path, urls, name="lost"),
            "--out",
            out,
            "--gpu-types",
            "rtx-4090,L40S",
            "--per-type",
            "1",
        )
        line = driver.wait_for("[l40s #1", "level 1 of 2", "pid ")
        (victim,) = [n for n in spares if f"node {n.node_id[:8]}" in line]
        (survivor,) = [n for n in spares if n is not victim]
        ray_cluster.remove_node(victim, allow_graceful=False)  # the whole host: raylet and all
        spares.remove(victim)
        retry = driver.wait_for("[l40s #1", "retrying on")
        assert "the host left the cluster" in retry and f"node {survivor.node_id[:8]}" in retry
        code, stdout, stderr = driver.finish()
        assert code == 0, stderr + stdout
        assert "2 of 2 run(s) done, 0 failed" in stdout
        runs = {}
        for path in (out / "lost").glob("*.json"):
            (run,) = RunFile.model_validate_json(path.read_text()).runs
            runs[run.gpu_model] = run
        assert set(runs) == {"rtx-4090", "l40s"}  # the 4090's run never noticed
        assert runs["l40s"].metadata["ray_node_id"] == survivor.node_id
        state = json.loads((out / "campaign-lost.json").read_text())
        assert state["jobs"]["chat/l40s/1"]["attempts"] == 2
        assert state["jobs"]["chat/rtx-4090/1"]["attempts"] == 1
    finally:
        for node in spares:
            ray_cluster.remove_node(node)


def test_hosts_are_typed_by_declared_resource_or_rays_accelerator_label():
    nodes = [
        ray_node(1, "box1", {"fleetplan-gpu:rtx-4090": 1.0, "GPU": 2}),
        ray_node(2, "box2", {"accelerator_type:GeForce-RTX-4090": 1.0}),
        ray_node(3, "dc1", {"accelerator_type:H100": 1.0, "GPU": 8}),
        ray_node(4, "gone", {"fleetplan-gpu:h100-sxm": 1.0}, alive=False),
        ray_node(5, "head", {"CPU": 8}),
    ]
    hosts = hosts_from_nodes(nodes)
    assert [(h.name, h.gpu_type, h.gpus) for h in hosts] == [
        ("dc1", "H100", 8),  # Ray says only "H100": PCIe or SXM is not guessed
        ("box1", "rtx-4090", 2),
        ("box2", "rtx-4090", 0),
    ]
    campaign = check_campaign(
        {
            "name": "c",
            "per_type": 1,
            "probes": [
                {"backend": "vllm", "model": "m", "gpu_types": ["4090", "h100-sxm"]},
            ],
        },
        "test",
    )
    jobs = plan_jobs(campaign, hosts)
    assert [(j.gpu_type, j.host.name if j.host else None, j.state) for j in jobs] == [
        ("rtx-4090", "box1", "queued"),
        ("h100-sxm", None, "failed"),  # asked for, absent: reported, not silently dropped
    ]
    assert "no live host of type h100-sxm" in jobs[1].error
    every = plan_jobs(campaign, hosts, only_types=["rtx-4090"], per_type=2)
    assert [j.host.name for j in every] == ["box1", "box2"]
    anywhere = check_campaign({"name": "c", "probes": [{"backend": "vllm", "model": "m"}]}, "t")
    assert [j.gpu_type for j in plan_jobs(anywhere, hosts, per_type=1)] == ["H100", "rtx-4090"]
    # asked for on the command line
    asked = plan_jobs(anywhere, hosts, only_types=["4090", "l40s"], per_type=1)
    assert [(j.gpu_type, j.state) for j in asked] == [("rtx-4090", "queued"), ("l40s", "failed")]
    assert plan_jobs(anywhere, []) == []  # the driver says no host declares a type


def test_what_gpu_a_host_records_nvml_first_then_its_ray_type():
    from fleetplan.collectors.telemetry import GpuInfo

    def card(name, model):
        return GpuInfo(0, name, model, 24.0, 450.0, "550")

    def settle(gpu_type, seen, **given):
        options = CollectOptions.from_mapping({"backend": "vllm", "model": "m", **given})
        settled, warning = settle_gpu(options, gpu_type=gpu_type, gpu_count=2, seen=seen)
        unnamed = {"gpu": None, "gpu_count": None}
        assert settled.replace(**unnamed) == options.replace(**unnamed)  # nothing else changes
        return settled.hardware.gpu, settled.hardware.gpu_count, warning

    assert settle("rtx-4090", []) == ("rtx-4090", 2, None)  # no NVML: the Ray type names it
    assert settle("rtx-4090", [], gpu_count=1) == ("rtx-4090", 1, None)
    assert settle("rtx-4090", [card("NVIDIA GeForce RTX 4090", "rtx-4090")]) == (None, None, None)
    assert settle("H100", [card("NVIDIA H100 PCIe", "h100-pcie")]) == (None, None, None)
    assert settle("l40s", [], gpu="a10g") == ("a10g", None, None)  # the probe says
    *_, warning = settle("h100-pcie", [card("NVIDIA GeForce RTX 4090", "rtx-4090")])
    assert "typed h100-pcie in Ray but NVML sees rtx-4090" in warning


@pytest.mark.parametrize(
    ("probe", "message"),
    [
        ({"backend": "openai", "model": "m"}, "needs base_url"),
        ({"backend": "tgi", "model": "m"}, "backend"),
        ({"backend": "vllm", "model": "m", "args": {"out": "x"}}, "out is set by the campaign"),
        ({"backend": "vllm", "model": "m", "args": {"--wait": 1}}, "wait is set by the campaign"),
        ({"backend": "vllm", "model": "m", "args": {"num_requests": 0}}, "--num-requests: "),
        ({"backend": "vllm", "model": "m", "args": {"max-batch": "x"}}, "--max-batch: .*'x'"),
        ({"backend": "vllm", "model": "m", "args": {"no-such-flag": 1}}, "no_such_flag is not a"),
        ({"backend": "vllm", "model": "m", "args": ["--dtype", "half"]}, "args is a mapping"),
        ({"backend": "vllm", "model": "m", "seed": 1, "args": {"seed": 2}}, "seed is given twice"),
        ({"backend": "vllm", "model": "m", "args": {"model": "n"}}, "model is given twice"),
        ({"backend": "vllm", "model": "m", "colour": "red"}, "colour"),
        ({"backend": "vllm", "model": "m", "rates": [0]}, "--rates"),
        ({"backend": "vllm", "model": "m", "suite": "standard", "input_len": 8}, "not both"),
    ],
)
def test_campaign_mistakes_are_reported_before_anything_runs(probe, message):
    with pytest.raises(InputError, match=message):
        check_campaign({"name": "c", "probes": [probe]}, "campaign.yaml")


def test_campaign_files_read_as_yaml_or_json_and_probes_need_distinct_names(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "name: fleet\nper_type: 2\nprobes:\n"
        "  - {name: chat, backend: openai, model: m, base_urls: {4090: 'http://{node_ip}:8000'},"
        " rates: [1, inf]}\n"
    )
    campaign = load_campaign(path)
    (probe,) = campaign.probes
    options = probe.options("rtx-4090", "10.0.0.7")
    assert options.changed() == {
        "backend": "openai",
        "model": "m",
        "rates": (1.0, float("inf")),
        "base_url": "http://10.0.0.7:8000",
    }
    assert probe.options("h100-pcie", "10.0.0.8").server.base_url is None  # no URL for it
    with pytest.raises(InputError, match="two probes are named 'chat'"):
        check_campaign({"name": "c", "probes": [probe.model_dump()] * 2}, "c.yaml")
    path.write_text("name: [unclosed\n")
    with pytest.raises(InputError, match="invalid YAML"):
        load_campaign(path)
    with pytest.raises(InputError, match="cannot read the file: No such file"):
        load_campaign(tmp_path / "absent.yaml")


def test_resume_keeps_a_finished_run_only_while_its_probe_is_unchanged(tmp_path):
    def campaign(rates):
        probe = {"name": "chat", "backend": "vllm", "model": "m", "rates": rates}
        return check_campaign({"name": "c", "probes": [probe]}, "c.yaml")

    host = hosts_from_nodes([ray_node(1, "box1", {"fleetplan-gpu:rtx-4090": 1.0})])
    first = campaign([1, 2])
    (job,) = plan_jobs(first, host)
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "run.json").write_text("{}")
    job.state, job.run_file, job.attempts = "done", "c/run.json", 1
    progress = tmp_path / "campaign-c.json"
    ResumeState(progress, first, restart=False).record(job)

    assert ResumeState(progress, first, restart=False).done(job)["run_file"] == "c/run.json"
    assert ResumeState(progress, first, restart=True).done(job) is None  # --restart
    (changed,) = plan_jobs(campaign([1, 4]), host)
    assert (
        ResumeState(progress, first, restart=False).done(changed) is None
    )  # other rates: run again
    (tmp_path / "c" / "run.json").unlink()
    assert ResumeState(progress, first, restart=False).done(job) is None  # its file is gone
    progress.write_text("{not json")
    with pytest.raises(InputError, match="unreadable campaign progress"):
        ResumeState(progress, first, restart=False)


def test_the_example_campaign_validates_as_written():
    campaign = load_campaign(Path(__file__).parents[1] / "examples" / "campaign.yaml")
    assert campaign.labels() == ["chat-8b-4090", "chat-8b-h100", "rag-running-servers"]
    tensor_parallel = campaign.probes[0].options("rtx-4090", "10.1.2.3")
    assert tensor_parallel.engine.tensor_parallel_size == 2
    assert tensor_parallel.hardware.gpu_count == 2
    servers = campaign.probes[2].options("rtx-4090", "10.1.2.3")
    assert servers.server.base_url == "http://10.1.2.3:8000"


def test_options_that_the_campaign_sets_are_refused_beside_it(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"name": "c", "probes": [{"backend": "vllm", "model": "m"}]}))
    done = fleetplan(
        "collect",
        "--ray",
        "127.0.0.1:1",
        "--campaign",
        path,
        "--model",
        "other",
        "--num-requests",
        "5",
        "--out",
        tmp_path / "out",
    )
    assert done.returncode == 3
    assert "--num-requests, --model conflict with --campaign" in done.stderr


ONE_PROBE = ("collect", "--backend", "vllm", "--model", "m")


def test_without_ray_the_message_says_how_to_get_it(tmp_path):
    hidden = tmp_path / "no-ray"
    (hidden / "ray").mkdir(parents=True)
    (hidden / "ray" / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    env = {**os.environ, "PYTHONPATH": str(hidden)}
    done = fleetplan(*ONE_PROBE, "--ray", "--out", tmp_path / "out", env=env)
    assert done.returncode == 3
    assert "Ray is not installed: pip install 'fleetplan[cluster]'" in done.stderr


def test_no_cluster_at_the_address_is_a_clear_message(tmp_path):
    done = fleetplan(*ONE_PROBE, "--ray", "127.0.0.1:1", "--out", tmp_path / "out")
    assert done.returncode == 3 and "Traceback" not in done.stderr
    assert "no Ray cluster at 127.0.0.1:1" in done.stderr and "ray start --head" in done.stderr
