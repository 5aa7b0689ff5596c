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
def chromium_browser() -> Iterator:
    """A headless Chromium driven by Playwright, for as long as the block runs."""
    from playwright.sync_api import sync_playwright

    executable = chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def browser_page(browser=None, viewport: dict[str, int] | None = None) -> Iterator:
    """A Playwright page (1440x900 unless told, downloads on) in a context of its own: no
    cookie, storage or cache of another page's; in `browser`, else in a fresh Chromium."""
    if browser is None:
        with chromium_browser() as fresh, browser_page(fresh, viewport) as page:
            yield page
        return
    context = browser.new_context(viewport=viewport or VIEWPORT, accept_downloads=True)
    try:
        yield context.new_page()
    finally:
        context.close()


# Streamlit marks its app element with the script's state ("running" while a run is under way,
# "notRunning" after it) and draws grey skeletons for elements whose code is still loading; a page
# as long as the Plan page then takes seconds to lay out, during which every element below moves.
_SETTLED = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelector('[data-testid="stSkeleton"], [data-testid="stStatusWidget"]'))
    return false;
  const layout = [...document.querySelectorAll('[data-testid="stElementContainer"]')]
    .map(e => Math.round(e.getBoundingClientRect().top)).join(',');
  const now = performance.now(), seen = window.__fleetplanLayout;
  if (!seen || seen.layout !== layout) {
    window.__fleetplanLayout = {layout, since: now};
    return false;
  }
  return now - seen.since > 1000;  // no element has moved for a second
}"""


def wait_rendered(page, title: str) -> None:
    """Until the page titled `title` is drawn whole: its script run finished, no element still
    loading, and nothing on the page moving (a click at a place lands where it was aimed)."""
    page.get_by_role("heading", name=title).first.wait_for(timeout=60_000)
    # Tables and buttons are drawn by code loaded on first use: grey boxes until it arrives.
    page.wait_for_load_state("networkidle", timeout=60_000)
    page.wait_for_function(_SETTLED, timeout=60_000, polling=200)


def scenario_uploader(page):
    """The Plan page's "Load a scenario (JSON)" file input (not the config.json one beside it,
    under "A model nobody measured")."""
    widget = page.locator("[data-testid='stFileUploader']").filter(has_text="Load a scenario")
    return widget.locator("[data-testid='stFileUploaderDropzoneInput']")


def type_in_cell(page, x: float, y: float, text: str, *, shot: str | None = None) -> None:
    """Click the grid cell drawn at (x, y) (a `st.data_editor` is a canvas), type `text` into its
    editor and press Enter to keep it (`shot`: a screenshot while the editor holds the text).
    The editor is waited for: a key pressed before it opens (a page busy drawing) opens it anew
    with that key alone, and the keys before are lost."""
    # The grid takes a click as a choice of cell only once the pointer has rested over it: a
    # click at once after the pointer arrives only focuses its canvas (seen 2026-12-01, each
    # grid's first click: CANVAS, not TD; after a 0.8 s rest, as a hand's pointer would, TD at
    # once). So move there, rest, click, and wait for the grid's accessible table to focus the
    # chosen cell; click again if it did not (a click on a cell already chosen opens its editor).
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page.mouse.move(x, y, steps=5)
    for _ in range(3):
        page.wait_for_timeout(800)
        page.mouse.click(x, y)
        try:
            page.wait_for_function("() => document.activeElement?.tagName === 'TD'", timeout=6_000)
            break
        except PlaywrightTimeout:
            page.mouse.move(x + 1, y, steps=2)
    else:
        raise AssertionError(f"three clicks at ({x:.0f}, {y:.0f}) chose no grid cell")
    page.keyboard.press("Enter")  # the chosen cell's editor, holding the cell's value
    editor = page.locator("input.gdg-input, textarea.gdg-input").first
    editor.wait_for(timeout=30_000)
    editor.fill(text)
    if shot:
        screenshot(page, shot, full_page=False)
    editor.press("Enter")


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
