"""Issue 14, Ray campaigns that never lose or misreport measurements: an incomplete level is not
"done", a probe without a URL for a type the cluster has is refused before any host starts,
losing stdout loses no measurement, Ctrl-C keeps each host's partial run, and a campaign's stamp
survives the `benchmarks` CSV round trip."""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fleetplan.collectors.ray_campaign.campaign_file import check_campaign
from fleetplan.collectors.ray_campaign.hosts import hosts_from_nodes
from fleetplan.collectors.ray_campaign.jobs import jobs_without_url, plan_jobs
from fleetplan.collectors.vllm_server import free_port
from fleetplan.core.contract import RunFile
from fleetplan.core.errors import InputError
from fleetplan.warehouse.sample_data import IONET_FILE, sample_dir
from tests.support.ray_campaign import TYPES, Driver, campaign_file, ray_node

STREAM_SERVER = Path(__file__).parents[1] / "benchmarks" / "inputs" / "stream_server.py"
STAMP = {"campaign": "fleet", "campaign_probe": "chat", "ray_node_id": "ab" * 28}


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_a_campaign_stamp_survives_the_benchmarks_csv_round_trip(cli, tmp_path):
    run_file = json.loads((sample_dir() / "benchmarks" / IONET_FILE).read_text())
    run_file["runs"] = run_file["runs"][:1]
    run_file["runs"][0]["metadata"] = {**run_file["runs"][0].get("metadata", {}), **STAMP}
    source = tmp_path / "stamped.json"
    source.write_text(json.dumps(run_file))
    first, second = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    cli("ingest", "--warehouse", first, source, check=True)
    table = tmp_path / "table.csv"
    cli("benchmarks", "--warehouse", first, "-o", table, check=True)
    rows = list(csv.DictReader(io.StringIO(table.read_text())))
    assert rows and all(json.loads(row["run_metadata"]).items() >= STAMP.items() for row in rows)
    exported = json.loads(
        cli("benchmarks", "--warehouse", first, "--format", "json", check=True).stdout
    )
    assert json.loads(exported[0]["run_metadata"]).items() >= STAMP.items()
    # and back: the table imported into another warehouse carries the same stamp
    cli("ingest", "--warehouse", second, table, check=True)
    again = list(csv.DictReader(io.StringIO(cli("benchmarks", "--warehouse", second).stdout)))
    assert [json.loads(r["run_metadata"]) for r in again] == [
        json.loads(r["run_metadata"]) for r in rows
    ]
    # a cell that is not a JSON object is refused, naming the column
    broken = tmp_path / "broken.csv"
    broken.write_text(table.read_text().replace('"{""', '"[{""', 1))
    refused = cli("ingest", "--warehouse", tmp_path / "c.duckdb", broken)
    assert refused.returncode == 1 and "run_metadata" in refused.stdout


def test_urls_for_some_gpu_types_are_refused_before_any_host_starts():
    probe = {"name": "chat", "backend": "openai", "model": "m"}
    urls = {"base_urls": {"rtx-4090": "http://{node_ip}:8000"}}
    with pytest.raises(InputError, match="no URL for h100-pcie, which its gpu_types name"):
        check_campaign(
            {"name": "c", "probes": [{**probe, **urls, "gpu_types": ["4090", "h100-pcie"]}]}, "c"
        )
    campaign = check_campaign({"name": "c", "probes": [{**probe, **urls}]}, "c")  # every type
    hosts = hosts_from_nodes(
        [ray_node(1, "a", {TYPES["rtx-4090"]: 1}), ray_node(2, "b", {TYPES["h100-pcie"]: 1})]
    )
    message = jobs_without_url(plan_jobs(campaign, hosts))
    assert message and "probe chat: h100-pcie" in message and "rtx-4090" not in message
    assert jobs_without_url(plan_jobs(campaign, hosts, only_types=["4090"])) is None
    every = check_campaign({"name": "c", "probes": [{**probe, "base_url": "http://x"}]}, "c")
    assert jobs_without_url(plan_jobs(every, hosts)) is None


def test_rays_own_messages_go_to_stderr_and_a_closed_stream_stops_only_the_printing(capsys):
    pytest.importorskip("ray")
    from ray._private.worker import print_to_stdstream

    from fleetplan.collectors.ray_campaign import report

    with report.guarded_output():
        # what Ray's error listener does with a "(raylet)" message while the driver runs
        print_to_stdstream(
            {"lines": ["[state-dump] NodeManager:"], "pid": "raylet", "is_err": False},
            ignore_prefix=False,
        )
        report.out("summary line")
    captured = capsys.readouterr()
    assert "summary line" in captured.out and "state-dump" not in captured.out
    assert "(raylet)" in captured.err and "[state-dump] NodeManager:" in captured.err
    read, write = os.pipe()
    os.close(read)
    stream = report.Guarded(os.fdopen(write, "w"))
    assert stream.write("lost\n") == 5 and stream.lost  # BrokenPipeError, not raised
    stream.write("and more\n")


def serve(port: int, fault: str = "none") -> subprocess.Popen:
    """The tests' streaming server on a port of our choosing (the same URL, so the same probe,
    once it is started again)."""
    process = subprocess.Popen(
        [
            sys.executable,
            STREAM_SERVER,
            "--port",
            str(port),
            "--ttft-ms",
            "20",
            "--tpot-ms",
            "5",
            "--fault",
            fault,
        ]
    )
    import requests

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if requests.get(f"http://127.0.0.1:{port}/v1/models", timeout=1).ok:
                return process
        except requests.ConnectionError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the test server did not start")


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_an_incomplete_run_is_not_done_and_is_measured_again_even_with_stdout_gone(
    ray_cluster, stream_server, tmp_path
):
    port = free_port()
    dying = serve(port, fault="die-after=14")  # warm-up 1, level 1 of 10, dies in level 2
    servers = [dying]
    try:
        urls = {"h100-pcie": stream_server(), "rtx-4090": f"http://127.0.0.1:{port}"}
        campaign, out = campaign_file(tmp_path, urls, name="cut"), tmp_path / "runs"
        args = ("--ray", ray_cluster.address, "--campaign", campaign, "--out", out)

        # 1. the 4090's server dies mid-level: the run lands, as incomplete, and the command
        # says so and exits 1
        code, stdout, stderr = Driver(*args).finish()
        assert code == 1, stderr + stdout
        assert "1 of 2 run(s) done, 0 failed, 1 incomplete" in stdout
        (line,) = [x for x in stdout.splitlines() if x.startswith("chat/rtx-4090/1")]
        assert "INCOMPLETE" in line and "measures it again" in line
        assert "(raylet)" not in stdout  # Ray's own messages stay off our stdout
        state = json.loads((out / "campaign-cut.json").read_text())["jobs"]
        assert state["chat/rtx-4090/1"]["state"] == "incomplete"
        (cut,) = (out / "cut").glob("*rtx-4090*.json")
        points = RunFile.model_validate_json(cut.read_text()).runs[0].points
        assert points[0].complete and not points[-1].complete
        h100_done_at = state["chat/h100-pcie/1"]["at"]

        # 2. its server back, the same command with stdout and stderr closed at once (`| head`):
        # only the 4090 is measured again, its run file and the progress are written
        servers.append(serve(port))
        driver = subprocess.Popen(
            [sys.executable, "-m", "fleetplan", "collect", *map(str, args)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        driver.stdout.close()
        driver.stderr.close()
        assert driver.wait(timeout=300) == 0
        state = json.loads((out / "campaign-cut.json").read_text())["jobs"]
        assert state["chat/rtx-4090/1"]["state"] == "done"
        assert state["chat/h100-pcie/1"]["at"] == h100_done_at  # kept, not measured again
        assert len(list((out / "cut").glob("*rtx-4090*.json"))) == 2
        assert len(list((out / "cut").glob("*h100-pcie*.json"))) == 1
    finally:
        for server in servers:
            server.kill()
            server.wait()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_probe_without_a_url_for_a_type_the_cluster_has_stops_before_any_host_starts(
    ray_cluster, stream_server, tmp_path
):
    campaign = campaign_file(tmp_path, {"rtx-4090": stream_server()}, name="half")
    out = tmp_path / "runs"
    code, _, stderr = Driver(
        "--ray", ray_cluster.address, "--campaign", campaign, "--out", out
    ).finish()
    assert code == 3, stderr
    assert "no server URL for these GPU types" in stderr and "probe chat: h100-pcie" in stderr
    assert "queued on" not in stderr and not list(out.rglob("*.json"))


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_ctrl_c_keeps_each_hosts_partial_run_as_incomplete(ray_cluster, stream_server, tmp_path):
    # 16 tokens at 20 ms, 60 requests at 2 req/s in the first level (30 s): Ctrl-C lands mid-level
    # on both hosts even when one starts many seconds after the other (as under a loaded CI)
    urls = {t: stream_server(ttft_ms=50, tpot_ms=20) for t in TYPES}
    campaign = campaign_file(tmp_path, urls, name="halt", num_requests=60)
    out = tmp_path / "runs"
    driver = Driver("--ray", ray_cluster.address, "--campaign", campaign, "--out", out)
    measuring: set[str] = set()
    while measuring != set(TYPES):  # the two hosts' lines come in either order
        line = driver.wait_for("level 1 of 2")
        measuring |= {t for t in TYPES if f"[{t} #1" in line}
    time.sleep(2)  # some requests of the first level done
    driver.process.send_signal(signal.SIGINT)
    code, stdout, stderr = driver.finish()
    assert code == 130, stderr
    assert "Traceback" not in stderr and "(raylet)" not in stdout
    state = json.loads((out / "campaign-halt.json").read_text())["jobs"]
    for gpu_type in TYPES:
        assert state[f"chat/{gpu_type}/1"]["state"] == "incomplete", stderr
        (path,) = (out / "halt").glob(f"*{gpu_type}*.json")
        (run,) = RunFile.model_validate_json(path.read_text()).runs
        assert not run.points[-1].complete and run.points[0].completed > 0
        assert run.metadata["campaign"] == "halt"
