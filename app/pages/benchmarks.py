"""Benchmarks: the measured points, filtered, with a throughput-vs-load chart and provenance."""

from __future__ import annotations

import plotly.express as px
import streamlit as st

from app.data import points
from app.style import gpu_colours
from fleetplan.tabular import to_csv
from warehouse.queries import configurations, load_curve, models_by_coverage

METRICS = {
    "total_throughput_tps": "Total tokens/s (input + output)",
    "output_throughput_tps": "Output tokens/s",
    "request_throughput_rps": "Completed requests/s",
}

# What a capacity planner reads first; provenance after it; internal ids last.
TABLE_COLUMNS = (
    "gpu_model", "gpu_count", "offered_rate_rps", "request_throughput_rps",
    "output_throughput_tps", "total_throughput_tps", "ttft_p50_ms", "ttft_p99_ms", "tpot_p99_ms",
    "itl_p99_ms", "e2el_p99_ms", "completed", "failed", "duration_s", "energy_method",
    "gpu_energy_j", "avg_power_w", "dataset", "input_tokens_mean", "output_tokens_mean", "engine",
    "engine_version", "dtype", "tensor_parallel_size", "stats_source", "source_tool",
    "source_file", "source_repository", "source_commit", "source_licence", "source_sha256",
    "imported_from", "imported_at", "run_id",
)  # fmt: skip

st.title("Benchmarks")
frame = points()
if frame.empty:
    st.info(
        "No benchmark results in the warehouse yet. Build it from the bundled sample data with "
        "`make run` (or `fleetplan build`), or import your own runs with "
        "`fleetplan ingest PATH...` (vLLM `bench serve --save-result` JSON, fleetplan run files).",
        icon=":material/inbox:",
    )
    st.stop()

left, right = st.columns([2, 1])
models = models_by_coverage(frame)
model = left.selectbox("Model", models, key="w_model")
metric = right.selectbox("Throughput", list(METRICS), format_func=METRICS.get, key="w_metric")
subset = frame[frame["model"] == model]
labels = configurations(subset)
configs = sorted(set(labels))
# One widget per model, so that switching models starts from all of its configurations.
chosen = st.multiselect("GPU configurations", configs, default=configs, key=f"w_configs:{model}")
subset = subset[labels.isin(chosen)]

curve = load_curve(subset, metric)
if curve.empty:
    st.warning("No finite offered-rate levels for this selection.")
else:
    colours = gpu_colours(list(curve["gpu_model"]))
    figure = px.line(
        curve,
        x="offered_rate_rps",
        y="value",
        color="gpu_model",
        line_dash="configuration",
        markers=True,
        color_discrete_map=colours,
        hover_data={"repeats": True, "configuration": True},
        labels={
            "offered_rate_rps": "Offered load (requests/s, Poisson)",
            "value": METRICS[metric],
            "gpu_model": "GPU",
            "configuration": "Configuration",
        },
        title=f"{METRICS[metric]} vs offered load: {model}",
    )
    figure.update_layout(legend_title_text="GPU / configuration", hovermode="x unified")
    st.plotly_chart(figure, key="chart_load")
    notes = []
    if curve.attrs.get("saturation_levels"):
        count = curve.attrs["saturation_levels"]
        notes.append(f"{count} saturation level(s) (all requests at once) are in the table only")
    if (curve["repeats"] > 1).any():
        notes.append("levels measured more than once show the mean of the repeats")
    if notes:
        st.caption("; ".join(notes) + ".")

st.subheader("Points")
st.caption(
    "One row per run and load level. Latency statistics in ms over completed requests; empty = "
    "not in the source. Provenance columns at the right."
)
st.dataframe(
    subset,
    hide_index=True,
    column_order=TABLE_COLUMNS,
    column_config={
        "gpu_model": st.column_config.TextColumn("GPU"),
        "gpu_count": st.column_config.NumberColumn("GPUs / server"),
        "offered_rate_rps": st.column_config.NumberColumn("Offered (req/s)", format="%.1f"),
        "request_throughput_rps": st.column_config.NumberColumn("Achieved (req/s)", format="%.2f"),
        "output_throughput_tps": st.column_config.NumberColumn("Output tok/s", format="%.0f"),
        "total_throughput_tps": st.column_config.NumberColumn("Total tok/s", format="%.0f"),
        "ttft_p50_ms": st.column_config.NumberColumn("TTFT p50 (ms)", format="%.1f"),
        "ttft_p99_ms": st.column_config.NumberColumn("TTFT p99 (ms)", format="%.1f"),
        "tpot_p99_ms": st.column_config.NumberColumn("TPOT p99 (ms)", format="%.1f"),
        "itl_p99_ms": st.column_config.NumberColumn("ITL p99 (ms)", format="%.1f"),
        "e2el_p99_ms": st.column_config.NumberColumn("E2EL p99 (ms)", format="%.0f"),
        "duration_s": st.column_config.NumberColumn("Duration (s)", format="%.1f"),
        "gpu_energy_j": st.column_config.NumberColumn("GPU energy (J)", format="%.0f"),
        "avg_power_w": st.column_config.NumberColumn("Avg power (W)", format="%.0f"),
    },
    key="table_points",
)
st.download_button(
    "Download these points (CSV)",
    data=to_csv(subset),
    file_name="fleetplan-benchmarks.csv",
    mime="text/csv",
    icon=":material/download:",
    key="download_points",
)
