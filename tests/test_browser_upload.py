"""The path a new user takes with their own vLLM file, in a real headless Chromium: upload a file
that says neither its GPU nor its traffic, read why it is refused, label it in the page from the
token shapes it shows, import it, see it as present with nothing left to import, then plan on
it on the Plan page. Screenshots of the Upload page at 1440x900, before and after the import,
go to test-artifacts/."""

from __future__ import annotations

import json

import pytest

from tests.support.browser import ARTIFACTS, wait_rendered
from tests.support.paths import ROOT

pytestmark = pytest.mark.slow  # a real Chromium (tests/support/browser.py)

VLLM_FILE = (
    ROOT / "tests" / "fixtures" / "formats" / "vllm-bench-serve-0.32.0" / "vllm-bench-serve.json"
)
# What the vLLM run recorded of its prompts (tests/fixtures/formats/README.md): random prompts
# of about 32 tokens, 8 output tokens.
INPUT_TOKENS, OUTPUT_TOKENS = 32, 8


def unlabelled_vllm_file(folder):
    """vLLM's own `--append-result` file with the GPU keys taken out (a run saved without
    `--metadata`); it never said its dataset."""
    lines = []
    for line in VLLM_FILE.read_text().splitlines():
        result = json.loads(line)
        del result["gpu_name"], result["gpu_count"]
        assert "dataset_name" not in result
        lines.append(json.dumps(result))
    path = folder / "my-vllm-run.json"
    path.write_text("\n".join(lines) + "\n")
    return path


def choose(page, label: str, option: str) -> None:
    """Pick `option` in the selectbox labelled `label`."""
    box = page.locator("[data-testid='stSelectbox']").filter(
        has=page.locator("label", has_text=label)
    )
    box.locator("input").click()
    # typed first: the option list is virtual (an option out of view is not in the page)
    page.keyboard.type(option, delay=30)
    page.get_by_role("option", name=option, exact=True).click()


def type_number(page, label: str, value: int) -> None:
    field = page.get_by_label(label, exact=True)
    field.fill(str(value))
    field.press("Enter")


def settle(page, title: str) -> None:
    page.wait_for_timeout(500)  # let the rerun start before waiting for it to end
    wait_rendered(page, title)
    assert page.locator("[data-testid='stException']").count() == 0


def open_upload(page, dashboard_url: str, path) -> None:
    """The Upload page reached through the navigation, as a user goes, with `path` uploaded."""
    page.set_viewport_size({"width": 1440, "height": 900})
    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(dashboard_url)
    wait_rendered(page, "Plan a fleet")
    page.get_by_role("link", name="Upload runs").click()
    wait_rendered(page, "Upload runs")
    page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))


def test_an_unlabelled_upload_is_labelled_imported_and_planned_on(
    dashboard_url, browser_page, tmp_path
):
    page = browser_page
    # through the navigation, as a user goes (and as the router lays the page out)
    open_upload(page, dashboard_url, unlabelled_vllm_file(tmp_path))
    # the warning below the table (the table's own cell holds it too, hidden to the eye)
    refused = page.locator(
        "[data-testid='stAlert']", has_text="choose the GPU and GPUs per server above the upload"
    )
    refused.first.wait_for(timeout=60_000)
    settle(page, "Upload runs")
    assert page.get_by_text("--gpu").count() == 0

    choose(page, "GPU", "rtx-4090")
    settle(page, "Upload runs")
    type_number(page, "GPUs per server", 1)
    settle(page, "Upload runs")
    page.get_by_text("label the traffic above").wait_for(timeout=60_000)
    choose(page, "Dataset", "random input/output tokens")
    settle(page, "Upload runs")
    type_number(page, "Input tokens", INPUT_TOKENS)
    settle(page, "Upload runs")
    type_number(page, "Output tokens", OUTPUT_TOKENS)
    settle(page, "Upload runs")
    commit = page.get_by_role("button", name="Import 1 file(s)")
    commit.wait_for(timeout=60_000)
    assert commit.is_enabled()
    page.screenshot(path=str(ARTIFACTS / "upload-before-import.png"), full_page=True)

    commit.click()
    page.get_by_text("my-vllm-run.json: 1 run(s)").wait_for(timeout=60_000)
    settle(page, "Upload runs")
    # right after the import the file is said imported, not previewed again as already present
    page.get_by_text("my-vllm-run.json: imported").first.wait_for(timeout=60_000)
    assert page.get_by_text("(already present)").count() == 0
    assert page.get_by_role("button", name="Import 1 file(s)").count() == 0
    page.screenshot(path=str(ARTIFACTS / "upload-after-import.png"), full_page=True)

    # plan on it: its model, on the GPU it was labelled with
    page.get_by_role("link", name="Plan").first.click()
    wait_rendered(page, "Plan a fleet")
    choose(page, "Model", "tiny-llama")
    settle(page, "Plan a fleet")
    page.get_by_text("Cost per month").first.wait_for(timeout=60_000)
    assert page.get_by_text("cannot be planned").count() == 0
    assert page.get_by_text("several kinds of traffic").count() == 0
    fleet = page.get_by_text("Fleet: ").first.inner_text()  # the headline's GPUs in words
    assert "RTX 4090" in fleet, fleet
    # the page scrolls inside Streamlit's own container: bring the plan's figures into view
    page.locator("[data-testid='stMetric']").first.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "plan-on-upload.png"))


def test_a_gpu_label_fleetplan_cannot_resolve_is_named_on_the_page(
    dashboard_url, browser_page, tmp_path
):
    """A file whose GPU is a name of its own ("gpu-pool-7", as a cluster's node pool may call
    it): kept as written and flagged, then named by the page's GPU field (issue 32, item 2)."""
    lines = []
    for line in VLLM_FILE.read_text().splitlines():
        result = json.loads(line) | {"gpu_name": "gpu-pool-7", "gpu_count": "1"}
        lines.append(json.dumps(result | {"dataset_name": "random"}))
    path = tmp_path / "pool-run.json"
    path.write_text("\n".join(lines) + "\n")
    page = browser_page
    open_upload(page, dashboard_url, path)
    page.get_by_role("button", name="Import 1 file(s)").wait_for(timeout=60_000)
    settle(page, "Upload runs")
    for expander in page.locator("[data-testid='stExpander'] summary").all():
        expander.click()  # the per-file details: its warnings
    page.get_by_text("GPU not recognised, kept as written: gpu-pool-7").wait_for(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "upload-unresolved-gpu.png"), full_page=True)

    choose(page, "GPU", "h100-sxm")
    settle(page, "Upload runs")
    page.get_by_role("button", name="Import 1 file(s)").wait_for(timeout=60_000)
    for expander in page.locator("[data-testid='stExpander'] summary").all():
        expander.click()
    page.wait_for_timeout(500)
    assert page.get_by_text("GPU not recognised").count() == 0  # named now
    page.get_by_role("button", name="Import 1 file(s)").click()
    page.get_by_text("pool-run.json: 1 run(s)").wait_for(timeout=60_000)
    settle(page, "Upload runs")
    page.screenshot(path=str(ARTIFACTS / "upload-named-gpu.png"), full_page=True)
