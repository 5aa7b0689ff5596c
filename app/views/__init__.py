"""The dashboard's pages, listed once: the router (`app/main.py`), the tests and the benchmark
read this list.

To add a page: write `app/views/NAME.py` as a thin script (it draws; what it shows comes from
functions in warehouse/, planner/ or fleetplan/services/ that can be tested without Streamlit),
add it to `PAGES` below, and it appears in the navigation and in the page tests.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PageEntry:
    path: str  # relative to app/main.py, as Streamlit and AppTest.switch_page take it
    title: str
    icon: str
    default: bool = False


PAGES: tuple[PageEntry, ...] = (
    PageEntry("views/plan.py", "Plan", ":material/hub:", default=True),
    PageEntry("views/benchmarks.py", "Benchmarks", ":material/monitoring:"),
    PageEntry("views/upload.py", "Upload runs", ":material/upload_file:"),
    PageEntry("views/paper.py", "Paper check", ":material/fact_check:"),
    PageEntry("views/data.py", "Data", ":material/database:"),
)
PAGE_PATHS: tuple[str, ...] = tuple(page.path for page in PAGES)


def navigation():
    """The dashboard's `st.navigation` over `PAGES`."""
    import streamlit as st

    return st.navigation(
        [
            st.Page(page.path, title=page.title, icon=page.icon, default=page.default)
            for page in PAGES
        ]
    )
