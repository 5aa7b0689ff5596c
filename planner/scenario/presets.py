"""Workload presets: starting points for a scenario's traffic classes, to edit to your targets.

Interactive classes carry a TPOT target as well as a TTFT target: an overloaded vLLM server keeps
TTFT low and lets TPOT grow, so a TTFT target alone would pass a server that streams too slowly.
The targets are common service-level choices, not measurements; the rates are examples.
"""

from __future__ import annotations

from fleetplan.planner.scenario.scenario import TrafficClass

PRESETS: dict[str, tuple[TrafficClass, ...]] = {
    "chatbot + batch eval": (
        TrafficClass(name="chat", rate_rps=8.0, ttft_p99_ms=500.0, tpot_p99_ms=100.0),
        TrafficClass(name="batch eval", rate_rps=16.0),
    ),
    "realtime agents + dev/test": (
        TrafficClass(name="agents", rate_rps=4.0, ttft_p99_ms=200.0, tpot_p99_ms=50.0),
        TrafficClass(name="dev/test", rate_rps=2.0, ttft_p99_ms=2000.0, tpot_p99_ms=200.0),
    ),
    "embeddings backfill": (TrafficClass(name="backfill", rate_rps=30.0),),
    "batch only": (TrafficClass(name="batch", rate_rps=20.0),),
}
