"""Upload runs: preview what each file holds and every problem, then store them (all or nothing
per file); list and delete what was uploaded. What a file would bring is decided in
warehouse.preview (the same as `fleetplan ingest`); this page draws it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fleetplan.app import data
from fleetplan.core.gpus import KNOWN_GPU_IDS
from fleetplan.warehouse.importers import ImportOptions, ParsedFile
from fleetplan.warehouse.importers.document import megabytes
from fleetplan.warehouse.ingest import ingest_parsed
from fleetplan.warehouse.preview import Preview, Status, preview_rows, preview_uploads
from fleetplan.warehouse.queries import configuration_label
from fleetplan.warehouse.store import delete_source

st.title("Upload runs")
options_limit = ImportOptions().size_limit()
st.caption(
    "vLLM `bench serve` / `benchmark_serving.py` JSON, GuideLLM reports (JSON, YAML), LLMPerf "
    "results (the summary with its per-request file), GenAI-Perf and AIPerf exports (the JSON, "
    "with AIPerf's per-request JSONL beside it), fleetplan run files and the CSV table of "
    "`fleetplan benchmarks` / `fleetplan template`; gzip-compressed too. The format is read "
    "from the content. Files up to "
    f"{megabytes(options_limit)}; each file is stored whole or not at all."
)
warehouse = data.warehouse_or_stop()
for kind, message in st.session_state.pop("s_upload_flash", []):
    (st.success if kind == "ok" else st.info)(message)


def summary_row(preview: Preview) -> dict[str, object]:
    """One file's line in the summary table."""
    runs = preview.parsed.runs if preview.parsed else ()
    if preview.status is Status.DUPLICATE:
        status = f"already imported ({preview.duplicate_of})"
    else:
        status = preview.status.value
    if preview.status is Status.READY:
        problem = f"{len(preview.warnings)} warning(s)" if preview.warnings else ""
    else:
        problem = preview.message
    return {
        "file": preview.file,
        "status": status,
        "format": preview.format,
        "runs": preview.runs,
        "points": preview.points,
        "GPU": ", ".join(sorted({configuration_label(r.gpu_model, r.gpu_count) for r in runs})),
        "model": ", ".join(sorted({r.model for r in runs})),
        "problem": problem,
    }


def show_preview(parsed: ParsedFile, label: str) -> None:
    """A file's warnings and the points it would store, folded away."""
    with st.expander(label):
        for warning in parsed.warnings:
            st.warning(warning)
        unknown = sorted({r.gpu_model for r in parsed.runs if not r.gpu_known})
        if unknown:
            st.warning(f"GPU not recognised, kept as written: {', '.join(unknown)}")
        st.dataframe(pd.DataFrame(preview_rows(parsed)), hide_index=True)


def finish(messages: list[tuple[str, str]]) -> None:
    """Show what happened after the rerun that refreshes every table on the page."""
    st.session_state.s_upload_flash = messages
    data.refresh()
    st.rerun()


with st.expander("For files that do not say which GPU or model ran them"):
    cols = st.columns(3)
    model = cols[0].text_input("Model", key="w_upload_model") or None
    gpu = cols[1].selectbox("GPU", ["", *sorted(KNOWN_GPU_IDS)], key="w_upload_gpu") or None
    count = cols[2].number_input("GPUs per server", 0, 4096, 0, key="w_upload_count") or None
options = ImportOptions(model=model, gpu=gpu, gpu_count=count)

files = st.file_uploader("Result files", accept_multiple_files=True, key="w_upload_files")
previews = preview_uploads(warehouse, [(f.name, f.getvalue()) for f in files or []], options)
ready = [p.parsed for p in previews if p.status is Status.READY and p.parsed is not None]
summary = [summary_row(p) for p in previews]
for preview in previews:
    if preview.parsed is not None:
        show_preview(preview.parsed, f"{preview.file}: {preview.points} point(s), {preview.status}")

if summary:
    st.dataframe(pd.DataFrame(summary), hide_index=True, key="table_upload_summary")
    if st.button(
        f"Import {len(ready)} file(s)", disabled=not ready, type="primary", key="w_upload_commit"
    ):
        messages = []
        for parsed in ready:
            outcome = ingest_parsed(warehouse, parsed, origin="upload")
            kind = "ok" if outcome.status is Status.IMPORTED else "info"
            messages.append((kind, f"{outcome.file}: {outcome.message}"))
        finish(messages)

st.subheader("Imported files")
listed = data.sources()
if listed.empty:
    st.info("Nothing imported yet.")
else:
    listed = listed.assign(delete=False)
    edited = st.data_editor(
        listed,
        hide_index=True,
        key="w_sources",
        disabled=[c for c in listed if c != "delete"],
        column_config={
            "delete": st.column_config.CheckboxColumn("Delete?"),
            "size_bytes": st.column_config.NumberColumn("Bytes"),
        },
    )
    chosen = edited[edited["delete"]]
    if st.button(
        f"Delete {len(chosen)} file(s) and their runs",
        disabled=chosen.empty,
        key="w_delete_sources",
    ):
        messages = []
        for source_id, name in zip(chosen["source_id"], chosen["file_name"], strict=True):
            runs = delete_source(warehouse, source_id)
            messages.append(("ok", f"Deleted {name} and its {runs} run(s)"))
        finish(messages)
