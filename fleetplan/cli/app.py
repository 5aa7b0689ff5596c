"""`fleetplan app`: start the dashboard (Streamlit takes this process's place)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from fleetplan.cli.common import positive_int, warehouse_arg

NAME = "app"


def add_parser(sub: argparse._SubParsersAction) -> None:
    app = sub.add_parser(NAME, help="start the dashboard")
    warehouse_arg(app)
    app.add_argument("--port", type=positive_int, default=8501)
    app.add_argument("--headless", action="store_true", help="do not open a browser")


def run(args: argparse.Namespace) -> int:
    import fleetplan.app
    from fleetplan.warehouse.db import ENV_VAR, resolve_path

    script = Path(fleetplan.app.__file__).resolve().parent / "main.py"
    env = dict(os.environ)
    env[ENV_VAR] = str(resolve_path(args.warehouse).resolve())
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(script),
        "--server.port",
        str(args.port),
        "--server.headless",
        "true" if args.headless else "false",
    ]
    print(f"dashboard on http://localhost:{args.port} (warehouse {env[ENV_VAR]})", flush=True)
    # Streamlit takes this process's place, so a stop signal (Ctrl-C, docker stop, systemd)
    # reaches the server itself; a child would outlive a SIGTERM and keep the warehouse.
    # Streamlit reads its settings from .streamlit/config.toml in the working directory: the
    # one beside app/main.py, which a normal install carries too.
    os.chdir(script.parent)
    os.execve(sys.executable, command, env)
