"""What a page element shows, read from AppTest (which does not render Markdown)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TypeVar

from fleetplan.warehouse.db import ENV_VAR, Warehouse

T = TypeVar("T")
_ESCAPED = re.compile(r"\\(.)")


def seen(markdown: str) -> str:
    """The text a reader sees of Markdown from the pages: backslash escapes and word joiners
    undone (file names and messages quoting a file are escaped, fleetplan.services.plain_text)."""
    return _ESCAPED.sub(r"\1", markdown).replace("\u2060", "")


def read_warehouse(query: Callable[[Warehouse], T]) -> T:
    """`query` on the warehouse the app under test uses, opened for the call only: the app does
    not hold the file between reads, so a test (or `fleetplan benchmarks`) may read it."""
    with Warehouse.open(os.environ[ENV_VAR], read_only=True) as warehouse:
        return query(warehouse)
