"""The trace replay's chart: each class's P99 (TTFT or TPOT) hour by hour against its target, an
hour that misses marked. Built from `services.replay.hours_table`; the page draws it with
`st.plotly_chart`."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from fleetplan.app.charts import TARGET_COLOUR

_DASHES = ("solid", "dash", "dot", "dashdot")
_COLOURS = ("#0072B2", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
METRICS = {"ttft": "P99 TTFT (ms)", "tpot": "P99 TPOT (ms)"}


def replay_figure(table: pd.DataFrame, metric: str) -> go.Figure:
    """P99 of `metric` ("ttft" or "tpot") per class and hour, with each class's target."""
    figure = go.Figure()
    for i, (name, rows) in enumerate(table.groupby("class", sort=False)):
        colour = _COLOURS[i % len(_COLOURS)]
        values = rows[f"{metric}_p99_ms"]
        figure.add_scatter(
            x=rows["hour"].tolist(),
            y=values.tolist(),
            name=name,
            mode="lines+markers",
            line={"color": colour, "dash": _DASHES[i % len(_DASHES)]},
            marker={
                "color": [colour if ok else TARGET_COLOUR for ok in rows["meets"]],
                "symbol": ["circle" if ok else "x" for ok in rows["meets"]],
                "size": [7 if ok else 11 for ok in rows["meets"]],
            },
            hovertemplate="%{x}h: %{y:,.1f} ms<extra>" + name + "</extra>",
        )
        target = rows[f"{metric}_target_ms"].dropna()
        if len(target):
            figure.add_scatter(
                x=[-0.5, 23.5],
                y=[float(target.iloc[0])] * 2,
                name=f"{name}: target {float(target.iloc[0]):g} ms",
                mode="lines",
                line={"color": colour, "dash": "longdash", "width": 1},
                hoverinfo="skip",
            )
    figure.update_layout(
        title=f"{METRICS[metric].split(' (')[0]} by hour, against the target (x: misses)",
        xaxis={"title": "Hour of the day", "dtick": 1, "range": [-0.5, 23.5]},
        yaxis={"title": METRICS[metric], "type": "log"},
        height=360,
        margin={"t": 50, "b": 40},
        legend={"orientation": "h", "y": -0.25},
    )
    return figure
