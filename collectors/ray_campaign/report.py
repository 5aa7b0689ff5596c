"""What a campaign's driver prints: a line per job as it moves (stderr), and the summary table
at the end (stdout).

Either stream may be closed under the driver (`| head`, a terminal gone): from then on what it
would print there is dropped and the campaign goes on, since its run files and progress are what
matter. Ray prints its own messages ("(raylet) ...") to `sys.stdout`; while a campaign runs that
is our stderr, so stdout carries only the summary and what was ingested."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stdout
from pathlib import Path

from fleetplan.collectors.ray_campaign.campaign_file import Campaign
from fleetplan.collectors.ray_campaign.hosts import Host
from fleetplan.collectors.ray_campaign.jobs import Job


class Guarded:
    """A stream that may go away: writes to it never raise; once it is gone they are dropped."""

    def __init__(self, stream: object):
        self.stream, self.lost = stream, False

    def write(self, text: str) -> int:
        if not self.lost:
            try:
                self.stream.write(text)
                self.stream.flush()
            except (OSError, ValueError):  # BrokenPipeError, EIO, or a closed file
                self.lost = True
                _silence(self.stream)
        return len(text)

    def flush(self) -> None:
        pass  # each write flushes


def _silence(stream: object) -> None:
    """Points the stream's file descriptor at /dev/null, so that what is still buffered, and the
    interpreter's last flush, go nowhere instead of failing again at exit."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


_STREAMS: dict[str, Guarded] = {}


@contextmanager
def guarded_output() -> Iterator[None]:
    """While a campaign runs: our two streams guarded, and Ray's prints sent to stderr."""
    out, err = Guarded(sys.stdout), Guarded(sys.stderr)
    _STREAMS.update(out=out, err=err)
    try:
        with redirect_stdout(err):
            yield
    finally:
        _STREAMS.clear()


def out(text: str) -> None:
    print(text, file=_STREAMS.get("out") or sys.stdout)


def err(text: str) -> None:
    print(text, file=_STREAMS.get("err") or sys.stderr)


def say(job: Job, text: str) -> None:
    err(f"[{job.gpu_type} #{job.slot + 1} {job.label}] {text}")


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
    err(
        f"campaign {campaign.name}: {len(jobs)} run(s) of {len(campaign.probes)} probe(s) on "
        f"{len(hosts)} host(s) of {len(types)} GPU type(s) ({', '.join(types) or 'none'})"
    )


def resuming(earlier: int, path: Path) -> None:
    err(f"resuming: {earlier} run(s) finished earlier are kept ({path}; --restart runs them again)")


def stopping(running: int) -> None:
    err(
        f"\nstopping: {running} host(s) finish their level's requests in flight and send what "
        "they measured (Ctrl-C again to stop at once and lose it)"
    )


def interrupted(path: Path) -> None:
    err(
        f"\ninterrupted: the runs that finished are kept, and each stopped host's partial run "
        f"(incomplete; progress in {path}); the same command measures the rest again. Ray stops "
        "this campaign's tasks."
    )


def summary(jobs: list[Job]) -> None:
    out(f"{'run':<44}{'host':<34}{'tries':>6}  result")
    for job in jobs:
        out(f"{job.key:<44}{job.where()[:33]:<34}{job.attempts:>6}  {_result(job)}")
        for found in job.searches:  # --find-capacity: each traffic shape's capacity
            out(f"{'':<4}capacity search, {found}")
    done = sum(job.state == "done" for job in jobs)
    incomplete = sum(job.state == "incomplete" for job in jobs)
    failed = len(jobs) - done - incomplete
    extra = f", {incomplete} incomplete" if incomplete else ""
    out(f"{done} of {len(jobs)} run(s) done, {failed} failed{extra}")


def _result(job: Job) -> str:
    if job.state == "done":
        return job.run_file + (" (earlier)" if job.detail == "earlier" else "")
    if job.state == "incomplete":  # kept, and measured again by the same command
        return f"INCOMPLETE ({job.detail}): {job.run_file}; the same command measures it again"
    return f"FAILED: {job.error}"
