"""`fleetplan app`: start the dashboard (Streamlit takes this process's place).

Safe by default for a server: headless (Streamlit asks nothing on stdin, so systemd, docker and
nohup can start it), listening on 127.0.0.1 only, and with `--read-only` a deployment others
reach can neither upload nor delete runs. Login is left to a reverse proxy (docs/deployment.md).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from fleetplan.cli.common import positive_int, warehouse_arg

NAME = "app"
# Read by fleetplan.app.data in the Streamlit process: "1" = nothing on the pages writes.
READ_ONLY_ENV = "FLEETPLAN_READ_ONLY"


def add_parser(sub: argparse._SubParsersAction) -> None:
    app = sub.add_parser(NAME, help="start the dashboard")
    warehouse_arg(app)
    app.add_argument("--port", type=positive_int, default=8501)
    app.add_argument(
        "--address",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 = every "
        "interface: put a login in front of it, see docs/deployment.md)",
    )
    app.add_argument(
        "--read-only",
        action="store_true",
        help="no upload and no delete on the pages; the warehouse is only read",
    )
    app.add_argument(
        "--browser",
        action="store_true",
        help="open a browser (needs a terminal: Streamlit may ask questions on it)",
    )
    # Headless is the default now; the flag stays so that older scripts keep working.
    app.add_argument("--headless", action="store_true", help=argparse.SUPPRESS)


def streamlit_command(args: argparse.Namespace, script: Path) -> list[str]:
    """The `streamlit run` command line that serves the dashboard as `args` ask."""
    return [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(script),
        "--server.port",
        str(args.port),
        "--server.address",
        args.address,
        "--server.headless",
        "false" if args.browser and not args.headless else "true",
        "--browser.gatherUsageStats",
        "false",
        # The tables' own CSV export writes cells raw (a file name `=1+2*3` runs as a formula
        # in a spreadsheet); the pages' download buttons write neutralised CSV instead.
        "--client.disableDataExport",
        "true",
    ]


def run(args: argparse.Namespace) -> int:
    import fleetplan.app
    from fleetplan.warehouse.db import ENV_VAR, resolve_path

    script = Path(fleetplan.app.__file__).resolve().parent / "main.py"
    env = dict(os.environ)
    env[ENV_VAR] = str(resolve_path(args.warehouse).resolve())
    if args.read_only:
        env[READ_ONLY_ENV] = "1"
    else:
        env.pop(READ_ONLY_ENV, None)
    host = "localhost" if args.address in ("127.0.0.1", "localhost") else args.address
    mode = ", read-only" if args.read_only else ""
    print(f"dashboard on http://{host}:{args.port} (warehouse {env[ENV_VAR]}{mode})", flush=True)
    # Streamlit takes this process's place, so a stop signal (Ctrl-C, docker stop, systemd)
    # reaches the server itself; a child would outlive a SIGTERM.
    # Streamlit reads its settings from .streamlit/config.toml in the working directory: the
    # one beside app/main.py, which a normal install carries too.
    os.chdir(script.parent)
    os.execve(sys.executable, streamlit_command(args, script), env)
