"""Functions `PlanRunner` tests run in a plan's process (importable by name, as a plan must be)."""

from __future__ import annotations

import time
from pathlib import Path

from fleetplan.core.errors import InputError


def wait_for(path: str, answer: object) -> object:
    """Hold a slot until `path` exists (at most a minute: a test never hangs), then answer."""
    for _ in range(1200):
        if Path(path).exists():
            return answer
        time.sleep(0.05)
    raise TimeoutError(f"{path} never appeared")


def double(value: int) -> int:
    return 2 * value


def refuse() -> None:
    raise InputError("no such model", field="model")
