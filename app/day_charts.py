"""The day plan's chart: servers per configuration through the day, stacked (reserved serving
solid, reserved idle pale, on demand hatched, in each GPU's colour as everywhere in the app),
with each class's demand (req/s, right axis) and each site's grid intensity (gCO2e/kWh, a
second right axis) drawn over it. Built from `services.day_tables`' tables; the page draws it
with `st.plotly_chart`."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from fleetplan.app.charts import TARGET_COLOUR
from fleetplan.app.style import series_colours

_DEMAND_DASHES = ("solid", "dash", "dot", "dashdot")
GRID_COLOUR = "#666666"


def day_figure(servers: pd.DataFrame, demand: pd.DataFrame, grid: pd.DataFrame) -> go.Figure:
    """Stacked bars (servers per configuration and hour), demand lines, grid lines."""
    figure = go.Figure()
    _servers(figure, servers)
    _lines(figure, demand, grid)
    figure.update_layout(**_LAYOUT)
    return figure


def _servers(figure: go.Figure, servers: pd.DataFrame) -> None:
    """A bar per configuration and state: reserved serving solid, reserved idle pale, on
    demand hatched; reserved first, at the bottom of the stack."""
    ordered = servers.sort_values("commitment", kind="stable", key=lambda c: c != "reserved")
    colours = series_colours(dict(zip(ordered["series"], ordered["gpu_model"], strict=False)))
    for (name, state), rows in ordered.groupby(["series", "state"], sort=False):
        on_demand = rows["commitment"].iloc[0] != "reserved"
        label = name if on_demand else f"{name}, {state}"
        figure.add_bar(
            x=rows["hour"].tolist(),
            y=rows["servers"].tolist(),
            name=label,
            legendgroup="servers",
            legendgrouptitle_text="Servers",
            opacity=0.35 if state == "idle" else 1.0,
            marker={
                "color": colours[name],
                "pattern": {
                    "shape": "/" if on_demand else "",
                    "fillmode": "overlay",  # white lines over the GPU's colour
                    "fgcolor": "#ffffff",
                    "solidity": 0.4,
                },
                "line": {"color": colours[name], "width": 1},
            },
            hovertemplate="%{x}h: %{y} servers<extra>" + label + "</extra>",
        )


def _lines(figure: go.Figure, demand: pd.DataFrame, grid: pd.DataFrame) -> None:
    for i, (name, rows) in enumerate(demand.groupby("class", sort=False)):
        figure.add_scatter(
            x=rows["hour"].tolist(),
            y=rows["rps"].tolist(),
            name=f"{name} demand",
            yaxis="y2",
            mode="lines+markers",
            legendgroup="demand",
            legendgrouptitle_text="Demand (req/s)",
            line={"color": "#000000", "dash": _DEMAND_DASHES[i % len(_DEMAND_DASHES)]},
            hovertemplate="%{x}h: %{y:.2f} req/s<extra>" + str(name) + "</extra>",
        )
    for i, (name, rows) in enumerate(grid.groupby("site", sort=False)):
        figure.add_scatter(
            x=rows["hour"].tolist(),
            y=rows["gco2_per_kwh"].tolist(),
            name=f"{name} grid",
            yaxis="y3",
            mode="lines",
            legendgroup="grid",
            legendgrouptitle_text="Grid (gCO2e/kWh)",
            line={
                "color": TARGET_COLOUR,
                "dash": ("dot", "dash", "dashdot")[i % 3],
                "shape": "hv",
            },
            hovertemplate="%{x}h: %{y:,.0f} gCO2e/kWh<extra>" + str(name) + "</extra>",
        )


_LAYOUT = {
    "title": "Servers per configuration through the day, with demand and grid intensity",
    "barmode": "stack",
    "xaxis": {"title": "Hour of the day", "dtick": 1, "range": [-0.5, 23.5], "domain": [0, 0.9]},
    "yaxis": {"title": "Servers", "rangemode": "tozero"},
    "yaxis2": {
        "title": "Demand (req/s)",
        "overlaying": "y",
        "side": "right",
        "rangemode": "tozero",
        "showgrid": False,
        "tickmode": "auto",
    },
    "yaxis3": {
        "title": {"text": "Grid (gCO2e/kWh)", "font": {"color": TARGET_COLOUR}},
        "overlaying": "y",
        "side": "right",
        "anchor": "free",
        "position": 0.99,
        "rangemode": "tozero",
        "showgrid": False,
        "tickfont": {"color": TARGET_COLOUR},
        "tickmode": "auto",
    },
    "legend": {"orientation": "h", "y": -0.18, "yanchor": "top", "groupclick": "toggleitem"},
    "margin": {"r": 60, "b": 40},
    "height": 600,
}
