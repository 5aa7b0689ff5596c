"""The Benchmarks page's figures: one line per series (a configuration, and apart from it the
user's own runs of it) joining its load levels, one colour per series on every tab, log axes
labelled in plain numbers, hover boxes with labels and units, outliers marked with their reason.
Built from what `fleetplan.services.benchmark_tables` / `energy_tables` compute; the page passes
each to `st.plotly_chart` with its key."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from fleetplan.app.charts import TARGET_COLOUR, distinct_colours, readable_log_axes, target_line
from fleetplan.services.benchmark_tables import PARETO_LABELS, YOURS, series_labels
from fleetplan.services.energy_tables import MEASURED, MODELLED

QUESTIONED_COLOUR = "#D55E00"
# The user's own runs: the same colour family would hide them, so a dashed line and open markers.
_YOURS_LINE = {"dash": "dash"}


def _by_series(points: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    labelled = points.assign(series=series_labels(points))
    return [(name, rows) for name, rows in labelled.groupby("series", sort=False)]


def _colour_of(colours: dict[str, str], series: str) -> str:
    return colours.get(series) or distinct_colours([series])[series]


def _mine(series: str) -> bool:
    return series.endswith(f"({YOURS})")


def throughput_figure(
    curve: pd.DataFrame, *, colours: dict[str, str], label: str, unit: str, title: str
) -> go.Figure:
    """Achieved throughput against offered load (`queries.load_curve`): one line per series."""
    figure = go.Figure()
    for series, rows in _by_series(curve):
        rows = rows.sort_values("offered_rate_rps")
        colour = _colour_of(colours, series)
        figure.add_scatter(
            x=rows["offered_rate_rps"],
            y=rows["value"],
            mode="lines+markers",
            name=series,
            line={"color": colour, "width": 2.5, **(_YOURS_LINE if _mine(series) else {})},
            marker={
                "color": colour,
                "size": 9,
                "symbol": "circle-open" if _mine(series) else "circle",
            },
            customdata=rows[["repeats"]].to_numpy(),
            hovertemplate=f"Offered load: %{{x:.3g}} req/s<br>{label}: %{{y:,.1f}} {unit}"
            "<br>Runs averaged: %{customdata[0]}<extra>" + series + "</extra>",
        )
    figure.update_layout(
        title=title,
        xaxis_title="Offered load (requests/s, Poisson; log scale)",
        yaxis_title=f"{label} ({unit})",
        xaxis_type="log",
        legend_title_text="Configuration",
    )
    return readable_log_axes(figure, x=True)


def _questioned_trace(points: pd.DataFrame, x: str, y: str, y_label: str) -> go.Scatter | None:
    flagged = points[points["question"].notna()] if "question" in points.columns else points[:0]
    if flagged.empty:
        return None
    return go.Scatter(
        x=flagged[x],
        y=flagged[y],
        mode="markers",
        name="questioned level (outlier)",
        marker={
            "symbol": "circle-open",
            "size": 22,
            "color": QUESTIONED_COLOUR,
            "line": {"width": 2},
        },
        customdata=flagged[["configuration", "question"]].to_numpy(),
        hovertemplate=f"%{{customdata[0]}}: {y_label} %{{y:,.0f}} ms"
        "<br><b>Questioned:</b> %{customdata[1]}<extra></extra>",
    )


def latency_throughput_figure(
    points: pd.DataFrame, *, colours: dict[str, str], target_ms: float
) -> go.Figure:
    """P99 TTFT against achieved throughput, each series' levels joined in order of offered
    load; outliers ringed; the target line labelled."""
    figure = go.Figure()
    for series, rows in _by_series(points):
        rows = rows.sort_values("offered_rate_rps", na_position="last")
        colour = _colour_of(colours, series)
        figure.add_scatter(
            x=rows["request_throughput_rps"],
            y=rows["ttft_p99_ms"],
            mode="lines+markers",
            name=series,
            line={"color": colour, "width": 2, **(_YOURS_LINE if _mine(series) else {})},
            marker={
                "color": colour,
                "size": 9,
                "symbol": "circle-open" if _mine(series) else "circle",
            },
            customdata=rows[["offered_rate_rps", "tpot_p99_ms", "source_file"]].to_numpy(),
            hovertemplate="Achieved: %{x:.2f} req/s (offered %{customdata[0]:.3g})"
            "<br>P99 TTFT: %{y:,.0f} ms<br>P99 TPOT: %{customdata[1]:,.1f} ms"
            "<br>File: %{customdata[2]}<extra>" + series + "</extra>",
        )
    questioned = _questioned_trace(points, "request_throughput_rps", "ttft_p99_ms", "P99 TTFT")
    if questioned is not None:
        figure.add_trace(questioned)
    target_line(figure, target_ms, label=f"your target: {target_ms:,g} ms", colour=TARGET_COLOUR)
    figure.update_layout(
        title="P99 time to first token against achieved throughput",
        xaxis_title="Achieved throughput (requests/s, log scale)",
        yaxis_title="P99 TTFT (ms, log scale)",
        xaxis_type="log",
        yaxis_type="log",
        legend_title_text="Configuration",
    )
    return readable_log_axes(figure, x=True, y=True, also=[target_ms])


def cost_latency_figure(costs: pd.DataFrame, *, colours: dict[str, str]) -> go.Figure:
    """$ per million tokens against P99 TTFT (`benchmark_tables.priced_points`): one line per
    series through its levels; stars where no other level is both cheaper and faster."""
    figure = go.Figure()
    for series, rows in _by_series(costs):
        rows = rows.sort_values("offered_rate_rps", na_position="last")
        colour = _colour_of(colours, series)
        figure.add_scatter(
            x=rows["ttft_p99_ms"],
            y=rows["usd_per_million_total_tokens"],
            mode="lines+markers",
            name=series,
            line={"color": colour, "width": 1.5, **(_YOURS_LINE if _mine(series) else {})},
            marker={
                "color": colour,
                "size": [15 if p else 8 for p in rows["pareto"]],
                "symbol": ["star" if p else "circle-open" for p in rows["pareto"]],
            },
            customdata=rows[["offered_rate_rps", "total_throughput_tps", "point"]].to_numpy(),
            hovertemplate="P99 TTFT: %{x:,.0f} ms<br>$%{y:,.3f} per million tokens"
            "<br>Offered %{customdata[0]:.3g} req/s, %{customdata[1]:,.0f} tokens/s"
            "<br>%{customdata[2]}<extra>" + series + "</extra>",
        )
    figure.update_layout(
        title="Cost per million tokens against P99 TTFT (one fully loaded server per level)",
        xaxis_title="P99 TTFT (ms, log scale)",
        yaxis_title="$ per million total tokens",
        xaxis_type="log",
        legend_title_text=f"Configuration (star: {PARETO_LABELS[True]})",
    )
    return readable_log_axes(figure, x=True)


def energy_figure(energy: pd.DataFrame, *, colours: dict[str, str]) -> go.Figure:
    """GPU energy per token against achieved throughput (`energy_tables.energy_per_token`): a
    solid line where measured, dashed with open markers where modelled; unknown levels absent."""
    figure = go.Figure()
    known = energy[energy["j_per_token"].notna()]
    for series, rows in _by_series(known):
        colour = _colour_of(colours, series)
        for basis, part in rows.groupby("energy_basis", sort=True):
            part = part.sort_values("request_throughput_rps")
            modelled = basis == MODELLED
            figure.add_scatter(
                x=part["request_throughput_rps"],
                y=part["j_per_token"],
                mode="lines+markers",
                name=f"{series} ({basis})",
                line={"color": colour, "width": 2, "dash": "dash" if modelled else "solid"},
                marker={
                    "color": colour,
                    "size": 9,
                    "symbol": "circle-open" if modelled else "circle",
                },
                customdata=part[["offered_rate_rps", "tokens_per_kwh", "energy_how"]].to_numpy(),
                hovertemplate="Achieved: %{x:.2f} req/s (offered %{customdata[0]:.3g})"
                "<br>%{y:.3f} J per token (%{customdata[1]:,.0f} tokens per kWh)"
                "<br>%{customdata[2]}<extra>" + f"{series} ({basis})" + "</extra>",
            )
    kinds = sorted(known["energy_basis"].unique())
    figure.update_layout(
        title="GPU energy per token (input + output): " + " and ".join(kinds or [MEASURED]),
        xaxis_title="Achieved throughput (requests/s, log scale)",
        yaxis_title="Joules per token (GPU only, before PUE)",
        xaxis_type="log",
        legend_title_text="Configuration (basis)",
    )
    return readable_log_axes(figure, x=True)
