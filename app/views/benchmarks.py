"""Benchmarks: the measured points, filtered; throughput, latency, cost and energy charts;
the table with provenance. What is shown is computed in `fleetplan.services.benchmark_tables`."""

from __future__ import annotations

import streamlit as st

from fleetplan.app import data
from fleetplan.app.benchmark_charts import (
    cost_latency_figure,
    energy_figure,
    latency_throughput_figure,
    throughput_figure,
)
from fleetplan.app.charts import METRIC_NAMES, load_curves_figure
from fleetplan.app.plan_carry import carry_price, carry_targets, plan_price, plan_targets
from fleetplan.app.style import series_colours
from fleetplan.core.tabular import to_csv
from fleetplan.services.benchmark_tables import (
    filter_choices,
    levels_meeting_ttft,
    load_curve_notes,
    points_table,
    priced_points,
    select_points,
    series_gpus,
    with_source_kind,
)
from fleetplan.services.capacity import LatencyTargets
from fleetplan.services.energy_tables import (
    MEASURED,
    MODELLED,
    UNKNOWN,
    energy_per_token,
    figures_used,
    power_figures,
)
from fleetplan.services.estimate_overlay import model_overlays
from fleetplan.services.load_tables import benchmark_curves, curve_notes, traffic_shapes
from fleetplan.services.outliers import outlier_reasons
from fleetplan.services.plain_text import plain
from fleetplan.services.scenario_defaults import default_price
from fleetplan.warehouse.queries import load_curve, models_by_coverage

# Each throughput as the chart names it and its unit.
METRICS = {
    "total_throughput_tps": ("Total throughput (input + output)", "tokens/s"),
    "output_throughput_tps": ("Output throughput", "tokens/s"),
    "request_throughput_rps": ("Completed requests", "requests/s"),
}
# What a capacity planner reads first; provenance after it; internal ids last.
TABLE_COLUMNS = (
    "gpu_model",
    "gpu_count",
    "offered_rate_rps",
    "request_throughput_rps",
    "sustained_rps",
    "kept_up",
    "load_reason",
    "question",
    "source_kind",
    "output_throughput_tps",
    "total_throughput_tps",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "tpot_p99_ms",
    "itl_p99_ms",
    "e2el_p99_ms",
    "completed",
    "failed",
    "duration_s",
    "energy_method",
    "gpu_energy_j",
    "avg_power_w",
    "dataset",
    "input_tokens_mean",
    "output_tokens_mean",
    "engine",
    "engine_version",
    "dtype",
    "tensor_parallel_size",
    "variant",
    "load_basis",
    "stats_source",
    "source_tool",
    "source_file",
    "source_repository",
    "source_commit",
    "source_licence",
    "source_sha256",
    "imported_from",
    "imported_at",
    "run_id",
)

st.title("Benchmarks")
frame = with_source_kind(data.points(), data.run_origins())
if frame.empty:
    st.info(
        "No benchmark results in the warehouse yet. Build it from the bundled sample data with "
        "`make run` (or `fleetplan build`), upload runs on the Upload page, or import them with "
        "`fleetplan ingest PATH...` (vLLM `bench serve --save-result` JSON, fleetplan run files).",
        icon=":material/inbox:",
    )
    st.stop()

left, right = st.columns([2, 1])
model = left.selectbox("Model", models_by_coverage(frame), key="w_model")
metric = right.selectbox(
    "Throughput",
    list(METRICS),
    format_func=lambda m: f"{METRICS[m][0]} ({METRICS[m][1]})",
    key="w_metric",
)
choices = filter_choices(frame, model)
filters = st.columns(3)
# One widget per model, so that switching models starts from all of its configurations.
chosen = filters[0].multiselect(
    "GPU configurations",
    choices.configurations,
    default=choices.configurations,
    key=f"w_configs:{model}",
)
chosen_sets = filters[1].multiselect(
    "Datasets", choices.datasets, default=choices.datasets, key=f"w_datasets:{model}"
)
chosen_files = filters[2].multiselect(
    "Sources (imported files)", choices.sources, default=choices.sources, key=f"w_sources:{model}"
)
subset = select_points(
    frame,
    model=model,
    configurations_shown=chosen,
    datasets=chosen_sets,
    sources=chosen_files,
)
if subset.empty:
    st.warning("Nothing matches these filters.")
    st.stop()
colours = series_colours(series_gpus(subset))

tabs = st.tabs(
    ["Throughput vs load", "Latency vs load", "Latency vs throughput", "Cost vs latency", "Energy"]
)
with tabs[0]:
    curve = load_curve(subset, metric)
    if curve.empty:
        st.warning("No finite offered-rate levels for this selection.")
    else:
        label, unit = METRICS[metric]
        figure = throughput_figure(
            curve,
            colours=colours,
            label=label,
            unit=unit,
            title=f"{label} against offered load: {model}",
        )
        st.plotly_chart(figure, key="chart_load")
        notes = load_curve_notes(curve)
        if notes:
            st.caption(plain(notes))
with tabs[1]:
    inputs = st.columns(3)
    plan_ttft, plan_tpot, plan_class = plan_targets(500.0, 0.0)  # the plan's, where there is one
    target = inputs[0].number_input(
        "Your P99 TTFT target (ms)", 1.0, 100_000.0, plan_ttft, step=50.0, key="w_ttft_target"
    )
    tpot_target = inputs[1].number_input(
        "Your P99 TPOT target (ms, 0 = none)",
        0.0,
        10_000.0,
        plan_tpot,
        step=10.0,
        key="w_tpot_target",
    )
    if (target, tpot_target) != (plan_ttft, plan_tpot):
        carry_targets(plan_class, target, tpot_target)  # back into the plan's class
    shapes = traffic_shapes(subset)
    shape = inputs[2].selectbox("Traffic", list(shapes), key=f"w_curve_shape:{model}")
    targets = LatencyTargets(ttft_p99_ms=target, tpot_p99_ms=tpot_target or None)
    curves = benchmark_curves(shapes[shape], targets=targets)
    overlay = st.toggle(
        "Overlay the serving model",
        value=True,
        key="w_overlay_model",
        help="Dotted: the model estimates rest on (fitted on every run the warehouse holds), "
        "simulated at each measured level: how well it fits where it can be checked.",
    )
    overlays = model_overlays(shapes[shape], frame, curves) if overlay else {}
    for metric, metric_target in (("ttft", target), ("tpot", tpot_target or None)):
        figure = load_curves_figure(
            curves,
            metric,
            target_ms=metric_target,
            title=f"{METRIC_NAMES[metric]} against offered load: {model}",
            colours=colours,
            overlays=overlays,
        )
        st.plotly_chart(figure, key=f"chart_curve_{metric}")
    st.caption(
        "Lines: each configuration's fitted curve, solid through the levels where the server "
        "kept up (the drain left out); dashed past the highest of them, predicted by the queue "
        "form up to the saturation the data shows (a level that fell behind, or a closed loop's "
        "plateau), not measured there. Stars and "
        "dotted lines: the capacity at your targets. Crossed circles: levels to question (a P99 "
        "far above those at higher rates), which the curve leaves out; hover for why. Dotted "
        "with crosses: the serving model, simulated at each measured level.  \n"
        + "  \n".join(curve_notes(curves))
        + "".join(f"  \n{name}, serving model: {o.words}" for name, o in overlays.items())
    )
with tabs[2]:
    questioned = subset.assign(question=outlier_reasons(subset, data.catalog()))
    st.plotly_chart(
        latency_throughput_figure(questioned, colours=colours, target_ms=target),
        key="chart_latency",
    )
    meets = levels_meeting_ttft(subset, target)
    flagged = int(questioned["question"].notna().sum())
    st.caption(
        f"{meets} of {len(subset)} levels meet {target:g} ms. Lines join each configuration's "
        "levels in order of offered load."
        + (f" Ringed: {flagged} level(s) to question (hover, or see the table)." if flagged else "")
    )
with tabs[3]:
    gpus = sorted(subset["gpu_model"].unique())
    price_cols = st.columns(max(len(gpus), 1))
    prices = {}
    for col, gpu in zip(price_cols, gpus, strict=False):
        default, source = default_price(data.prices(), gpu)
        planned = plan_price(gpu)
        if planned is not None:
            default, source = planned, "the Plan page's price"
        prices[gpu] = col.number_input(
            f"{gpu} $ / GPU-hour",
            0.0,
            1000.0,
            default or 0.0,
            step=0.05,
            key=f"w_price_{gpu}",
            help=f"Default: {source}" if source else "No reference price",
        )
        if planned is not None and prices[gpu] != planned:
            carry_price(gpu, prices[gpu])  # back into the plan's offers
    costs = priced_points(subset, prices)
    st.plotly_chart(cost_latency_figure(costs, colours=colours), key="chart_cost_latency")
    st.caption(
        "$ per million tokens = GPUs x price / (total tokens/s x 3,600) x 10^6 at the level's "
        "measured throughput; stars: no other level is both cheaper and faster."
    )
with tabs[4]:
    figures = power_figures(data.catalog())
    energy = energy_per_token(subset, figures)
    counts = energy["energy_basis"].value_counts()
    if energy["j_per_token"].notna().any():
        st.plotly_chart(energy_figure(energy, colours=colours), key="chart_energy")
    else:
        st.info(
            "Energy per token is unknown for this selection: no level measured GPU energy, and "
            "the GPU catalog lacks idle or rated power for these GPUs (Data page)."
        )
    lines = [
        f"Measured (NVML energy counter or sampled power): {counts.get(MEASURED, 0)} level(s). "
        f"Modelled: {counts.get(MODELLED, 0)} level(s), not measured: a server of n GPUs draws "
        "n x (idle + u x (rated - idle)) W, u = the level's tokens/s over the busiest level of "
        "the same configuration and traffic; joules per token = that power / tokens/s. GPU only, "
        "before PUE. Power figures from the GPU catalog (Data page; override them on the Plan "
        "page):"
    ]
    lines += [f"- {line}" for line in figures_used(subset, figures)]
    if counts.get(UNKNOWN, 0):
        lines.append(f"{counts[UNKNOWN]} level(s) unknown: neither measured nor modellable.")
    st.caption("  \n".join(lines))

st.subheader("Points")
st.caption(
    "One row per run and load level. Latency statistics in ms over completed requests; empty = "
    "not in the source. Achieved = completed / wall time, which counts the drain after the last "
    "arrival; sustained leaves the drain out. “Question this level”: a P99 far above those at "
    "higher rates (the latency curve leaves such levels out), or more than the server can "
    "physically carry (its KV cache by Little's law, or decode bandwidth: GPU memory and bandwidth "
    "from the catalog, the model's shape from sample_data/models/architectures.toml). Provenance "
    "columns at the right."
)
st.dataframe(
    points_table(subset, data.catalog()),
    hide_index=True,
    column_order=TABLE_COLUMNS,
    column_config={
        "gpu_model": st.column_config.TextColumn("GPU"),
        "gpu_count": st.column_config.NumberColumn("GPUs / server"),
        "offered_rate_rps": st.column_config.NumberColumn("Offered (req/s)", format="%.1f"),
        "request_throughput_rps": st.column_config.NumberColumn(
            "Achieved (req/s)", format="%.2f", help="Completed / wall time, drain included"
        ),
        "sustained_rps": st.column_config.NumberColumn(
            "Sustained req/s",
            format="%.2f",
            help="The rate the server sustained, the drain after the last arrival left out",
        ),
        "kept_up": st.column_config.TextColumn(
            "Kept up", help="Did latency stay bounded at this offered load? Why: next column"
        ),
        "load_reason": st.column_config.TextColumn("Why", width="medium"),
        "question": st.column_config.TextColumn(
            "Question this level",
            width="medium",
            help="Why a reader should doubt this level (empty: nothing found)",
        ),
        "source_kind": st.column_config.TextColumn(
            "Whose", help="published: the bundled sample data; your runs: what you imported"
        ),
        "load_basis": st.column_config.TextColumn(
            "Judged from", help="send times (fleetplan's own runs) or estimated from statistics"
        ),
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
    data=to_csv(subset.drop(columns=["configuration"])),
    file_name="fleetplan-benchmarks.csv",
    mime="text/csv",
    icon=":material/download:",
    key="download_points",
)
