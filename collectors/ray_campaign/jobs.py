"""A campaign's jobs: one per probe, GPU type and host slot, and what became of each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fleetplan.collectors.ray_campaign.campaign_file import Campaign, Probe
from fleetplan.collectors.ray_campaign.hosts import Host
from fleetplan.core.gpus import canonical_gpu


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
    searches: list[str] = field(default_factory=list)  # "shape: capacity ..." (--find-capacity)

    @property
    def key(self) -> str:
        return f"{self.label}/{self.gpu_type}/{self.slot + 1}"

    def where(self) -> str:
        return self.host.describe() if self.host else "no host"


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


def jobs_without_url(jobs: list[Job]) -> str | None:
    """Why some planned jobs could not run, in words, or None: an openai probe with `base_urls`
    for some GPU types and no `base_url` has no server on a host of another type. Checked
    before any host starts, with the types the cluster turned out to have."""
    lacking: dict[str, list[str]] = {}
    for job in jobs:
        if job.state == "queued" and job.probe.types_without_url([job.gpu_type]):
            lacking.setdefault(job.label, [])
            if job.gpu_type not in lacking[job.label]:
                lacking[job.label].append(job.gpu_type)
    if not lacking:
        return None
    said = "; ".join(f"probe {label}: {', '.join(types)}" for label, types in lacking.items())
    return (
        f"no server URL for these GPU types, which the cluster has ({said}): add them to the "
        "probe's base_urls, give base_url (with {node_ip}) for the rest, limit the probe with "
        "gpu_types, or leave them out with --gpu-types"
    )
