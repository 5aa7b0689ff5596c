"""The `fleetplan` command run in this process (`fleetplan.cli.main`), answered as a finished
process would be: a `subprocess.CompletedProcess` with the exit code and the text it wrote.

A fresh interpreter costs seconds (pandas, DuckDB and scipy imported each time); this costs the
command's own work. It gives the command what a process started by `subprocess.run(...,
capture_output=True, text=True)` gets: its own stdout and stderr (pipes, not terminals; text
decoded with universal newlines), an empty stdin unless `input` is given, the environment `env`
(the whole of it, as `subprocess.run` takes it) and the folder `cwd`; an uncaught exception is a
traceback on stderr and exit code 1, as Python's. What only a real process shows (signals, a
broken pipe, `python -m fleetplan`, the installed entry point, resource limits) is tested with
`tests.support.processes.fleetplan`.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    raw = stream.buffer.getvalue()  # type: ignore[attr-defined]
    return io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8", newline=None).read()


@contextlib.contextmanager
def _environment(env: Mapping[str, str] | None, cwd: str | Path | None) -> Iterator[None]:
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update({str(k): str(v) for k, v in env.items()})
        if cwd is not None:
            os.chdir(cwd)
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


def _stream() -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", line_buffering=True)


def run_cli(
    *args: object,
    check: bool = False,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    input: str | None = None,
    timeout: float | None = None,  # pytest-timeout bounds a test; kept for the same calls
) -> subprocess.CompletedProcess:
    """`fleetplan ARGS` in this process, as `tests.support.processes.fleetplan` runs it."""
    from fleetplan.cli import main

    del timeout
    argv = [str(a) for a in args]
    stdout, stderr = _stream(), _stream()
    stdin = io.TextIOWrapper(io.BytesIO((input or "").encode()), encoding="utf-8")
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers = []  # so that the command's logging.basicConfig writes to its own stderr
    saved = sys.stdin, sys.stdout, sys.stderr
    try:
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        with _environment(env, cwd):
            try:
                code = main(argv)
            except SystemExit as stop:  # argparse, --help, --version
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
                if isinstance(stop.code, str):
                    print(stop.code, file=stderr)
            except Exception:  # an uncaught error: a traceback and 1, as Python's
                traceback.print_exc(file=stderr)
                code = 1
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        root.handlers, root.level = handlers, level
    done = subprocess.CompletedProcess(
        ["fleetplan", *argv], code or 0, _text(stdout), _text(stderr)
    )
    if check:
        done.check_returncode()
    return done
