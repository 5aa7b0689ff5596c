"""The dashboard's plotly figures that take more than one call: built from what services compute,
so that pages stay short. Each function returns a `go.Figure`; the page passes it to
`st.plotly_chart` with its key (tests find charts by key and read their traces' names)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Real

import plotly.graph_objects as go

from fleetplan.app.style import OKABE_ITO, log_ticks
from fleetplan.planner.peak.results import FleetPlan, ParetoPoint
from fleetplan.planner.report.table import gpus_text
from fleetplan.services.load_tables import (
    CANNOT_TELL,
    FELL_BEHIND,
    KEPT_UP,
    ConfigurationCurve,
    PoolOperatingPoint,
)

TARGET_COLOUR = "#D55E00"
OUTLIER = "questioned (outlier)"
SYMBOLS = {
    KEPT_UP: "circle",
    FELL_BEHIND: "x-thin-open",
    CANNOT_TELL: "diamond-open",
    OUTLIER: "circle-x-open",
}
METRIC_NAMES = {"ttft": "P99 TTFT", "tpot": "P99 TPOT"}


def distinct_colours(labels: Sequence[str]) -> dict[str, str]:
    """One colour per label, in order (colour-blind-safe; the palette repeats past eight)."""
    return {label: OKABE_ITO[i % len(OKABE_ITO)] for i, label in enumerate(labels)}


def target_line(figure: go.Figure, value: float, *, label: str, colour: str) -> None:
    """A dashed horizontal target line at `value`, labelled at its left end, on a log y axis.
    (`add_hline`'s own label would sit at 10**value: plotly places annotations on a log axis
    by the exponent, shapes by the value.)"""
    figure.add_hline(y=value, line_dash="dash", line_color=colour)
    figure.add_annotation(
        x=0,
        xref="paper",
        xanchor="left",
        y=math.log10(value),
        yanchor="bottom",
        text=label,
        showarrow=False,
        font={"color": colour},
    )


def _xy(pairs: Sequence[tuple[float, float]]) -> tuple[list[float], list[float]]:
    return [x for x, _ in pairs], [y for _, y in pairs]


def readable_log_axes(
    figure: go.Figure, *, x: bool = False, y: bool = False, also: Sequence[float] = ()
) -> go.Figure:
    """Label the figure's log axes at 1-2-5 per decade in plain numbers (`style.log_ticks`),
    from the data its traces carry (and `also`, e.g. a target line's value, on y)."""
    for name, wanted in (("x", x), ("y", y)):
        if not wanted:
            continue
        values = [float(v) for v in (also if name == "y" else ())]
        for trace in figure.data:
            data = getattr(trace, name, None)
            values += [] if data is None else [float(v) for v in data if isinstance(v, Real)]
        ticks = log_ticks(values)
        if ticks:
            figure.update_layout({f"{name}axis": {"tickmode": "array", **ticks}})
    return figure


def _status_key(figure: go.Figure) -> None:
    """Legend entries for the kinds of measured level (grey: they apply to every colour)."""
    for status, symbol in SYMBOLS.items():
        figure.add_scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=f"level: {status}",
            marker={"symbol": symbol, "color": "#666666", "size": 9},
            legendgroup="levels",
        )


def _levels_trace(curve: ConfigurationCurve, metric: str, colour: str) -> go.Scatter:
    """The measured levels, one symbol per judgement; in the legend only where the
    configuration has no curve for `metric` (its levels are all it shows)."""
    levels = [lv for lv in curve.levels if getattr(lv, f"{metric}_p99_ms") is not None]
    statuses = [OUTLIER if lv.outlier else lv.status for lv in levels]
    return go.Scatter(
        x=[lv.offered_rps for lv in levels],
        y=[getattr(lv, f"{metric}_p99_ms") for lv in levels],
        mode="markers",
        name=f"{curve.configuration} levels",
        legendgroup=curve.configuration,
        showlegend=not curve.samples(metric),
        marker={
            "color": colour,
            "symbol": [SYMBOLS[status] for status in statuses],
            "size": [16 if status == OUTLIER else 10 for status in statuses],
            "line": {"color": colour, "width": 2},
        },
        customdata=[
            [lv.status, lv.reason, lv.source_file, f"<br><b>Questioned:</b> {lv.outlier}"]
            if lv.outlier
            else [lv.status, lv.reason, lv.source_file, ""]
            for lv in levels
        ],
        hovertemplate="Offered load: %{x:.3g} req/s<br>"
        + METRIC_NAMES[metric]
        + ": %{y:,.0f} ms<br>%{customdata[0]}: %{customdata[1]}%{customdata[3]}"
        "<br>File: %{customdata[2]}<extra>" + curve.configuration + "</extra>",
    )


def _capacity(figure: go.Figure, curve: ConfigurationCurve, metric: str, colour: str) -> None:
    """The configuration's capacity at the targets: a star on its curve, a dotted line under it."""
    at_capacity = curve.capacity_ttft_p99_ms if metric == "ttft" else curve.capacity_tpot_p99_ms
    if curve.capacity_rps <= 0 or at_capacity is None:
        return
    figure.add_vline(x=curve.capacity_rps, line_dash="dot", line_color=colour)
    figure.add_scatter(
        x=[curve.capacity_rps],
        y=[at_capacity],
        mode="markers+text",
        name=f"{curve.configuration} capacity",
        legendgroup=curve.configuration,
        showlegend=False,
        marker={"symbol": "star", "size": 16, "color": colour, "line": {"width": 1}},
        text=[f"{curve.capacity_rps:.2f} req/s"],
        textposition="top left",
        textfont={"color": colour},
        hovertemplate="Capacity at your targets: %{x:.2f} req/s per server<br>"
        + METRIC_NAMES[metric]
        + ": %{y:,.0f} ms predicted<extra>"
        + curve.configuration
        + "</extra>",
    )


def load_curves_figure(
    curves: Sequence[ConfigurationCurve],
    metric: str,
    *,
    target_ms: float | None,
    title: str,
    colours: dict[str, str] | None = None,
    overlays: dict | None = None,
) -> go.Figure:
    """Each configuration's fitted curve through its measured levels, the target line and each
    configuration's capacity at the targets (a star on the curve and a dotted vertical line).
    `colours` (by configuration) keeps each one's colour from the page's other charts;
    `overlays` (by configuration: `estimate_overlay.Overlay`) the serving model simulated at the
    measured levels, dotted."""
    figure = go.Figure()
    colours = {**distinct_colours([c.configuration for c in curves]), **(colours or {})}
    for curve in curves:
        colour = colours[curve.configuration]
        measured, predicted = curve.parts(metric)
        _fitted_line(figure, measured, metric, curve.configuration, colour)
        if predicted:  # past the highest kept-up level: the queue form, dashed
            _fitted_line(
                figure,
                predicted,
                metric,
                curve.configuration,
                colour,
                dash="dash",
                label="predicted past the measured levels",
            )
        figure.add_trace(_levels_trace(curve, metric, colour))
        _capacity(figure, curve, metric, colour)
        overlay = (overlays or {}).get(curve.configuration)
        if overlay is not None:
            x, y = _xy(overlay.samples(metric))
            figure.add_scatter(
                x=x,
                y=y,
                mode="lines+markers",
                name=f"{curve.configuration}: serving model",
                legendgroup=curve.configuration,
                line={"color": colour, "width": 1.5, "dash": "dot"},
                marker={"symbol": "x-thin-open", "size": 7, "color": colour},
                hovertemplate=f"Offered load: %{{x:.2f}} req/s<br>{METRIC_NAMES[metric]}: "
                f"%{{y:,.0f}} ms (serving model, simulated at this level)<extra>"
                f"{curve.configuration}</extra>",
            )
    _status_key(figure)
    if target_ms is not None:
        target_line(figure, target_ms, label=f"target {target_ms:g} ms", colour=TARGET_COLOUR)
    figure.update_layout(
        title=title,
        xaxis_title="Offered load (requests/s)",
        yaxis_title=f"{METRIC_NAMES[metric]} (ms, log scale)",
        yaxis_type="log",
        legend_title_text="Configuration",
    )
    return readable_log_axes(figure, y=True, also=[target_ms] if target_ms else [])


def _fitted_line(
    figure: go.Figure,
    samples,
    metric: str,
    name: str,
    colour: str,
    *,
    x_label: str = "Offered load",
    dash: str = "solid",
    label: str = "fitted curve",
) -> None:
    """A configuration's fitted curve as a line, its hover box labelled, with units; a second
    part of the same curve (`label` other than the fitted curve's) stays out of the legend."""
    x, y = _xy(samples)
    figure.add_scatter(
        x=x,
        y=y,
        mode="lines",
        name=name,
        legendgroup=name,
        showlegend=label == "fitted curve",
        line={"color": colour, "width": 2.5, "dash": dash},
        hovertemplate=f"{x_label}: %{{x:.2f}} req/s<br>{METRIC_NAMES[metric]}: "
        f"%{{y:,.0f}} ms ({label})<extra>{name}</extra>",
    )


_DASHES = ("solid", "dash", "dot", "dashdot")
_SYMBOLS = ("star", "diamond", "square", "triangle-up")


def _planned_load(
    figure: go.Figure, pool: PoolOperatingPoint, metric: str, colour: str, nth: int
) -> None:
    """A pool's planned load per server as a marker on its curve, labelled beside it."""
    value = pool.predicted_ttft_p99_ms if metric == "ttft" else pool.predicted_tpot_p99_ms
    if value is not None:
        figure.add_scatter(
            x=[pool.load_rps],
            y=[value],
            mode="markers+text",
            name=f"{pool.label}: planned load",
            legendgroup=pool.label,
            showlegend=False,
            marker={
                "symbol": _SYMBOLS[nth % len(_SYMBOLS)],
                "size": 18,
                "color": colour,
                "line": {"width": 1},
            },
            text=[f"{pool.traffic_class}: {pool.load_rps:.2f} req/s per server"],
            # to the right of the point, above and below in turn; never cut at the axes
            textposition="top right" if nth % 2 == 0 else "bottom right",
            cliponaxis=False,
            textfont={"color": colour},
            hovertemplate="Planned load: %{x:.2f} req/s per server<br>"
            + METRIC_NAMES[metric]
            + ": %{y:,.0f} ms predicted<extra>"
            + pool.label
            + "</extra>",
        )


def operating_points_figure(pools: Sequence[PoolOperatingPoint], metric: str) -> go.Figure:
    """Each pool's planned load per server on its configuration's curve, with its class's target
    and the configuration's capacity at it (before the utilisation ceiling)."""
    figure = go.Figure()
    colours = distinct_colours([p.label for p in pools])
    # pools on one configuration share its curve: each its own dash and marker, so that three
    # pools do not draw as one line
    seen: dict[str, int] = {}
    for pool in pools:
        nth = seen[pool.configuration] = seen.get(pool.configuration, -1) + 1
        colour = colours[pool.label]
        _fitted_line(
            figure,
            pool.curve.samples(metric),
            metric,
            pool.label,
            colour,
            x_label="Load per server",
            dash=_DASHES[nth % len(_DASHES)],
        )
        figure.add_trace(_levels_trace(pool.curve, metric, colour).update(legendgroup=pool.label))
        _planned_load(figure, pool, metric, colour, nth)
        if pool.curve.capacity_rps > 0:
            figure.add_vline(x=pool.curve.capacity_rps, line_dash="dot", line_color=colour)
        target = pool.targets.get(metric)
        if target is not None:
            target_line(
                figure, target, label=f"{pool.traffic_class} target {target:g} ms", colour=colour
            )
    _status_key(figure)
    figure.update_layout(
        title=f"{METRIC_NAMES[metric]} at each pool's planned load per server",
        xaxis_title="Load per server (requests/s)",
        yaxis_title=f"{METRIC_NAMES[metric]} (ms, log scale)",
        yaxis_type="log",
        legend_title_text="Pool",
    )
    targets = [p.targets.get(metric) for p in pools]
    return readable_log_axes(figure, y=True, also=[t for t in targets if t])


def _wrapped(text: str, width: int = 28) -> str:
    """`text` broken into lines of about `width` characters for an axis label."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "<br>".join(lines)


def fleet_bar_label(fleet: FleetPlan) -> str:
    """A fleet's name and, under it, its GPUs and servers (or why it has none)."""
    if fleet.totals is None:
        size = f"no fleet: {fleet.status.value}"
    else:
        servers = fleet.totals.servers
        size = f"{gpus_text(fleet.totals.gpus)} ({servers} server{'s' if servers != 1 else ''})"
    return f"<b>{_wrapped(fleet.name)}</b><br>{_wrapped(size)}"


def _bars(
    fleets: Sequence[FleetPlan], values: list[float | None], *, fmt: str, colour: str, name: str
) -> go.Figure:
    """One bar per fleet, its value written on it ("unknown" where it is not known)."""
    figure = go.Figure()
    figure.add_bar(
        x=[fleet_bar_label(f) for f in fleets],
        y=[0 if v is None else v for v in values],
        name=name,
        marker_color=colour,
        text=[
            fmt.format(v) if v is not None else ("unknown" if f.totals else f.status.value)
            for v, f in zip(values, fleets, strict=True)
        ],
        textposition="outside",
        cliponaxis=False,
        hovertemplate="%{x}<br>%{text}<extra></extra>",
    )
    figure.update_layout(xaxis_title=None, margin={"b": 120}, xaxis_tickangle=0)
    return figure


def baselines_figures(fleets: Sequence[FleetPlan]) -> tuple[go.Figure, go.Figure | None]:
    """Cost per month of the plan against the simpler fleets; and carbon, where any is known.
    Each bar says its value, and its fleet's GPUs and servers under its name."""
    cost = [f.totals.monthly_cost_usd if f.totals else None for f in fleets]
    carbon = [f.totals.carbon_kgco2e_month if f.totals else None for f in fleets]
    figure = _bars(fleets, cost, fmt="${:,.0f}", colour="#0072B2", name="$ / month")
    figure.update_layout(
        title="Cost per month: the plan against simpler fleets", yaxis_title="$ per month"
    )
    if not any(c is not None for c in carbon):
        return figure, None
    carbon_figure = _bars(
        fleets, carbon, fmt="{:,.0f} kgCO2e", colour="#009E73", name="kgCO2e / month"
    )
    carbon_figure.update_layout(
        title="Carbon per month (operational + embodied)", yaxis_title="kgCO2e per month"
    )
    return figure, carbon_figure


def pareto_figure(
    pareto: Sequence[ParetoPoint], *, monthly_cost_usd: float, carbon_kgco2e_month: float | None
) -> go.Figure:
    """The cost/carbon frontier, and this plan on it."""
    frontier = go.Figure()
    frontier.add_scatter(
        x=[p.monthly_cost_usd for p in pareto],
        y=[p.carbon_kgco2e_month for p in pareto],
        mode="lines+markers",
        name="Pareto frontier",
        text=[gpus_text(p.gpus) for p in pareto],
        hovertemplate="$%{x:,.0f}/month, %{y:,.0f} kgCO2e/month<br>%{text}<extra></extra>",
    )
    cheapest = min(pareto, key=lambda p: (p.monthly_cost_usd, p.carbon_kgco2e_month))
    cleanest = min(pareto, key=lambda p: (p.carbon_kgco2e_month, p.monthly_cost_usd))
    ends = [(cheapest, "cheapest", "top right")]
    if cleanest != cheapest:
        ends.append((cleanest, "cleanest", "bottom left"))
    for point, label, position in ends:
        frontier.add_scatter(
            x=[point.monthly_cost_usd],
            y=[point.carbon_kgco2e_month],
            mode="text",
            text=[f"{label}: {gpus_text(point.gpus)}"],
            textposition=position,
            showlegend=False,
            hoverinfo="skip",
            name=label,
        )
    if carbon_kgco2e_month is not None:
        frontier.add_scatter(
            x=[monthly_cost_usd],
            y=[carbon_kgco2e_month],
            mode="markers",
            name="this plan",
            marker={"symbol": "star", "size": 16, "color": TARGET_COLOUR},
        )
    frontier.update_layout(
        title="Cost against carbon: every point is a fleet no other beats on both",
        xaxis_title="$ per month",
        yaxis_title="kgCO2e per month",
    )
    costs = [p.monthly_cost_usd for p in pareto] + [monthly_cost_usd]
    carbons = [p.carbon_kgco2e_month for p in pareto]
    carbons += [carbon_kgco2e_month] if carbon_kgco2e_month is not None else []
    for axis, values in (("xaxis", costs), ("yaxis", carbons)):
        frontier.update_layout({axis: {"tickformat": ",.6~g", "range": padded_range(values)}})
    return frontier


def padded_range(values: Sequence[float]) -> list[float] | None:
    """An axis range for values that (nearly) coincide, so that the ticks do not read 330.4563705
    to 330.4563708: at least 2 % of their size (or 1) either side; None (Plotly's own) otherwise."""
    middle, spread = (min(values) + max(values)) / 2, max(values) - min(values)
    least = max(abs(middle) * 0.02, 1.0)
    return None if spread >= least else [middle - least, middle + least]
