"""Real processes: the `fleetplan` command, the dashboard, another holder of a warehouse file."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from fleetplan.collectors.vllm_server import free_port


def interruptible() -> None:
    """`preexec_fn` for a process a test will Ctrl-C: SIGINT back to its default, so that the
    child's Python raises KeyboardInterrupt. A job a non-interactive shell starts in the
    background (`make test &`, a CI runner's) inherits SIGINT ignored, and a Python started that
    way never installs its handler: the signal the test sends would be lost."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def fleetplan(*args, check=False, timeout=120, **kwargs) -> subprocess.CompletedProcess:
    """`python -m fleetplan ARGS` as a real process, output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "fleetplan", *map(str, args)],
        capture_output=True,
        text=True,
        check=check,
        timeout=timeout,
        **kwargs,
    )


@contextmanager
def held_by_another_process(path: Path, seconds: float = 60) -> Iterator[subprocess.Popen]:
    """Another process opens the warehouse file and holds it (DuckDB: one process per file)."""
    code = textwrap.dedent(f"""
        import time, duckdb
        con = duckdb.connect({str(path)!r})
        print("held", flush=True)
        time.sleep({seconds})
        con.close()
    """)
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait()


@contextmanager
def served_dashboard(warehouse: Path, **popen: object) -> Iterator[tuple[str, subprocess.Popen]]:
    """`fleetplan app` serving `warehouse` on a free port, as a real process: (URL, process)."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fleetplan",
            "app",
            "--port",
            str(port),
            "--headless",
            "--warehouse",
            str(warehouse),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **popen,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                if requests.get(f"{url}/_stcore/health", timeout=2).ok:
                    break
            except requests.ConnectionError:
                pass
            assert process.poll() is None, process.stdout.read()
            assert time.monotonic() < deadline, "the dashboard did not start within 90 s"
            time.sleep(0.5)
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=20)


@contextmanager
def local_servers(script: Path, ready: str = "/v1/models") -> Iterator[Callable[..., str]]:
    """Start `python SCRIPT --port P ARGS...` on free ports, each on call (`start(*args)` -> its
    URL, once `ready` answers with anything but a connection error, within 20 s); every server
    started is killed at the end."""
    started: list[subprocess.Popen] = []

    def start(*args: object) -> str:
        port = free_port()
        command = [sys.executable, str(script), "--port", str(port), *map(str, args)]
        process = subprocess.Popen(command)
        started.append(process)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                requests.get(f"{url}{ready}", timeout=1)
                return url
            except requests.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError(f"the test server {script.name} did not start")

    try:
        yield start
    finally:
        for process in started:
            process.kill()
            process.wait()
