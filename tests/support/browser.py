"""The dashboard in a real headless Chromium (Debian's `chromium`, driven by Playwright): the
browser, a page at the size of a laptop screen, and waiting for Streamlit to finish drawing.
Screenshots go to test-artifacts/ (look at them)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.support.paths import ROOT

ARTIFACTS = ROOT / "test-artifacts"
VIEWPORT = {"width": 1440, "height": 900}
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-dev-shm-usage",
]


def chromium() -> str:
    found = os.environ.get("FLEETPLAN_CHROMIUM") or shutil.which("chromium")
    if found is None:
        message = "Debian's chromium is not installed (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(message)  # in CI a missing browser is a failure, not a skip
        pytest.skip(message)
    return found


@contextmanager
def browser_page(viewport: dict[str, int] | None = None) -> Iterator:
    """A Playwright page in a fresh headless Chromium (1440x900 unless told), downloads on."""
    from playwright.sync_api import sync_playwright

    executable = chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser.new_page(viewport=viewport or VIEWPORT, accept_downloads=True)
        finally:
            browser.close()


def wait_rendered(page, title: str) -> None:
    page.get_by_role("heading", name=title).first.wait_for(timeout=60_000)
    # While the script runs Streamlit shows a status widget and grey skeletons for elements
    # that are not drawn yet: wait for both to go.
    page.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " && !document.querySelector('[data-testid=\"stSkeleton\"]')",
        timeout=60_000,
    )
    # Tables and buttons are drawn by code loaded on first use: grey boxes until it arrives.
    page.wait_for_load_state("networkidle", timeout=60_000)
    page.wait_for_timeout(1500)


def screenshot(page, name: str, *, full_page: bool = True) -> None:
    """A screenshot in test-artifacts/: what the viewport shows, or (`full_page`) the whole page.
    Streamlit scrolls inside its main block, not the document, so a whole page is taken in a
    viewport as tall as that block's content, then the viewport is put back."""
    ARTIFACTS.mkdir(exist_ok=True)
    if not full_page:
        page.screenshot(path=str(ARTIFACTS / name))
        return
    size = page.viewport_size
    height = page.evaluate(
        "() => document.querySelector('[data-testid=\"stMain\"]')?.scrollHeight || 0"
    )
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], height)})
    page.wait_for_timeout(1500)
    page.screenshot(path=str(ARTIFACTS / name))
    page.set_viewport_size(size)
