"""Upload runs: preview what each file holds and every problem, then store them (all or nothing
per file); list and delete what was uploaded."""

from __future__ import annotations

import logging
from dataclasses import replace

import pandas as pd
import streamlit as st
from fleetplan.app import data
from fleetplan.warehouse.importers import FileInput, ImportOptions, parse
from fleetplan.warehouse.importers.document import megabytes
from fleetplan.warehouse.ingest import Status, companion_pairs, ingest_parsed, preview_rows
from fleetplan.warehouse.store import delete_source, find_source

from fleetplan.core.errors import InputError, NotResultsError
from fleetplan.core.gpus import KNOWN_GPU_IDS

log = logging.getLogger("fleetplan.app.upload")
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
ready, summary = [], []
uploaded_bytes = {f.name: f.getvalue() for f in files or [] if f.size <= options_limit}
pairs = companion_pairs(uploaded_bytes)
for uploaded in files or []:
    if uploaded.name in pairs.values():
        summary.append(
            {
                "file": uploaded.name,
                "status": "included",
                "format": "",
                "runs": 0,
                "points": 0,
                "GPU": "",
                "model": "",
                "problem": f"read with {next(s for s, c in pairs.items() if c == uploaded.name)}",
            }
        )
        continue
    file_options = options
    if uploaded.name in pairs:
        companion = pairs[uploaded.name]
        file_options = replace(options, companions={companion: uploaded_bytes[companion]})
    row = {
        "file": uploaded.name,
        "status": "",
        "format": "",
        "runs": 0,
        "points": 0,
        "GPU": "",
        "model": "",
        "problem": "",
    }
    if uploaded.size > options_limit:  # AppTest and old clients do not enforce the config limit
        row |= {
            "status": "rejected",
            "problem": f"{megabytes(uploaded.size)} is over the {megabytes(options_limit)} limit",
        }
        summary.append(row)
        continue
    file = FileInput.from_bytes(uploaded.name, uploaded.getvalue())
    try:
        parsed = parse(file, file_options)
    except NotResultsError as error:
        row |= {"status": "skipped", "problem": error.detail}
        summary.append(row)
        continue
    except InputError as error:
        row |= {"status": "rejected", "problem": error.detail}
        summary.append(row)
        continue
    except Exception as error:  # a bug: refuse the file, never a traceback
        log.exception("unexpected error reading upload %s", uploaded.name)
        row |= {
            "status": "rejected",
            "problem": f"unexpected error ({type(error).__name__}): nothing stored; please report",
        }
        summary.append(row)
        continue
    earlier = find_source(warehouse, file.sha256)
    row |= {
        "format": parsed.importer,
        "runs": len(parsed.runs),
        "points": parsed.points,
        "GPU": ", ".join(sorted({f"{r.gpu_count}x {r.gpu_model}" for r in parsed.runs})),
        "model": ", ".join(sorted({r.model for r in parsed.runs})),
        "status": f"already imported ({earlier[0]})" if earlier else "ready",
        "problem": f"{len(parsed.warnings)} warning(s)" if parsed.warnings else "",
    }
    summary.append(row)
    if not earlier:
        ready.append(parsed)
    with st.expander(f"{uploaded.name}: {row['points']} point(s), {row['status']}"):
        for warning in parsed.warnings:
            st.warning(warning)
        unknown = sorted({r.gpu_model for r in parsed.runs if not r.gpu_known})
        if unknown:
            st.warning(f"GPU not recognised, kept as written: {', '.join(unknown)}")
        st.dataframe(pd.DataFrame(preview_rows(parsed)), hide_index=True)

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
