"""What runs on a host: the Ray task that collects with a probe's options, the status board it
reports to, the GPU its run records, and, for the driver, its failure in words."""

from __future__ import annotations

import _thread
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleetplan.collectors.events import LevelEvents, observing
from fleetplan.collectors.options import CollectOptions
from fleetplan.collectors.run import execute
from fleetplan.collectors.telemetry import open_telemetry
from fleetplan.core.errors import FleetplanError
from fleetplan.core.gpus import canonical_gpu


@dataclass(frozen=True)
class HostOrder:
    """What a host's task is given: its options (pickled by Ray) and how to label its run."""

    key: str
    options: CollectOptions
    metadata: dict[str, str]
    gpu_type: str
    gpu_count: int


class StatusBoard:
    """A Ray actor: each task's status (queued, running, level k of n), for the driver to show."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}
        self.stopping = False

    def update(self, key: str, **fields: Any) -> None:
        self.rows.setdefault(key, {}).update(fields)

    def snapshot(self) -> dict[str, dict[str, Any]]:
        return self.rows

    def stop(self) -> None:  # Ctrl-C on the driver
        self.stopping = True

    def should_stop(self) -> bool:
        return self.stopping


def probe_on_host(order: HostOrder, board: Any) -> dict[str, Any]:
    """One host's collection, inside a Ray task: `fleetplan collect` with these options."""
    import ray  # the cluster extra: imported where it runs

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
        with observing(LevelEvents(on_level=on_level, metadata=stamp)), stoppable(board):
            result = execute(options, out)
        return {
            "name": result.path.name,
            "data": result.path.read_bytes(),
            "incomplete": any(
                not point.complete or point.failed
                for run in result.run_file.runs
                for point in run.points
            ),
            "interrupted": result.interrupted and any("interrupted" in p for p in result.problems),
            # every incomplete level is among the problems (what makes a host's exit code 1)
            "problems": [*([warning] if warning else []), *result.problems],
            # `--find-capacity`: what each traffic shape's search found, for the summary
            "searches": [f"{shape}: {outcome.summary()}" for shape, outcome in result.searches],
        }
    finally:
        shutil.rmtree(out, ignore_errors=True)


@contextmanager
def stoppable(board: Any) -> Iterator[None]:
    """While a host collects: when the driver is stopped (Ctrl-C), this task gets a Ctrl-C of
    its own, which a collection takes as a single-host `fleetplan collect` does (the level in
    flight marked incomplete, the run file written). The collection's event loop hears SIGINT
    only in the main thread and with Python's own handler in place, so that is set for it."""
    import ray

    if threading.current_thread() is not threading.main_thread():
        yield  # no way to interrupt it: Ray stops the task with the driver
        return
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    finished = threading.Event()

    def watch() -> None:
        while not finished.wait(1.0):
            try:
                if ray.get(board.should_stop.remote(), timeout=30):
                    # not a real signal: Ray's workers block SIGINT; this runs the handler
                    _thread.interrupt_main(signal.SIGINT)
                    return
            except Exception:  # the driver is gone: Ray ends this task itself
                return

    watcher = threading.Thread(target=watch, name="fleetplan-stop", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        finished.set()
        if before is not None:  # None: a handler set outside Python, which stays
            signal.signal(signal.SIGINT, before)


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


def failure_reason(error: BaseException) -> str:
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


def host_lost(error: BaseException) -> bool:
    import ray.exceptions as rex

    return isinstance(error, rex.NodeDiedError)
