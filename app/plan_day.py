"""The Plan page's day (scenario version 2, issue 22): the switch between planning the peak hour
and a day; each class's demand through the day (a preset shape x its peak Rate, 24 rates of its
own, or a volume in a window) and model; the offers' names and commitments (reserved / on
demand); each site's grid in each hour; the day's limits. Then the day plan: servers per
configuration through the day with demand and grid over them, the schedule, each hour's figures,
the comparison with the peak plan and reserved-only, and the schedule CSV.

State: the day tables start from `s_day_base` (widget keys end in `s_day_gen`) and are made new
only when the scenario's day changed elsewhere (a loaded file, a link, a class added in the peak
tables; `_renew_day`). What they make is kept on the page's base scenario (`s_base`), so that the
peak tables' rows keep their day fields (`services.day_fields`) and a restart loses nothing; a
change of a class's peak (or of the tables' shape) restarts the page's widgets
(`plan_state.restart`), so that the Rate column shows the peak. Tables and checks:
services.day_forms; what the plan shows: services.day_tables.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from fleetplan.app.day_charts import day_figure
from fleetplan.app.plan_state import restart
from fleetplan.core.errors import InputError
from fleetplan.planner.day.schedule import schedule_csv
from fleetplan.planner.peak.results import Plan
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.services import day_forms as forms
from fleetplan.services import day_tables
from fleetplan.services.currency import money, rate_note
from fleetplan.services.plain_text import plain
from fleetplan.services.scenario_forms import page_message

MODES = {"peak": "the peak hour", "day": "a day (24 hours)"}


def _tables(scenario: Scenario) -> str:
    """What the day tables show of a scenario: equal for equal tables."""
    parts = (
        forms.day_classes_table(scenario),
        forms.hours_table(scenario),
        forms.offers_table(scenario),
        forms.site_hours_table(scenario),
    )
    return repr([p.to_json() for p in parts] + [forms.day_settings(scenario)])


def _renew_day(scenario: Scenario) -> None:
    state = st.session_state
    state.s_day_gen = state.get("s_day_gen", 0) + 1
    state.s_day_base = state.s_day_made = scenario


def day_inputs(scenario: Scenario) -> Scenario:
    """The mode switch; for a day scenario the day tables, and the scenario they make."""
    state = st.session_state
    made = state.get("s_day_made")
    if made is None or _tables(made) != _tables(scenario):
        _renew_day(scenario)  # changed elsewhere: the tables start again from it
    gen = state.s_day_gen
    mode = st.radio(
        "Plan",
        list(MODES),
        index=1 if scenario.is_day else 0,
        format_func=MODES.get,
        horizontal=True,
        key=f"w_day_mode_{gen}",
        help="The peak hour: every class at its peak rate, every GPU reserved (scenario version "
        "1). A day: each class's demand hour by hour, volumes in windows, on-demand offers and "
        "the grid's hours (version 2), planned over 24 hours beside its peak.",
    )
    if (mode == "day") != scenario.is_day:
        _switch(scenario, mode)
    if not scenario.is_day:
        return scenario
    day = _day_tables(state.s_day_base, scenario, gen)
    _offer_on_demand(day, gen)
    if day != scenario:
        state.s_base = state.s_day_made = day  # the peak tables' rows keep it (module doc)
        peaks = [c.rate_rps for c in scenario.classes], [c.rate_rps for c in day.classes]
        if peaks[0] != peaks[1] or _shape(day) != _shape(scenario):
            _renew_day(day)
            restart(day, made=scenario)
    return day


def _shape(scenario: Scenario) -> tuple:
    return tuple(forms.demand_of(c) for c in scenario.classes)


def _switch(scenario: Scenario, mode: str) -> None:
    try:
        other = (
            scenario.model_copy(update={"version": 2})
            if mode == "day"
            else forms.at_the_peak(scenario)
        )
        other = forms.validated(other.model_dump(mode="json"))
    except InputError as error:
        st.error(
            f"This scenario cannot be planned at its peak only: {plain(page_message(error))}",
            icon=":material/error:",
        )
        return
    _renew_day(other)
    restart(other, made=scenario)


def _day_tables(base: Scenario, scenario: Scenario, gen: int) -> Scenario:
    """The day tables (started from `base`) on the peak inputs' `scenario`."""
    st.markdown(
        "**Demand through the day** — each class's shape (scaled to its Rate, its peak), "
        "its 24 rates, or a volume of requests served inside a window"
    )
    classes = st.data_editor(
        forms.day_classes_table(base),
        hide_index=True,
        num_rows="fixed",
        key=f"w_day_classes_{gen}",
        disabled=["name"],
        column_config=_class_columns(),
    )
    hours = _hours_editor(forms.hours_table(base), forms.HOURS_TITLE, f"w_day_hours_{gen}")
    asked = _paste_or_fill(hours, forms.HOURS_TITLE, f"w_day_paste_{gen}")
    offers = _offers_editor(base, gen)
    st.markdown(f"**{forms.SITE_HOURS_TITLE}** — a row of 24 values (hours 0-23) per site")
    st.caption(
        "fleetplan bundles no hourly grid profile for any region preset (the reference data "
        "holds yearly figures only): a site's hours are yours to enter, e.g. from Electricity "
        "Maps or Ember hourly data; left at its yearly figure, the site's grid is flat."
    )
    site_hours = _hours_editor(
        forms.site_hours_table(base), forms.SITE_HOURS_TITLE, f"w_day_site_hours_{gen}"
    )
    asked = asked or _paste_or_fill(site_hours, forms.SITE_HOURS_TITLE, f"w_day_site_paste_{gen}")
    settings = _day_limits(base, gen)
    try:
        day = forms.with_day_tables(
            scenario,
            classes=classes,
            hours=hours,
            offers=offers,
            site_hours=site_hours,
            settings=settings,
        )
        if asked is None:
            return day
        day = forms.with_hours(day, *asked)  # a row pasted or filled: the tables start again
    except InputError as error:
        st.error(f"Check the day's inputs: {plain(page_message(error))}", icon=":material/edit:")
        st.stop()
        raise  # unreachable: st.stop() raises
    _renew_day(day)
    restart(day, made=scenario)
    raise AssertionError("restart re-runs the page")  # unreachable: st.rerun() raises


def _class_columns() -> dict:
    number = st.column_config.NumberColumn
    return {
        "name": st.column_config.TextColumn(forms.DAY_CLASS_LABELS["name"]),
        "demand": st.column_config.SelectboxColumn(
            forms.DAY_CLASS_LABELS["demand"],
            options=list(forms.DEMANDS),
            required=True,
            help="; ".join(f"{k}: {v}" for k, v in forms.DEMAND_LABELS.items()),
        ),
        "daily_requests": number(
            forms.DAY_CLASS_LABELS["daily_requests"], min_value=0.0, format="%.0f"
        ),
        "window_from": number(
            forms.DAY_CLASS_LABELS["window_from"], min_value=0, max_value=23, step=1
        ),
        "window_to": number(
            forms.DAY_CLASS_LABELS["window_to"],
            min_value=0,
            max_value=24,
            step=1,
            help="End hour, not included; at or before the start it wraps past midnight "
            "(22 to 6 is 22:00-06:00; 0 to 0 the whole day).",
        ),
        "model": st.column_config.TextColumn(forms.DAY_CLASS_LABELS["model"]),
    }


def _hours_editor(table: pd.DataFrame, title: str, key: str) -> pd.DataFrame:
    """A row of 24 values per class (or site), hours 0-23 as columns."""
    if table.empty:
        return table  # nothing given by its hours
    if title == forms.HOURS_TITLE:
        st.markdown(f"**{title}** — a row of 24 rates (hours 0-23) per class given by its hours")
    number = st.column_config.NumberColumn
    config = {"name": st.column_config.TextColumn("", width=80)}
    config |= {h: number(h, min_value=0.0, format="%g", width=46) for h in forms.HOUR_COLUMNS}
    return st.data_editor(
        table, hide_index=True, num_rows="fixed", key=key, disabled=["name"], column_config=config
    )


def _paste_or_fill(
    table: pd.DataFrame, title: str, key: str
) -> tuple[str, str, list[float]] | None:
    """Under an hours table: a row of 24 values pasted (a spreadsheet's row), or hours filled
    with one value, into the row chosen (a grid's cells are edited one at a time otherwise):
    the table's title, the row and its new values, when asked; the day tables apply it."""
    if table.empty:
        return None
    with st.expander(f"Paste or fill a row of {title.lower()}"):
        cols = st.columns([2, 5, 1, 1, 2, 2])
        name = cols[0].selectbox("Row", table["name"].tolist(), key=f"{key}_row")
        text = cols[1].text_input(
            "Paste 24 values",
            key=f"{key}_text",
            placeholder="hours 0-23, as a spreadsheet row is copied (tabs, commas or spaces)",
        )
        start = cols[2].number_input("From", 0, 23, 0, key=f"{key}_from")
        end = cols[3].number_input("To", 0, 24, 24, key=f"{key}_to", help="Not included.")
        value = cols[4].number_input("Fill with", 0.0, None, 0.0, key=f"{key}_value")
        paste = cols[5].button("Paste row", key=f"{key}_paste", disabled=not text.strip())
        fill = cols[5].button("Fill hours", key=f"{key}_fill")
        if not (paste or fill):
            return None
        try:
            if paste:
                return title, name, forms.pasted_hours(text, f"{title}, {name}")
            row = table[table["name"] == name].iloc[0][list(forms.HOUR_COLUMNS)]
            filled = forms.filled_hours([float(v) for v in row], int(start), int(end), value)
            return title, name, filled
        except InputError as error:
            st.error(plain(page_message(error)), icon=":material/edit:")
            return None


def _offers_editor(base: Scenario, gen: int) -> pd.DataFrame:
    st.markdown(
        "**Offers through the day** — reserved: paid every hour; on demand: paid in the hours "
        "a server runs (Max GPUs bounds each hour). Prices are the GPU table's."
    )
    labels = forms.OFFER_LABELS
    return st.data_editor(
        forms.offers_table(base),
        hide_index=True,
        num_rows="fixed",
        key=f"w_day_offers_{gen}",
        disabled=["gpu_model"],
        column_config={
            "gpu_model": st.column_config.TextColumn(labels["gpu_model"]),
            "name": st.column_config.TextColumn(
                labels["name"], help="Blank: the GPU's name. Two offers of one GPU need names."
            ),
            "commitment": st.column_config.SelectboxColumn(
                labels["commitment"], options=list(forms.COMMITMENTS), required=True
            ),
        },
    )


def _offer_on_demand(day: Scenario, gen: int) -> None:
    """A GPU already offered, offered again on demand at its own price."""
    row = st.columns([2, 2, 1], vertical_alignment="bottom")
    gpus = list(dict.fromkeys(g.gpu_model for g in day.gpus))
    gpu = row[0].selectbox("Offer on demand too", gpus, key=f"w_day_od_gpu_{gen}")
    price = row[1].number_input(  # starts at the GPU's own price, never at a free $0.00
        "On-demand $ / GPU-hour",
        0.0,
        1000.0,
        round(day.offer(gpu).usd_per_gpu_hour(), 4),
        step=0.1,
        key=f"w_day_od_price_{gen}_{gpu}",
        help="Starts at the price of the GPU's first offer; an on-demand rate is often higher.",
    )
    if row[2].button("Add offer", key=f"w_day_od_add_{gen}"):
        try:
            added = forms.with_offer(day, gpu, price)
        except InputError as error:
            st.error(f"The offer cannot be added: {plain(page_message(error))}")
            return
        _renew_day(added)
        restart(added, made=day)


def _day_limits(base: Scenario, gen: int) -> dict:
    row = st.columns(3)
    return {
        "timezone": row[0].text_input(
            "Timezone of the hours",
            base.timezone,
            key=f"w_day_timezone_{gen}",
            help="An IANA name such as UTC or Europe/Paris.",
        ),
        "budget_usd_per_day": row[1].number_input(
            "Budget ($/day, 0 = none)",
            0.0,
            value=base.budget_usd_per_day or 0.0,
            key=f"w_day_budget_{gen}",
        ),
        "carbon_cap_kg_per_day": row[2].number_input(
            "Carbon cap (kgCO2e/day, 0 = none)",
            0.0,
            value=base.carbon_cap_kg_per_day or 0.0,
            key=f"w_day_carbon_cap_{gen}",
        ),
    }


def show_day(result: Plan, scenario: Scenario) -> None:
    """The day plan: headline (money in the scenario's currency), chart, schedule, hours,
    comparison (nothing for version 1)."""
    day = result.day
    if day is None:
        return
    st.subheader(f"The day (hours 0-23 of {day.timezone})")
    if day.cost_usd is None:
        st.error(f"No day plan: {plain(day.message)}", icon=":material/block:")
    else:
        _day_headline(day, scenario)
        servers = day_tables.servers_through_the_day(day)
        demand, grid = day_tables.demand_through_the_day(day), day_tables.grid_through_the_day(day)
        st.plotly_chart(day_figure(servers, demand, grid), key="chart_day_servers")
        st.caption(
            "Bars: servers per configuration and offer in each hour: reserved and serving "
            "(solid), reserved and idle (pale: paid all the same), on demand (hatched: rented "
            "that hour only). Lines: "
            "each class's demand (a volume class: what the plan serves that hour) and each "
            "site's grid intensity."
        )
    names = ["Schedule", "Hours", "Compared with the peak"]
    if day.attainment:
        names.append("Attainment")
    tabs = st.tabs(names)
    if day.attainment:
        with tabs[3]:
            st.dataframe(
                day_tables.attainment_view(day), hide_index=True, key="table_day_attainment"
            )
            st.caption(
                "The chance each class is served at its targets in each hour, servers up "
                "independently at their offer's availability; spares are added hour by hour "
                "until each target holds (Schedule: Needed (all up) beside Servers). They are "
                "added after the day's program, which does not weigh them: a cheaper plan may "
                "exist."
            )
    with tabs[0]:
        st.dataframe(day_tables.schedule_view(day), hide_index=True, key="table_day_schedule")
    with tabs[1]:
        st.dataframe(day_tables.hours_view(day), hide_index=True, key="table_day_hours")
    with tabs[2]:
        st.dataframe(day_tables.comparison_view(day), hide_index=True, key="table_day_compared")
        saving = day_tables.saving_sentence(day)
        if saving:
            st.markdown(plain(saving))
    st.subheader("The same scenario planned at its peak")
    st.caption(
        "Every class at its peak rate all day, every offer reserved: the plan of version 1, "
        "which the day is compared with."
    )


def _money(value: float | None, fmt: str = "${:,.2f}") -> str:
    return "unknown" if value is None else fmt.format(value)


def _day_headline(day, scenario: Scenario) -> None:
    kpis = st.columns(5)
    kpis[0].metric("Cost per day", money(day.cost_usd, scenario))
    kpis[1].metric("Cost per month (day plan)", money(day.monthly_cost_usd, scenario, "{:,.0f}"))
    kpis[2].metric("kgCO2e per day", _money(day.kgco2e, "{:,.1f}"))
    kpis[3].metric(  # the label says the unit: "$1,537.12/day" was cut at 1440 px
        "Saving a day vs peak",
        money(day.saving_vs_peak_usd, scenario),
        help="The same scenario planned at its peak (every class at its peak all day, every "
        "server paid all day) costs this much more a day.",
    )
    reserved = sum(r.servers for r in day.reserved)
    kpis[4].metric("Reserved servers", str(reserved), help="Paid every hour of the day.")
    note = rate_note(scenario)
    if note:
        st.caption(plain(note))
    if day.status.value != "optimal":
        st.warning(f"Day plan not proven optimal: {plain(day.message)}")


def schedule_download(result: Plan, column) -> None:
    """The day's schedule CSV (`fleetplan plan --schedule-csv` writes the same)."""
    if result.day is None or result.day.cost_usd is None:
        return
    column.download_button(
        "Download schedule (CSV)",
        data=lambda: schedule_csv(result.day),
        file_name="fleetplan-schedule.csv",
        mime="text/csv",
        key="download_schedule_csv",
        icon=":material/download:",
        help="One row per hour x offer x configuration x class (fleetplan plan --schedule-csv).",
        on_click="ignore",
    )
