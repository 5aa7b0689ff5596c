"""Upload runs: say what the files may not (GPU, GPUs per server, model, traffic), preview what
each file holds, every problem in full and each run's token shapes, then store them (all or
nothing per file); list and delete what was uploaded. What a file would bring is decided in
warehouse.preview (the same as `fleetplan ingest`); what the page shows of it in
fleetplan/services/upload_tables.py; this page draws it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fleetplan.app import data
from fleetplan.core.files import megabytes
from fleetplan.core.gpus import KNOWN_GPU_IDS
from fleetplan.services.plain_text import plain
from fleetplan.services.upload_tables import (
    RANDOM_TOKENS,
    UploadLabels,
    dataset_choices,
    failed_requests,
    problems,
    run_rows,
    sources_table,
    summary_row,
    unlabelled_runs,
)
from fleetplan.warehouse.importers.base import ImportOptions, ParsedFile
from fleetplan.warehouse.ingest import ingest_parsed
from fleetplan.warehouse.preview import FileStatus, Preview, preview_rows, preview_uploads
from fleetplan.warehouse.store import delete_source

st.title("Upload runs")
options_limit = ImportOptions().size_limit()
st.caption(
    "vLLM `bench serve` / `benchmark_serving.py` JSON, SGLang `bench_serving` JSONL, "
    "`trtllm-bench` reports (or the log that ends in one), GuideLLM reports (JSON, YAML), "
    "LLMPerf results (the summary with its per-request file), GenAI-Perf and AIPerf exports "
    "(the JSON, with AIPerf's per-request JSONL beside it), inference-perf stage reports (with "
    "their configs and Kubernetes manifests), llm-d benchmark reports, genai-bench experiment "
    "folders, llm-load-test output, MLPerf LoadGen summaries, InferenceX and ML.ENERGY results, "
    "fleetplan run files "
    "and the CSV table of `fleetplan benchmarks` / `fleetplan template`; gzip-compressed too, "
    "or a tool's whole output folder as one zip (what is not "
    "results is listed as skipped). The format is read from the content. Files up to "
    f"{megabytes(options_limit)}; each file is stored whole or not at all."
)
for kind, message in st.session_state.pop("s_upload_flash", []):
    {"ok": st.success, "warn": st.warning}.get(kind, st.info)(plain(message))


def show_preview(parsed: ParsedFile, label: str) -> None:
    """A file's warnings and the points it would store, folded away."""
    with st.expander(plain(label)):
        for warning in parsed.warnings:
            st.warning(plain(warning))
        unknown = sorted({r.gpu_model for r in parsed.runs if not r.gpu_known})
        if unknown:
            st.warning(
                f"GPU not recognised, kept as written: {plain(', '.join(unknown))}. Choose the "
                "GPU above the upload to name it (the file's label is kept beside it); no plan "
                "can use a GPU fleetplan does not know."
            )
        st.dataframe(pd.DataFrame(preview_rows(parsed)), hide_index=True)


def finish(messages: list[tuple[str, str]]) -> None:
    """Show what happened after the rerun that refreshes every table on the page."""
    st.session_state.s_upload_flash = messages
    data.refresh()
    st.rerun()


def labels() -> UploadLabels:
    """The fields above the upload: what runs are, where their files do not say."""
    st.markdown(
        "**What the files do not say** — used only for runs whose file leaves it out; a file "
        "that says otherwise is refused."
    )
    cols = st.columns([3, 2, 1, 3])
    model = cols[0].text_input("Model", key="w_upload_model", placeholder="as the file says")
    gpu = cols[1].selectbox("GPU", ["", *sorted(KNOWN_GPU_IDS)], key="w_upload_gpu")
    count = cols[2].number_input("GPUs per server", 0, 4096, 0, key="w_upload_count")
    dataset = cols[3].selectbox(
        "Dataset",
        dataset_choices(data.points()["dataset"].unique()),
        key="w_upload_dataset",
        accept_new_options=True,
        help="The traffic the runs were measured with: a benchmark dataset (type another name "
        "if it is not listed), or random prompts of fixed input and output tokens. The Plan "
        "page matches each class to runs of its traffic.",
    )
    input_len = output_len = None
    if dataset == RANDOM_TOKENS:
        lens = st.columns([3, 3, 4])
        input_len = lens[0].number_input(
            "Input tokens",
            1,
            1_000_000,
            None,
            key="w_upload_input_len",
            help="Tokens per prompt, as set in the benchmark (the runs' measured means are in "
            "the table of runs below).",
        )
        output_len = lens[1].number_input(
            "Output tokens",
            1,
            1_000_000,
            None,
            key="w_upload_output_len",
            help="Tokens generated per request, as set in the benchmark.",
        )
    variant = st.text_input(
        "Variant",
        key="w_upload_variant",
        placeholder="as the file says",
        help="A free label of how the server was set up beyond engine, version, dtype and "
        "tensor parallelism (e.g. prefix-caching, max-num-seqs 64): runs of another variant are "
        "another server, never one curve, and the Plan page offers each.",
    )
    return UploadLabels(
        model=model or "",
        variant=variant or "",
        gpu=gpu or "",
        gpu_count=int(count or 0),
        dataset=dataset or "",
        input_len=input_len,
        output_len=output_len,
    )


def upload() -> None:
    """The labels, the file picker, the preview of what the files hold and the import button."""
    options = labels().options()
    files = st.file_uploader("Result files", accept_multiple_files=True, key="w_upload_files")
    if not files:
        return
    # the files imported from this picker: said so, not previewed again ("already present")
    done = st.session_state.setdefault("s_uploaded", {})
    for file in files:
        if file.file_id in done:
            st.caption(f"{plain(file.name)}: imported ({plain(done[file.file_id])})")
    files = [f for f in files if f.file_id not in done]
    if not files:
        return
    known_points = data.points()  # read before the warehouse is held for the preview
    with data.holding() as warehouse:
        previews = preview_uploads(warehouse, [(f.name, f.getvalue()) for f in files], options)
    show_previews(previews, known_points)
    ready = [p.parsed for p in previews if p.status is FileStatus.READY and p.parsed is not None]
    if st.button(
        f"Import {len(ready)} file(s)", disabled=not ready, type="primary", key="w_upload_commit"
    ):
        messages = []
        ids = {f.name: f.file_id for f in files}
        with data.holding(write=True) as warehouse:
            for parsed in ready:
                outcome = ingest_parsed(warehouse, parsed, origin="upload")
                kind = "ok" if outcome.status is FileStatus.IMPORTED else "info"
                messages.append((kind, f"{outcome.file}: {outcome.message}"))
                if outcome.status is FileStatus.IMPORTED and outcome.file in ids:
                    done[ids[outcome.file]] = outcome.message
        messages += [("warn", warning) for warning in failed_requests(previews)]
        finish(messages)


def show_previews(previews: list[Preview], known_points: pd.DataFrame) -> None:
    """Every file's line, its problems in full, the runs to label and each file's details."""
    st.dataframe(
        pd.DataFrame([summary_row(p) for p in previews]),
        hide_index=True,
        key="table_upload_summary",
        # The reasons in full are listed below the table: here they leave room for the rest.
        column_config={"problem": st.column_config.TextColumn("problem", width="medium")},
    )
    for file, status, message in problems(previews):
        (st.info if status == "already present" else st.warning)(
            f"**{plain(file)}** ({status}): {plain(message)}"
        )
    for warning in unlabelled_runs(previews, known_points):
        st.warning(plain(warning), icon=":material/label:")
    for warning in failed_requests(previews):
        st.warning(plain(warning), icon=":material/error:")
    runs = run_rows(previews)
    if not runs.empty:
        unlabelled = (runs["traffic"] == "not labelled").any()
        hint = " — label the traffic above where it says *not labelled*" if unlabelled else ""
        st.markdown(f"**Runs**{hint}")
        st.dataframe(runs, hide_index=True, key="table_upload_runs")
    for preview in previews:
        if preview.parsed is not None:
            show_preview(preview.parsed, f"{preview.file}: {preview.points} point(s), details")


def imported_files() -> None:
    """The files the warehouse holds; ticked ones are deleted with their runs (not read-only)."""
    st.subheader("Imported files")
    listed = data.sources()
    if listed.empty:
        st.info("Nothing imported yet.")
        return
    listed = sources_table(listed)
    if data.read_only():
        st.dataframe(listed.drop(columns=["delete"]), hide_index=True, key="table_sources_read")
        return
    edited = st.data_editor(
        listed,
        hide_index=True,
        key="w_sources",
        disabled=[c for c in listed if c != "delete"],
        column_order=[c for c in listed if c != "source_id"],
        column_config={
            "delete": st.column_config.CheckboxColumn("Delete?"),
            "file_name": st.column_config.TextColumn("File"),
            "id": st.column_config.TextColumn(
                "Id", help="The start of the file's sha256; the full value is in the detail below."
            ),
            "size_bytes": st.column_config.NumberColumn("Bytes"),
        },
    )
    with st.expander("Full file ids (sha256)"):
        st.dataframe(listed[["file_name", "source_id"]], hide_index=True, key="table_source_ids")
    chosen = edited[edited["delete"]]
    if st.button(
        f"Delete {len(chosen)} file(s) and their runs",
        disabled=chosen.empty,
        key="w_delete_sources",
    ):
        messages = []
        with data.holding(write=True) as warehouse:
            for source_id, name in zip(chosen["source_id"], chosen["file_name"], strict=True):
                runs = delete_source(warehouse, source_id)
                messages.append(("ok", f"Deleted {name} and its {runs} run(s)"))
        finish(messages)


if data.read_only():
    st.info(
        "This dashboard is read-only (started with `fleetplan app --read-only`): uploading and "
        "deleting are turned off here. Load runs on the host with `fleetplan ingest`.",
        icon=":material/lock:",
    )
else:
    upload()
imported_files()
