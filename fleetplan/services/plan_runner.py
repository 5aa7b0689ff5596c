"""The dashboard's plans, each in a process of its own that can be ended, so that no session holds
more than its share of the server (issue 21: links that could pin every core long after their tabs
closed).

- At most `slots` plans run at once, server-wide (the cores this process may use): a plan waits
  for a free slot, and while it waits it can still be superseded or given up.
- At most one plan per session: a session's new plan ends the one it had in flight (its process
  is killed, its slot freed), which then raises `PlanSuperseded`.
- A plan whose session has ended (`wanted()` turns false, checked every `POLL_S`) is ended the
  same way (`PlanCancelled`); a plan past `wall_s` is ended and refused with an InputError, and
  so is one that waited `wall_s` for a slot without getting one (never started). The
  solver's own time limit (`planning.PAGE_TIME_LIMIT_S`, all its solves together) bounds a plan
  before that.
- `tick(seconds)` is called while a plan runs: the dashboard shows progress with it, and Streamlit
  stops a rerun or a closed session's script at such a call (its exception ends the plan too).

Processes start from a fork server that has imported the planner already (`multiprocessing`'s
"forkserver", where the system has it; "spawn" elsewhere) and stay, idle, for the next plan (at
most `slots` of them): a plan ended early takes its process with it, and the next starts a new
one. A plan pays for pickling its inputs and its result, and a new process for its first plan's
caches (benchmarks/RESULTS.md: the overhead against planning in-process).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any, TypeVar

from fleetplan.core.errors import FleetplanError, InputError

T = TypeVar("T")
POLL_S = 0.05  # how often a waiting or running plan checks whether it is still wanted
WALL_S = 60.0  # a dashboard plan's whole time (its solving is limited to 10 s; the rest builds)
TOO_LONG = "plan it with `fleetplan plan`, or offer fewer classes or GPUs"
# What the fork server imports once for every plan: the planner, and what SciPy imports only on
# first use during a plan (seconds, paid by every process otherwise; benchmarks/plan_process.py).
_PRELOAD = [
    "fleetplan.services.planning",
    "fleetplan.planner.availability.plan_available",  # imported by `plan` on first use
    "scipy.integrate",
    "scipy.interpolate",
    "scipy.ndimage",
    "scipy.optimize",
    "scipy.stats",
]


class PlanCancelled(FleetplanError):
    """The plan was ended before it finished: its session ended."""


class PlanSuperseded(PlanCancelled):
    """The plan was ended because its session asked for a newer one."""


def default_slots() -> int:
    """The cores this process may run on (at least one)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # not on Linux
        return max(os.cpu_count() or 1, 1)


class _Job:
    """One session's plan: whether it is still wanted, and its process once started."""

    def __init__(self) -> None:
        self.superseded = False
        self.process: multiprocessing.process.BaseProcess | None = None
        self._lock = threading.Lock()

    def supersede(self) -> None:
        with self._lock:
            self.superseded = True
            if self.process is not None and self.process.is_alive():
                self.process.kill()

    def started(self, process: multiprocessing.process.BaseProcess) -> bool:
        with self._lock:
            if self.superseded:
                return False
            self.process = process
            return True

    def finished(self) -> None:
        """The plan is answered: its process is no longer this job's to kill."""
        with self._lock:
            self.process = None


def _answer(function: Callable[..., Any], args: tuple) -> tuple:
    """One plan run: its result, or what went wrong, as the worker sends it back."""
    try:
        return ("ok", function(*args))
    except InputError as error:
        return ("input", error.reason, error.file, error.field)
    except BaseException as error:
        return ("error", f"{type(error).__name__}: {error}")


def _serve(connection: Connection) -> None:
    """A plan's process: plans one after another as they come (warm: imports made and caches
    filled by the first), until its connection closes or it is killed."""
    while True:
        try:
            task = connection.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        answer = _answer(*task)
        try:
            connection.send(answer)
        except Exception as error:  # a result that does not pickle
            connection.send(("error", f"the plan's result could not be sent back: {error}"))


class PlanRunner:
    """Plans in processes of their own, `slots` at once, one per session (module docstring)."""

    def __init__(
        self, slots: int | None = None, *, wall_s: float = WALL_S, start_method: str | None = None
    ) -> None:
        self.slots = slots or default_slots()
        self.wall_s = wall_s
        methods = multiprocessing.get_all_start_methods()
        method = start_method or ("forkserver" if "forkserver" in methods else "spawn")
        self._context = multiprocessing.get_context(method)
        if method == "forkserver":
            self._context.set_forkserver_preload(_PRELOAD)
        self._free = threading.BoundedSemaphore(self.slots)
        self._lock = threading.Lock()
        self._jobs: dict[str, _Job] = {}
        self.running = 0  # plans holding a slot now
        self.peak = 0  # the most that ever held one at once
        self.started = 0  # processes started
        self._idle: list[tuple[multiprocessing.process.BaseProcess, Connection]] = []

    def process_of(self, session: str) -> multiprocessing.process.BaseProcess | None:
        """The process of the session's plan in flight, if one has started."""
        with self._lock:
            job = self._jobs.get(session)
        return job.process if job else None

    def end_session(self, session: str) -> None:
        """End the session's plan in flight, if any (it raises PlanSuperseded)."""
        with self._lock:
            job = self._jobs.pop(session, None)
        if job is not None:
            job.supersede()

    def run(
        self,
        session: str,
        function: Callable[..., T],
        *args: Any,
        wanted: Callable[[], bool] = lambda: True,
        tick: Callable[[float], None] | None = None,
        too_long: tuple[str, str] = ("the plan", TOO_LONG),
    ) -> T:
        """`function(*args)` in a process of its own, for `session` (module docstring);
        `too_long`: what ran and what to do instead, for the refusal past `wall_s`."""
        job = _Job()
        with self._lock:
            earlier = self._jobs.get(session)
            self._jobs[session] = job
        if earlier is not None:
            earlier.supersede()
        started = time.monotonic()
        try:
            while not self._free.acquire(timeout=POLL_S):
                self._still_wanted(job, wanted, tick, started)
                if time.monotonic() - started > self.wall_s:
                    what = too_long[0]
                    raise InputError(
                        f"{what} waited over {self.wall_s:g} s for one of the server's "
                        f"{self.slots} planning slots, all busy with other sessions' plans, and "
                        "was not started: try again in a minute"
                    )
            try:
                with self._lock:
                    self.running += 1
                    self.peak = max(self.peak, self.running)
                return self._in_process(job, function, args, wanted, tick, started, too_long)
            finally:
                with self._lock:
                    self.running -= 1
                self._free.release()
        finally:
            with self._lock:
                if self._jobs.get(session) is job:
                    del self._jobs[session]

    def _still_wanted(
        self,
        job: _Job,
        wanted: Callable[[], bool],
        tick: Callable[[float], None] | None,
        started: float,
    ) -> None:
        if job.superseded:
            raise PlanSuperseded("a newer plan of the same session replaced this one")
        if not wanted():
            raise PlanCancelled("the session that asked for this plan has ended")
        if tick is not None:
            tick(time.monotonic() - started)

    def _worker(self) -> tuple[multiprocessing.process.BaseProcess, Connection]:
        """An idle plan process, or a new one (from the fork server)."""
        with self._lock:
            while self._idle:
                process, connection = self._idle.pop()
                if process.is_alive():
                    return process, connection
                connection.close()
        here, there = self._context.Pipe()
        process = self._context.Process(target=_serve, args=(there,), daemon=True)
        try:
            process.start()
        finally:
            there.close()
        with self._lock:
            self.started += 1
        return process, here

    def _in_process(
        self,
        job: _Job,
        function: Callable[..., T],
        args: tuple,
        wanted: Callable[[], bool],
        tick: Callable[[float], None] | None,
        started: float,
        too_long: tuple[str, str] = ("the plan", TOO_LONG),
    ) -> T:
        self._still_wanted(job, wanted, tick, started)
        process, connection = self._worker()
        healthy = False  # whether the process may plan again
        try:
            if not job.started(process):
                healthy = True
                raise PlanSuperseded("a newer plan of the same session replaced this one")
            try:
                connection.send((function, args))
            except OSError:  # an idle process that has just ended: a new one instead
                process.kill()
                process.join(timeout=10)
                connection.close()
                process, connection = self._worker()
                if not job.started(process):
                    healthy = True
                    raise PlanSuperseded(
                        "a newer plan of the same session replaced this one"
                    ) from None
                connection.send((function, args))
            deadline = time.monotonic() + self.wall_s
            try:
                while not connection.poll(POLL_S):
                    self._still_wanted(job, wanted, tick, started)
                    if time.monotonic() > deadline:
                        what, instead = too_long
                        raise InputError(
                            f"{what} took over {self.wall_s:g} s and was stopped: {instead}"
                        )
                answer = connection.recv()
            except (EOFError, OSError):  # the process ended without an answer: killed, crashed
                self._still_wanted(job, wanted, None, started)
                raise FleetplanError(
                    f"the plan's process ended without an answer (exit code {process.exitcode})"
                ) from None
            healthy = True
        finally:
            job.finished()
            if healthy and process.is_alive() and len(self._idle) < self.slots:
                with self._lock:
                    self._idle.append((process, connection))
            else:
                if process.is_alive():
                    process.kill()
                process.join(timeout=10)
                connection.close()
        if answer[0] == "ok":
            return answer[1]
        if answer[0] == "input":
            raise InputError(answer[1], file=answer[2], field=answer[3])
        raise FleetplanError(f"planning failed: {answer[1]}")
