"""The Plan page's check against traffic: a request log uploaded and replayed through the plan
on screen (`services.replay.replay_for_page`, as `fleetplan simulate --trace`), per class and
hour its P99s against the targets, in a chart and a table."""

from __future__ import annotations

import hashlib

import streamlit as st

from fleetplan.app import data
from fleetplan.app.replay_charts import replay_figure
from fleetplan.core.errors import InputError
from fleetplan.services.plain_text import plain
from fleetplan.services.replay import hours_table

_AS_SPLIT = "as the log splits it"
COLUMNS = {
    "class": "Class",
    "hour": "Hour",
    "requests": "Requests",
    "ttft_p99_ms": "P99 TTFT (ms)",
    "tpot_p99_ms": "P99 TPOT (ms)",
    "goodput": "Goodput",
    "meets": "Meets targets",
    "ttft_target_ms": "TTFT target (ms)",
    "tpot_target_ms": "TPOT target (ms)",
    "busiest_minute": "Busiest minute",
    "headroom": "Holds with",
}
_ITS_TIME = "its time of day"


def show_replay(result, scenario, points) -> None:
    """Nothing for a plan without a fleet."""
    if result is None or result.recommended.totals is None:
        return
    state = st.session_state
    # open while a log is loaded: the page's reruns (a choice, the replay) keep it in view
    opened = state.get("w_trace_file") is not None
    with st.expander("Check the plan against a request log (trace replay)", expanded=opened):
        st.caption(
            "Replays a log (an Azure LLM inference trace, or a CSV of timestamp, input_tokens, "
            "output_tokens and an optional class) through this plan's fleet: each request routed "
            "by the plan's weights, each server simulated by the serving model calibrated on the "
            "warehouse. Per class and hour: the P99s against the targets."
        )
        uploaded = st.file_uploader("Request log (CSV)", type=["csv"], key="w_trace_file")
        left, middle, right, last = st.columns(4)
        class_by = left.selectbox(
            "Classes",
            ["all", "input", "output", "column"],
            key="w_trace_class_by",
            help="split the log as `fleetplan workload` does: one class, by input or output "
            "length, or by its class column",
        )
        names = [c.name for c in scenario.classes]
        only = middle.selectbox("As class", [_AS_SPLIT, *names], key="w_trace_class")
        scale = right.number_input(
            "Rate x", min_value=0.01, max_value=1000.0, value=1.0, step=0.5, key="w_trace_scale"
        )
        start = last.selectbox("Starting at", [_ITS_TIME, *range(24)], key="w_trace_start")
        if uploaded is None:
            return
        raw = uploaded.getvalue()
        key = hashlib.sha256(
            raw + repr((class_by, only, scale, start, result.model_dump_json())).encode()
        ).hexdigest()
        if st.button("Replay", key="w_trace_run", icon=":material/play_arrow:"):
            try:
                state.s_replay = (
                    key,
                    data.replay_for(
                        result,
                        scenario,
                        points,
                        raw,
                        name=uploaded.name,
                        class_by=class_by,
                        only=None if only == _AS_SPLIT else only,
                        start_hour=None if start == _ITS_TIME else int(start),
                        scale=float(scale),
                    ),
                )
            except InputError as error:
                state.s_replay = (key, {"error": str(error)})
        kept = state.get("s_replay")
        if not kept or kept[0] != key:
            return
        _show(kept[1])


def _show(replayed: dict) -> None:
    if "error" in replayed:
        st.error(
            f"This log cannot be replayed: {plain(replayed['error'])}", icon=":material/error:"
        )
        return
    for c in replayed["classes"]:
        if not c["requests"]:
            st.write(f"**{c['name']}**: no requests in the log (not judged).")
            continue
        verdict = "meets its targets" if c["meets"] else "**misses** its targets"
        goodput = "-" if c["goodput"] is None else f"{c['goodput']:.1%}"
        st.write(
            f"**{c['name']}**: {c['requests']:,} requests, P99 TTFT {_ms(c['ttft_p99_ms'])}, "
            f"P99 TPOT {_ms(c['tpot_p99_ms'])}, goodput {goodput}: {verdict}."
        )
    table = hours_table(replayed)
    if table.empty:
        return
    charts = st.columns(2)
    for column, metric in zip(charts, ("ttft", "tpot"), strict=True):
        if table[f"{metric}_p99_ms"].notna().any():
            column.plotly_chart(replay_figure(table, metric), key=f"chart_replay_{metric}")
    st.dataframe(table.rename(columns=COLUMNS), hide_index=True, key="table_replay")
    st.caption(
        f"Seed {replayed['seed']}; {replayed['placed']}. {replayed['method']}. "
        + " ".join(replayed["notes"])
    )


def _ms(value: float | None) -> str:
    return "unbounded" if value is None else f"{value:,.1f} ms"
