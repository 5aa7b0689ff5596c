"""What the Benchmarks page shares with the Plan page's scenario: its "Latency vs load" targets
start from the plan's (its first class with a TTFT target) and its "Cost vs latency" prices from
the plan's GPU offers; a change there is carried back into the plan's scenario (`s_current`),
which the Plan page's widgets restart from when it is shown again (`app/plan_state.py`)."""

from __future__ import annotations

import streamlit as st

from fleetplan.planner.scenario.scenario import Scenario


def _scenario() -> Scenario | None:
    return st.session_state.get("s_current")


def plan_targets(default_ttft: float, default_tpot: float) -> tuple[float, float, str | None]:
    """(P99 TTFT target, P99 TPOT target or 0, the class they are from) of the plan's first
    class with a TTFT target; the defaults (and None) without a plan or such a class."""
    scenario = _scenario()
    for traffic in scenario.classes if scenario is not None else ():
        if traffic.ttft_p99_ms is not None:
            return float(traffic.ttft_p99_ms), float(traffic.tpot_p99_ms or 0.0), traffic.name
    return default_ttft, default_tpot, None


def plan_price(gpu_model: str) -> float | None:
    """The plan's price per GPU-hour for a GPU it offers (its first offer), else None."""
    scenario = _scenario()
    for offer in scenario.gpus if scenario is not None else ():
        if offer.gpu_model == gpu_model:
            return offer.usd_per_gpu_hour()
    return None


def carry_targets(
    class_name: str | None, target_ttft_p99_ms: float, target_tpot_p99_ms: float
) -> None:
    """The targets set on the Benchmarks page (P99 TTFT, P99 TPOT or 0 for none) into the
    plan's class they came from."""
    scenario = _scenario()
    if scenario is None or class_name is None:
        return
    classes = [
        c.model_copy(
            update={"ttft_p99_ms": target_ttft_p99_ms, "tpot_p99_ms": target_tpot_p99_ms or None}
        )
        if c.name == class_name
        else c
        for c in scenario.classes
    ]
    _keep(scenario.model_copy(update={"classes": classes}), scenario)


def carry_price(gpu_model: str, usd_per_gpu_hour: float) -> None:
    """A price set on the Benchmarks page into the plan's rented offers of that GPU."""
    scenario = _scenario()
    if scenario is None:
        return
    gpus = [
        g.model_copy(update={"hourly_usd": usd_per_gpu_hour})
        if g.gpu_model == gpu_model and g.hourly_usd is not None
        else g
        for g in scenario.gpus
    ]
    _keep(scenario.model_copy(update={"gpus": gpus}), scenario)


def _keep(changed: Scenario, before: Scenario) -> None:
    if changed != before:
        validated = Scenario.model_validate(changed.model_dump())
        st.session_state.s_current = st.session_state.s_base = validated
