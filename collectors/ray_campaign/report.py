"""What a campaign's driver prints: a line per job as it moves (stderr), and the summary table
at the end (stdout)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from fleetplan.collectors.ray_campaign.campaign_file import Campaign
from fleetplan.collectors.ray_campaign.hosts import Host
from fleetplan.collectors.ray_campaign.jobs import Job


def say(job: Job, text: str, stream: TextIO | None = None) -> None:
    print(
        f"[{job.gpu_type} #{job.slot + 1} {job.label}] {text}",
        file=stream or sys.stderr,
        flush=True,
    )


def nothing_to_run(hosts: list[Host], nodes: int, gpu_types: Sequence[str] | None) -> str:
    """Why no job was planned, and what to do."""
    if not hosts:
        return (
            f"nothing to run: no host of the cluster ({nodes} node(s)) says its GPU type; start "
            "each GPU host with `ray start ... --resources='{\"fleetplan-gpu:<type>\": 1}'`"
        )
    types = sorted({h.gpu_type for h in hosts})
    return (
        f"nothing to run: --gpu-types {','.join(gpu_types or ())} selects none of the "
        f"campaign's probes (the cluster has {', '.join(types)})"
    )


def starting(campaign: Campaign, jobs: list[Job], hosts: list[Host]) -> None:
    types = sorted({h.gpu_type for h in hosts})
    print(
        f"campaign {campaign.name}: {len(jobs)} run(s) of {len(campaign.probes)} probe(s) on "
        f"{len(hosts)} host(s) of {len(types)} GPU type(s) ({', '.join(types) or 'none'})",
        file=sys.stderr,
    )


def resuming(earlier: int, path: Path) -> None:
    print(
        f"resuming: {earlier} run(s) finished earlier are kept ({path}; --restart runs them again)",
        file=sys.stderr,
    )


def interrupted(path: Path) -> None:
    print(
        f"\ninterrupted: the runs that finished are kept (progress in {path}); the same command "
        "resumes the rest. Ray stops this campaign's tasks.",
        file=sys.stderr,
    )


def summary(jobs: list[Job]) -> None:
    print(f"{'run':<44}{'host':<34}{'tries':>6}  result")
    for job in jobs:
        result = job.run_file if job.state == "done" else f"FAILED: {job.error}"
        if job.state == "done" and job.detail == "earlier":
            result += " (earlier)"
        print(f"{job.key:<44}{job.where()[:33]:<34}{job.attempts:>6}  {result}")
        for found in job.searches:  # --find-capacity: each traffic shape's capacity
            print(f"{'':<4}capacity search, {found}")
    done = sum(job.state == "done" for job in jobs)
    print(f"{done} of {len(jobs)} run(s) done, {len(jobs) - done} failed")
