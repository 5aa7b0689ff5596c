"""The campaign's driver, on the machine that gave the command: connects to Ray, plans the jobs,
sends each to its host, shows their status, retries the failed ones, writes the run files that
come back, and sums up."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import Any

from fleetplan.collectors.errors import CollectError
from fleetplan.collectors.options import CampaignOptions
from fleetplan.collectors.ray_campaign import report
from fleetplan.collectors.ray_campaign.campaign_file import Campaign
from fleetplan.collectors.ray_campaign.hosts import hosts_from_nodes
from fleetplan.collectors.ray_campaign.ingest import ingest_finished
from fleetplan.collectors.ray_campaign.jobs import Job, jobs_without_url, plan_jobs
from fleetplan.collectors.ray_campaign.resume import ResumeState
from fleetplan.collectors.ray_campaign.task import (
    HostOrder,
    StatusBoard,
    failure_reason,
    host_lost,
    probe_on_host,
)
from fleetplan.core.exits import EXIT_INTERRUPTED, EXIT_OK, EXIT_PROBLEMS


def run_campaign(campaign: Campaign, options: CampaignOptions) -> int:
    """Run the campaign on the cluster at `options.address`; the exit code. Raises CollectError
    when Ray is missing, no cluster answers or nothing is left to run."""
    ray = _import_ray()
    with report.guarded_output():
        _connect(ray, options.address)
        try:
            return _run(ray, campaign, options)
        except KeyboardInterrupt:
            report.interrupted(options.out / f"campaign-{campaign.name}.json")
            return EXIT_INTERRUPTED
        finally:
            ray.shutdown()


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise CollectError(
            "Ray is not installed: pip install 'fleetplan[cluster]' (in a checkout: "
            "pip install -e '.[cluster]'), on this host and on every host of the cluster"
        ) from None
    return ray


def _connect(ray: Any, address: str) -> None:
    where = (
        "found (--ray auto: $RAY_ADDRESS or the last `ray start` here)"
        if address == "auto"
        else f"at {address}"
    )
    try:
        if unreachable := _unreachable(address):
            raise ConnectionError(unreachable)
        ray.init(
            address=address, log_to_driver=False, namespace="fleetplan", logging_level="warning"
        )
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise CollectError(
            f"no Ray cluster {where} ({str(error).splitlines()[0]}): start one with `ray start "
            "--head` (workers: `ray start --address HEAD:6379`), or pass --ray HOST:PORT"
        ) from None


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


def _run(ray: Any, campaign: Campaign, options: CampaignOptions) -> int:
    out = options.out
    (out / campaign.name).mkdir(parents=True, exist_ok=True)
    state = ResumeState(out / f"campaign-{campaign.name}.json", campaign, restart=options.restart)
    hosts = hosts_from_nodes(ray.nodes())
    jobs = plan_jobs(campaign, hosts, only_types=options.gpu_types, per_type=options.per_type)
    if not jobs:
        raise CollectError(report.nothing_to_run(hosts, len(ray.nodes()), options.gpu_types))
    if lacking := jobs_without_url(jobs):  # before any host starts
        raise CollectError(lacking)
    report.starting(campaign, jobs, hosts)
    _resume(jobs, state)
    for job in jobs:
        if job.state == "failed":
            report.say(job, f"failed: {job.error}")
            state.record(job)
    _Dispatcher(ray, campaign, state, out).run(jobs)
    report.summary(jobs)
    # an incomplete run is loaded as a single-host collect loads it: its levels marked incomplete
    landed = [job for job in jobs if job.state in ("done", "incomplete")]
    loaded = ingest_finished(options.ingest, out, landed) if options.ingest else True
    failed = [job for job in jobs if job.state != "done"]
    troubled = [job for job in jobs if job.problems]
    return EXIT_PROBLEMS if failed or troubled or not loaded else EXIT_OK


def _resume(jobs: list[Job], state: ResumeState) -> None:
    """Marks the jobs that finished earlier (with their probe as it is now) as done."""
    earlier = 0
    for job in jobs:
        if job.state == "queued" and (entry := state.done(job)):
            job.state, job.run_file, job.detail = "done", entry["run_file"], "earlier"
            job.attempts = int(entry.get("attempts") or 1)
            earlier += 1
    if earlier:
        report.resuming(earlier, state.path)


class _Dispatcher:
    """Sends jobs to their hosts and follows them until each is done or has failed for good."""

    def __init__(self, ray: Any, campaign: Campaign, state: ResumeState, out: Path):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.ray, self.campaign, self.state, self.out = ray, campaign, state, out
        self.pinned = NodeAffinitySchedulingStrategy
        # The status board lives beside the driver (a lost GPU host must not take it along) and
        # is up before any task reports to it.
        here = self.pinned(ray.get_runtime_context().get_node_id(), soft=True)
        self.board = ray.remote(num_cpus=0)(StatusBoard).options(scheduling_strategy=here).remote()
        ray.get(self.board.snapshot.remote(), timeout=300)
        self.task = ray.remote(probe_on_host)
        self.pending: dict[Any, Job] = {}
        self.shown: dict[str, tuple] = {}  # the status last printed per job
        self.lost: set[str] = set()  # nodes that died: never retried on

    def run(self, jobs: list[Job]) -> None:
        for job in jobs:
            if job.state == "queued":
                self.submit(job)
        try:
            while self.pending:
                ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=0.5)
                self.show_status()
                for ref in ready:
                    self.finish(self.pending.pop(ref), ref)
        except KeyboardInterrupt:
            self.stop()
            raise

    def stop(self, wait_s: float = 60) -> None:
        """Ctrl-C: every host stops as a single-host collect does (the level in flight marked
        incomplete) and sends its partial run, which lands as incomplete. Nothing is retried."""
        if not self.pending:
            return
        report.stopping(len(self.pending))
        self.board.stop.remote()
        deadline = time.monotonic() + wait_s
        while self.pending and time.monotonic() < deadline:
            ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=0.5)
            for ref in ready:
                job = self.pending.pop(ref)
                try:
                    self.land(job, self.ray.get(ref))
                except Exception as error:  # stopped before it measured anything
                    job.state, job.error = "failed", f"interrupted: {failure_reason(error)}"
                    report.say(job, f"stopped: {job.error}")
                    self.state.record(job)

    def submit(self, job: Job) -> None:
        assert job.host is not None
        job.attempts += 1
        job.state, job.detail = "queued", ""
        self.board.update.remote(job.key, state="queued", detail="", pid=None)
        order = HostOrder(
            key=job.key,
            options=job.probe.options(job.gpu_type, job.host.ip),
            metadata={
                "campaign": self.campaign.name,
                "campaign_probe": job.label,
                "campaign_run": job.key,
            },
            gpu_type=job.gpu_type,
            gpu_count=job.probe.gpu_count or max(job.host.gpus, 1),
        )
        ref = self.task.options(
            num_cpus=0,
            num_gpus=job.host.gpus,
            resources={job.host.resource: job.host.amount},
            scheduling_strategy=self.pinned(job.host.node_id, soft=False),
            max_retries=0,
            retry_exceptions=False,
        ).remote(order, self.board)
        self.pending[ref] = job
        attempt = f" (attempt {job.attempts})" if job.attempts > 1 else ""
        report.say(job, f"queued on {job.where()}{attempt}")

    def show_status(self) -> None:
        try:
            rows = self.ray.get(self.board.snapshot.remote(), timeout=30)
        except Exception:  # the status is lost, the results are not: they come with the tasks
            rows = {}
        for job in self.pending.values():
            row = rows.get(job.key, {})
            view = (row.get("state"), row.get("detail"), job.attempts)
            if row.get("state", "queued") != "queued" and self.shown.get(job.key) != view:
                self.shown[job.key] = view
                job.state, job.detail = row.get("state", job.state), row.get("detail", "")
                report.say(
                    job, f"{job.state}: {job.detail} (pid {row.get('pid')} on {job.where()})"
                )

    def finish(self, job: Job, ref: Any) -> None:
        try:
            result = self.ray.get(ref)
        except Exception as error:  # the task failed or its host went away
            self.failed(job, error)
            return
        self.land(job, result)

    def land(self, job: Job, result: dict[str, Any]) -> None:
        """Writes the run file a host sent; its job is done, or incomplete (a level the server
        or Ctrl-C cut short), which the same command measures again."""
        name = f"{job.key.replace('/', '--')}--{result['name']}"
        folder = self.out / self.campaign.name
        partial = folder / f".{name}.part"  # a killed driver leaves no half run file
        partial.write_bytes(result["data"])
        partial.replace(folder / name)
        job.run_file = f"{self.campaign.name}/{name}"
        job.problems = result["problems"]
        job.searches = result.get("searches", [])
        if result.get("interrupted"):
            job.state, job.detail = "incomplete", "interrupted"
        elif result.get("incomplete", False):
            job.state, job.detail = "incomplete", "a level was cut short"
        else:
            job.state = "done"
        extra = f" ({len(job.problems)} problem(s))" if job.problems else ""
        report.say(job, f"{job.state}: {folder / name}{extra}")
        for found in job.searches:
            report.say(job, f"capacity search, {found}")
        for problem in job.problems:
            report.say(job, f"problem: {problem}")
        self.state.record(job)

    def failed(self, job: Job, error: BaseException) -> None:
        """Runs the job once more where it can (its host, else another of its type), or
        records it as failed."""
        reason = failure_reason(error)
        if host_lost(error) and job.host is not None:
            # Ray lists a dead node as alive for a while (its health checks time out after
            # ~15 s): never retry there.
            self.lost.add(job.host.node_id)
        if job.attempts <= self.campaign.retries:
            alive = [h for h in hosts_from_nodes(self.ray.nodes()) if h.node_id not in self.lost]
            same = [h for h in alive if job.host and h.node_id == job.host.node_id]
            others = [h for h in alive if h.gpu_type == job.gpu_type]
            if same or others:
                job.host = (same or others)[0]
                report.say(job, f"failed: {reason}; retrying on {job.where()}")
                self.shown.pop(job.key, None)
                self.submit(job)
                return
            reason += f"; no live host of type {job.gpu_type} to retry on"
        job.state, job.error = "failed", reason
        report.say(job, f"FAILED after {job.attempts} attempt(s): {reason}")
        self.state.record(job)
