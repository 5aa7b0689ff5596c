"""`fleetplan collect --ray`: the standard probe on every selected host of a Ray cluster.

Hosts say what GPU they have with a custom resource, `fleetplan-gpu:<type>` (`ray start
--resources='{"fleetplan-gpu:rtx-4090": 1}'`), or with Ray's own `accelerator_type:<name>` label
where it names the card unambiguously (Ray calls every H100 "H100": PCIe or SXM is not known, so
such hosts are typed "H100" unless they say more). One task per (probe, GPU type, host slot) is
pinned to its host and asks for all of that host's type resource and GPUs, so a host runs one
probe at a time. Each task runs `collectors.run.execute`, the code path of a single-host `fleetplan
collect`, and returns its run file to the driver, which writes it under `--out` and, with
`--ingest`, loads everything once at the end (the warehouse keeps one writer).

A task that fails or loses its host is run once more (on the same host if it is still there, else
on another host of the same type), then reported; the command exits 1 if anything failed. Progress
is kept in `<out>/campaign-<name>.json`: running the same campaign again skips what finished.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fleetplan.collectors.campaign import Campaign, Probe
from fleetplan.collectors.errors import CollectError
from fleetplan.collectors.options import CampaignOptions, CollectOptions, IngestOptions

from fleetplan.core.errors import FleetplanError, InputError
from fleetplan.core.exits import EXIT_CANNOT_START, EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS
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


@dataclass
class Job:
    probe: Probe
    label: str
    gpu_type: str
    slot: int
    host: Host | None
    attempts: int = 0
    state: str = "queued"
    detail: str = ""
    run_file: str | None = None
    error: str | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.label}/{self.gpu_type}/{self.slot + 1}"

    def where(self) -> str:
        return self.host.describe() if self.host else "no host"


@dataclass(frozen=True)
class HostOrder:
    """What a host's task is given: its options (pickled by Ray) and how to label its run."""

    key: str
    options: CollectOptions
    metadata: dict[str, str]
    gpu_type: str
    gpu_count: int


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


def plan_jobs(
    campaign: Campaign,
    hosts: list[Host],
    *,
    only_types: Sequence[str] | None = None,
    per_type: int | None = None,
) -> list[Job]:
    """One job per probe, GPU type and host slot. A type asked for but absent is a failed job,
    never a silent gap."""
    present = sorted({h.gpu_type for h in hosts})
    wanted = [canonical_gpu(t).gpu_id for t in only_types] if only_types else None
    count = per_type or campaign.per_type
    jobs = []
    for label, probe in zip(campaign.labels(), campaign.probes, strict=True):
        if probe.gpu_types:
            types = [canonical_gpu(t).gpu_id for t in probe.gpu_types]
            types = [t for t in types if wanted is None or t in wanted]
        else:  # every type the cluster has, or every type asked for on the command line
            types = wanted if wanted is not None else present
        for gpu_type in dict.fromkeys(types):
            of_type = [h for h in hosts if h.gpu_type == gpu_type]
            slots = count or max(len(of_type), 1)
            for slot in range(slots):
                host = of_type[slot] if slot < len(of_type) else None
                job = Job(probe, label, gpu_type, slot, host)
                if host is None:
                    job.state = "failed"
                    job.error = (
                        f"no live host of type {gpu_type} in the cluster"
                        if not of_type
                        else f"only {len(of_type)} live host(s) of type {gpu_type}"
                    )
                jobs.append(job)
    return jobs


# -- what runs on each host -----------------------------------------------------------------------


class _Board:
    """A Ray actor: each task's state, for the driver to show."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    def update(self, key: str, **fields: Any) -> None:
        self.rows.setdefault(key, {}).update(fields)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return self.rows


def probe_on_host(order: HostOrder, board: Any) -> dict[str, Any]:
    """One host's collection, inside a Ray task: `fleetplan collect` with these options."""
    import ray
    from fleetplan.collectors.events import LevelEvents, observing
    from fleetplan.collectors.run import execute
    from fleetplan.collectors.telemetry import open_telemetry

    node = ray.get_runtime_context().get_node_id()
    board.update.remote(order.key, state="running", detail="starting", pid=os.getpid())
    out = Path(tempfile.mkdtemp(prefix="fleetplan-probe-"))
    try:
        telemetry = open_telemetry()
        try:
            options, warning = settle_gpu(
                order.options,
                gpu_type=order.gpu_type,
                gpu_count=order.gpu_count,
                seen=telemetry.gpus,
            )
        finally:
            telemetry.close()

        def on_level(shape: str, level: int, levels: int) -> None:
            board.update.remote(order.key, detail=f"{shape}: level {level + 1} of {levels}")

        stamp = {**order.metadata, "ray_node_id": node, "ray_gpu_type": order.gpu_type}
        with observing(LevelEvents(on_level=on_level, metadata=stamp)):
            result = execute(options, out)
        return {
            "name": result.path.name,
            "data": result.path.read_bytes(),
            # every incomplete level is among the problems (what makes a host's exit code 1)
            "problems": [*([warning] if warning else []), *result.problems],
        }
    finally:
        shutil.rmtree(out, ignore_errors=True)


def settle_gpu(
    options: CollectOptions, *, gpu_type: str, gpu_count: int, seen: list
) -> tuple[CollectOptions, str | None]:
    """What GPU a host's run records. NVML's view wins; where NVML sees none, the host's Ray type
    names it. Returns the options to run with, and a warning when the two disagree (the host is
    typed wrongly in Ray)."""
    hardware = options.hardware
    if hardware.gpu is not None:
        return options, None  # the probe names it
    if not seen:
        return options.replace(gpu=gpu_type, gpu_count=hardware.gpu_count or gpu_count or 1), None
    declared = canonical_gpu(gpu_type)
    models = sorted({gpu.gpu_model for gpu in seen})
    if declared.known and declared.gpu_id not in models:
        return options, (
            f"this host is typed {gpu_type} in Ray but NVML sees {', '.join(models)}: the run "
            "is recorded with what NVML sees; fix the host's fleetplan-gpu resource"
        )
    return options, None


# -- the driver ---------------------------------------------------------------------------------


def _import_ray():
    try:
        import ray
    except ImportError:
        raise CollectError(
            "Ray is not installed: pip install 'fleetplan[cluster]' (in a checkout: "
            "pip install -e '.[cluster]'), on this host and on every host of the cluster"
        ) from None
    return ray


class _State:
    """What finished, kept beside the run files so that the same campaign can be resumed."""

    def __init__(self, path: Path, campaign: Campaign, *, restart: bool):
        self.path = path
        self.jobs: dict[str, dict[str, Any]] = {}
        if path.exists() and not restart:
            try:
                saved = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as error:
                raise InputError(f"unreadable campaign progress: {error}", file=str(path)) from None
            self.jobs = saved.get("jobs", {})
        self.campaign = campaign

    def done(self, job: Job) -> dict[str, Any] | None:
        entry = self.jobs.get(job.key)
        if entry and entry.get("state") == "done" and entry.get("probe") == job.probe.digest():
            run_file = self.path.parent / entry["run_file"]
            return entry if run_file.exists() else None
        return None

    def record(self, job: Job) -> None:
        self.jobs[job.key] = {
            "state": job.state,
            "probe": job.probe.digest(),
            "run_file": job.run_file,
            "host": job.where(),
            "attempts": job.attempts,
            "error": job.error,
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        body = {"campaign": self.campaign.name, "jobs": self.jobs}
        temporary = self.path.with_suffix(".tmp")
        temporary.write_text(json.dumps(body, indent=1), encoding="utf-8")
        temporary.replace(self.path)


def _reason(error: BaseException) -> str:
    """A task's failure, in words."""
    import ray.exceptions as rex

    if isinstance(error, rex.RayTaskError):
        cause = error.cause if getattr(error, "cause", None) is not None else error
        if isinstance(cause, FleetplanError):
            return str(cause)
        return f"{type(cause).__name__}: {str(cause).strip().splitlines()[-1][:300]}"
    if isinstance(error, rex.WorkerCrashedError):
        return "the task's worker process died (killed, or out of memory)"
    if isinstance(error, rex.NodeDiedError | rex.TaskUnschedulableError):
        return "the host left the cluster"
    return f"{type(error).__name__}: {str(error).strip().splitlines()[0][:300]}"


def _host_lost(error: BaseException) -> bool:
    import ray.exceptions as rex

    return isinstance(error, rex.NodeDiedError)


def _say(job: Job, text: str, stream=sys.stderr) -> None:
    print(f"[{job.gpu_type} #{job.slot + 1} {job.label}] {text}", file=stream, flush=True)


def _unreachable(address: str) -> str | None:
    """Why the cluster's head cannot be reached, or None. `ray.init` retries an absent head for
    minutes (and "auto" may name a cluster that has since stopped), so look first."""
    if address.startswith("ray://"):
        return None  # Ray Client: ray.init fails quickly on its own
    try:  # how ray.init itself resolves "auto", RAY_ADDRESS and localhost
        from ray._private.services import canonicalize_bootstrap_address_or_die

        resolved = canonicalize_bootstrap_address_or_die(None if address == "auto" else address)
    except ConnectionError as error:
        return str(error).splitlines()[0]
    except (ImportError, AttributeError, TypeError):  # another Ray: leave it to ray.init
        return None
    except ValueError as error:
        return str(error).splitlines()[0]
    host, _, port = resolved.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=5):
            return None
    except (OSError, ValueError) as error:
        return f"nothing answers at {resolved}: {error}"


def run_campaign(campaign: Campaign, options: CampaignOptions) -> int:
    """Run the campaign on the cluster; the exit code."""
    ray = _import_ray()
    address = options.address
    unreachable = _unreachable(address)
    where = (
        "found (--ray auto: $RAY_ADDRESS or the last `ray start` here)"
        if address == "auto"
        else f"at {address}"
    )
    try:
        if unreachable:
            raise ConnectionError(unreachable)
        ray.init(
            address=address, log_to_driver=False, namespace="fleetplan", logging_level="warning"
        )
    except (ConnectionError, RuntimeError, ValueError) as error:
        print(
            f"fleetplan collect: no Ray cluster {where} ({str(error).splitlines()[0]}): "
            "start one with `ray start --head` (workers: `ray start --address HEAD:6379`), "
            "or pass --ray HOST:PORT",
            file=sys.stderr,
        )
        return EXIT_CANNOT_START
    try:
        return _run(ray, campaign, options)
    except KeyboardInterrupt:
        print(
            f"\ninterrupted: the runs that finished are kept (progress in "
            f"{options.out / f'campaign-{campaign.name}.json'}); the same command resumes "
            "the rest. Ray stops this campaign's tasks.",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    finally:
        ray.shutdown()


def _run(ray: Any, campaign: Campaign, options: CampaignOptions) -> int:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    out = options.out
    folder = out / campaign.name
    folder.mkdir(parents=True, exist_ok=True)
    state = _State(out / f"campaign-{campaign.name}.json", campaign, restart=options.restart)
    hosts = hosts_from_nodes(ray.nodes())
    jobs = plan_jobs(campaign, hosts, only_types=options.gpu_types, per_type=options.per_type)
    types = sorted({h.gpu_type for h in hosts})
    if not jobs:
        print(
            "fleetplan collect: nothing to run: "
            + (
                f"no host of the cluster ({len(ray.nodes())} node(s)) says its GPU type; start "
                "each GPU host with `ray start ... --resources='{\"fleetplan-gpu:<type>\": 1}'`"
                if not hosts
                else f"--gpu-types {','.join(options.gpu_types or ())} selects none of the "
                "campaign's probes "
                f"(the cluster has {', '.join(types)})"
            ),
            file=sys.stderr,
        )
        return EXIT_CANNOT_START
    print(
        f"campaign {campaign.name}: {len(jobs)} run(s) of {len(campaign.probes)} probe(s) on "
        f"{len(hosts)} host(s) of {len(types)} GPU type(s) ({', '.join(types) or 'none'})",
        file=sys.stderr,
    )
    earlier = 0
    for job in jobs:
        if job.state == "queued" and (entry := state.done(job)):
            job.state, job.run_file, job.detail = "done", entry["run_file"], "earlier"
            job.attempts = int(entry.get("attempts") or 1)
            earlier += 1
    if earlier:
        print(
            f"resuming: {earlier} run(s) finished earlier are kept ({state.path}; --restart "
            "runs them again)",
            file=sys.stderr,
        )
    for job in jobs:
        if job.state == "failed":
            _say(job, f"failed: {job.error}")
            state.record(job)

    # The progress board lives beside the driver (a lost GPU host must not take it along) and is
    # up before any task reports to it.
    board = (
        ray.remote(num_cpus=0)(_Board)
        .options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(
                ray.get_runtime_context().get_node_id(), soft=True
            )
        )
        .remote()
    )
    ray.get(board.snapshot.remote(), timeout=300)
    task = ray.remote(probe_on_host)
    pending: dict[Any, Job] = {}

    def submit(job: Job) -> None:
        assert job.host is not None
        job.attempts += 1
        job.state, job.detail = "queued", ""
        board.update.remote(job.key, state="queued", detail="", pid=None)
        metadata = {
            "campaign": campaign.name,
            "campaign_probe": job.label,
            "campaign_run": job.key,
        }
        ref = task.options(
            num_cpus=0,
            num_gpus=job.host.gpus,
            resources={job.host.resource: job.host.amount},
            scheduling_strategy=NodeAffinitySchedulingStrategy(job.host.node_id, soft=False),
            max_retries=0,
            retry_exceptions=False,
        ).remote(
            HostOrder(
                key=job.key,
                options=job.probe.options(job.gpu_type, job.host.ip),
                metadata=metadata,
                gpu_type=job.gpu_type,
                gpu_count=job.probe.gpu_count or max(job.host.gpus, 1),
            ),
            board,
        )
        pending[ref] = job
        attempt = f" (attempt {job.attempts})" if job.attempts > 1 else ""
        _say(job, f"queued on {job.where()}{attempt}")

    for job in jobs:
        if job.state == "queued":
            submit(job)

    shown: dict[str, tuple] = {}
    lost: set[str] = set()
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=0.5)
        try:
            rows = ray.get(board.snapshot.remote(), timeout=30)
        except Exception:  # progress is lost, the results are not: they come with the tasks
            rows = {}
        for job in pending.values():
            row = rows.get(job.key, {})
            view = (row.get("state"), row.get("detail"), job.attempts)
            if row.get("state", "queued") != "queued" and shown.get(job.key) != view:
                shown[job.key] = view
                job.state, job.detail = row.get("state", job.state), row.get("detail", "")
                _say(job, f"{job.state}: {job.detail} (pid {row.get('pid')} on {job.where()})")
        for ref in ready:
            job = pending.pop(ref)
            try:
                result = ray.get(ref)
            except Exception as error:  # the task failed or its host went away
                reason = _reason(error)
                if _host_lost(error) and job.host is not None:
                    # Ray lists a dead node as alive for a while (its health checks time out
                    # after ~15 s): never retry there.
                    lost.add(job.host.node_id)
                if job.attempts <= campaign.retries:
                    alive = [h for h in hosts_from_nodes(ray.nodes()) if h.node_id not in lost]
                    same = [h for h in alive if job.host and h.node_id == job.host.node_id]
                    others = [h for h in alive if h.gpu_type == job.gpu_type]
                    if same or others:
                        job.host = (same or others)[0]
                        _say(job, f"failed: {reason}; retrying on {job.where()}")
                        shown.pop(job.key, None)
                        submit(job)
                        continue
                    reason += f"; no live host of type {job.gpu_type} to retry on"
                job.state, job.error = "failed", reason
                _say(job, f"FAILED after {job.attempts} attempt(s): {reason}")
                state.record(job)
                continue
            name = f"{job.key.replace('/', '--')}--{result['name']}"
            partial = folder / f".{name}.part"  # a killed driver leaves no half run file
            partial.write_bytes(result["data"])
            partial.replace(folder / name)
            job.state, job.run_file = "done", f"{campaign.name}/{name}"
            job.problems = result["problems"]
            extra = f" ({len(job.problems)} problem(s))" if job.problems else ""
            _say(job, f"done: {folder / name}{extra}")
            for problem in job.problems:
                _say(job, f"problem: {problem}")
            state.record(job)

    _summary(jobs)
    done = [job for job in jobs if job.state == "done"]
    loaded = _ingest(options.ingest, out, done) if options.ingest else True
    failed = [job for job in jobs if job.state != "done"]
    troubled = [job for job in jobs if job.problems]
    return EXIT_PROBLEMS if failed or troubled or not loaded else EXIT_OK


def _summary(jobs: list[Job]) -> None:
    print(f"{'run':<44}{'host':<34}{'tries':>6}  result")
    for job in jobs:
        result = job.run_file if job.state == "done" else f"FAILED: {job.error}"
        if job.state == "done" and job.detail == "earlier":
            result += " (earlier)"
        print(f"{job.key:<44}{job.where()[:33]:<34}{job.attempts:>6}  {result}")
    done = sum(job.state == "done" for job in jobs)
    print(f"{done} of {len(jobs)} run(s) done, {len(jobs) - done} failed")


def _ingest(ingest: IngestOptions, out: Path, jobs: list[Job]) -> bool:
    """Loads the finished runs; False (saying how to load them later) when it cannot."""
    from fleetplan.warehouse.db import Warehouse
    from fleetplan.warehouse.ingest import Status, ingest_paths

    from fleetplan.core.errors import WarehouseError

    paths = [out / job.run_file for job in jobs if job.run_file]
    if not paths:
        return True
    try:
        with Warehouse.open(ingest.warehouse, wait_s=ingest.wait_s) as warehouse:
            outcomes = list(ingest_paths(warehouse, paths))
    except WarehouseError as error:
        folders = " ".join(sorted({str(p.parent) for p in paths}))
        print(
            f"fleetplan collect: the runs were not ingested ({error}); they are kept: "
            f"`fleetplan ingest {folders}` later, or upload them in the dashboard",
            file=sys.stderr,
        )
        return False
    for outcome in outcomes:
        print(f"{outcome.status.value}: {Path(outcome.file).name}: {outcome.message}")
    return all(outcome.status is not Status.REJECTED for outcome in outcomes)
