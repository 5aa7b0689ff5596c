"""What a page element shows, read from AppTest (which does not render Markdown), and the
dashboard opened in AppTest on a warehouse (and a link)."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TypeVar

from streamlit.testing.v1 import AppTest

from fleetplan.warehouse.db import ENV_VAR, Warehouse
from tests.support.paths import MAIN

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


def open_app(monkeypatch, warehouse_path, link: str | None = None) -> AppTest:
    """The dashboard in AppTest on `warehouse_path`, opened from a `?s=` `link` where given, run
    once without an exception."""
    monkeypatch.setenv(ENV_VAR, str(warehouse_path))
    at = AppTest.from_file(MAIN, default_timeout=120)
    if link is not None:
        at.query_params["s"] = link
    at.run()
    assert not at.exception, at.exception
    return at


def open_tab(at: AppTest, label: str) -> AppTest:
    """The Plan page's results tab `label` chosen and the page run again: only the open tab is
    drawn (`app/plan_results.TABS`), as in a browser after a click on it."""
    from fleetplan.app.plan_results import TAB_KEY

    at.session_state[TAB_KEY] = label
    at.run()
    assert not at.exception, at.exception
    return at
