"""What the Upload page shows, computed without Streamlit: the labels a user gives for runs whose
files do not say (GPU, GPUs per server, model, traffic) as import options; one summary line per
file; one line per run with its token shapes, so that the user can label it; every problem in
full; and file ids short enough to leave room for the rest of a table.

What a file would bring is decided in warehouse.preview (the same as `fleetplan ingest`); the
traffic label is applied in warehouse.labels.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from fleetplan.core.contract import Run
from fleetplan.warehouse.importers.base import ImportOptions
from fleetplan.warehouse.labels import SYNTHETIC
from fleetplan.warehouse.preview import FileStatus, Preview
from fleetplan.warehouse.queries import configuration_label

# The Dataset field's choices besides the warehouse's datasets: leave the file's word, or say
# the prompts were random tokens of fixed lengths (stored as "synthetic", as collectors do).
AS_THE_FILE_SAYS = "(as the file says)"
RANDOM_TOKENS = "random input/output tokens"
# vLLM's default dataset: offered even before the warehouse holds a run of it.
COMMON_DATASETS = ("sharegpt",)
SHORT_ID_LENGTH = 12  # a sha256's first hex digits: unique among any warehouse's files in practice

STATUS_LABELS = {
    FileStatus.READY: "ready",
    FileStatus.IMPORTED: "imported",
    FileStatus.DUPLICATE: "already present",
    FileStatus.REJECTED: "rejected",
    FileStatus.INCLUDED: "included",
    FileStatus.SKIPPED: "skipped",
}


@dataclass(frozen=True, slots=True)
class UploadLabels:
    """What the user says on the Upload page about runs whose files do not say; empty = not
    given. Token lengths are used with random-token traffic only."""

    model: str = ""
    gpu: str = ""
    gpu_count: int = 0
    dataset: str = AS_THE_FILE_SAYS
    input_len: int | None = None
    output_len: int | None = None
    variant: str = ""  # the server's free label (`Run.variant`); empty: as the file says

    def options(self) -> ImportOptions:
        """The labels as import options that name the page's fields in their messages."""
        synthetic = self.dataset == RANDOM_TOKENS
        dataset = None if self.dataset in ("", AS_THE_FILE_SAYS) else self.dataset
        return ImportOptions(
            model=self.model.strip() or None,
            gpu=self.gpu or None,
            gpu_count=self.gpu_count or None,
            dataset=SYNTHETIC if synthetic else dataset,
            input_len=self.input_len if synthetic else None,
            output_len=self.output_len if synthetic else None,
            variant=self.variant.strip() or None,
            on_page=True,
        )


def dataset_choices(known: Iterable[object]) -> list[str]:
    """The Dataset field's choices: the file's own word first, then the datasets the warehouse
    and vLLM know (not "synthetic": that is the random-token choice), then random tokens."""
    names = {str(d) for d in known if isinstance(d, str) and d and d != SYNTHETIC}
    return [AS_THE_FILE_SAYS, *sorted(names | set(COMMON_DATASETS)), RANDOM_TOKENS]


def status_label(preview: Preview) -> str:
    return STATUS_LABELS[preview.status]


def summary_row(preview: Preview) -> dict[str, object]:
    """One file's line in the summary table; its problem in full is in `problems`."""
    runs = preview.parsed.runs if preview.parsed else ()
    if preview.status is FileStatus.READY:
        note = f"{len(preview.warnings)} warning(s)" if preview.warnings else ""
        if preview.present:
            note = "; ".join(filter(None, [f"{len(preview.present)} run(s) present", note]))
    else:
        note = preview.message
    return {
        "file": preview.file,
        "status": status_label(preview),
        "format": preview.format,
        "runs": preview.runs,
        "points": preview.points,
        "GPU": ", ".join(sorted({configuration_label(r.gpu_model, r.gpu_count) for r in runs})),
        "model": ", ".join(sorted({r.model for r in runs})),
        "problem": note,
    }


def problems(previews: Sequence[Preview]) -> list[tuple[str, str, str]]:
    """(file, status label, the reason in full) for every file that will not be imported whole:
    rejected, skipped or already present, and ready files with runs already present."""
    out = []
    for preview in previews:
        if preview.status in (FileStatus.READY, FileStatus.INCLUDED) and not preview.present:
            continue
        out.append((preview.file, status_label(preview), preview.message))
    return list(dict.fromkeys(out))  # one warning per file and model


def failed_requests(previews: Sequence[Preview]) -> list[str]:
    """A warning for every file to import whose levels counted failed requests: the run imports
    (its failures are measurements too), but the plan rests on the requests that completed."""
    out = []
    for preview in previews:
        if preview.parsed is None or preview.status not in (FileStatus.READY, FileStatus.INCLUDED):
            continue
        for run in preview.parsed.runs:
            failed = [p.failed for p in run.points if p.failed]
            if failed:
                out.append(
                    f"{preview.file}: {sum(failed)} failed request(s) in {len(failed)} of "
                    f"{len(run.points)} level(s) of {run.model} on {run.gpu_model}; it imports "
                    "with them counted as failed, and its latencies are those of the requests "
                    "that completed."
                )
    return out


def _mean_tokens(values: Iterable[float | None]) -> float | None:
    """The mean over a run's levels of their mean tokens per request; None when unmeasured."""
    known = [v for v in values if v is not None and math.isfinite(v)]
    return round(sum(known) / len(known), 1) if known else None


def traffic_label(run: Run) -> str:
    """A run's traffic in words: the dataset and fixed lengths, or that it has no label."""
    parts = [run.dataset] if run.dataset else []
    if run.input_len is not None or run.output_len is not None:
        parts.append(f"{run.input_len or '?'} in / {run.output_len or '?'} out tokens")
    return " ".join(parts) or "not labelled"


def run_rows(previews: Sequence[Preview]) -> pd.DataFrame:
    """One line per run of every previewed file: what identifies it (model, GPU, traffic), the
    token shapes it measured (mean input and output tokens per request), and whether the
    warehouse holds it already."""
    rows = []
    for preview in previews:
        if preview.parsed is None:
            continue
        for position, run in enumerate(preview.parsed.runs):
            held = preview.present.get(position)
            rows.append(
                {
                    "file": preview.file,
                    "run": position + 1,
                    "model": run.model,
                    "GPU": configuration_label(run.gpu_model, run.gpu_count),
                    "traffic": traffic_label(run),
                    "input tokens (mean)": _mean_tokens(p.input_tokens_mean for p in run.points),
                    "output tokens (mean)": _mean_tokens(p.output_tokens_mean for p in run.points),
                    "levels": len(run.points),
                    "in the warehouse": f"already present (from {held})" if held else "new",
                }
            )
    return pd.DataFrame(rows)


def short_id(source_id: str) -> str:
    """A file id (sha256) shortened for a table: its first digits and an ellipsis."""
    if len(source_id) <= SHORT_ID_LENGTH:
        return source_id
    return source_id[:SHORT_ID_LENGTH] + "…"


def sources_table(sources: pd.DataFrame) -> pd.DataFrame:
    """The imported files for the page's table: the id shortened (`id`), the full one kept in
    `source_id` for deleting and for a detail view, a column to tick for deletion."""
    shown = sources.assign(id=sources["source_id"].map(short_id), delete=False)
    first = ["delete", "file_name", "id"]
    return shown[first + [c for c in shown.columns if c not in first]]


def unlabelled_runs(previews: Sequence[Preview], points: pd.DataFrame) -> list[str]:
    """Warnings for ready runs without a traffic label whose model the warehouse has measured
    with a labelled traffic: the Plan page could not tell the two apart."""
    shapes = points[["model", "dataset", "input_len", "output_len"]].dropna(
        how="all", subset=["dataset", "input_len", "output_len"]
    )
    out = []
    for preview in previews:
        if preview.status is not FileStatus.READY or preview.parsed is None:
            continue
        for run in preview.parsed.runs:
            if run.dataset or run.input_len or run.output_len:
                continue
            known = shapes[shapes["model"] == run.model]
            if known.empty:
                continue
            named = sorted({str(d) for d in known["dataset"].dropna()}) or ["fixed token lengths"]
            out.append(
                f"{preview.file}: its {run.model} run has no traffic label, and the warehouse "
                f"holds runs of that model measured with {', '.join(named)}: choose the Dataset "
                "above the upload, so that the Plan page can tell them apart"
            )
    return list(dict.fromkeys(out))  # one warning per file and model
