"""Ctrl-C outside a level's requests (in the warm-up, or between two levels) stops the
collection and keeps what was measured, as Ctrl-C during a level always did: a Ray campaign's
host is interrupted at any moment, and the levels it measured before must land."""

from __future__ import annotations

import pytest

from fleetplan.collectors.events import LevelEvents, observing
from fleetplan.collectors.options import CollectOptions
from fleetplan.collectors.run import execute, exit_code
from fleetplan.core.contract import RunFile
from fleetplan.core.exits import EXIT_INTERRUPTED


def options(url: str) -> CollectOptions:
    return CollectOptions.from_mapping(
        {
            "backend": "openai",
            "base_url": url,
            "model": "stream-test",
            "gpu": "rtx-4090",
            "input_len": 8,
            "output_len": 4,
            "rates": [20, 40, 80],
            "num_requests": 10,
            "warmup": 2,
            "telemetry": False,
        }
    )


@pytest.mark.timeout(120)
def test_ctrl_c_between_two_levels_keeps_the_levels_measured(stream_server, tmp_path):
    def ctrl_c_before_the_second_level(shape: str, level: int, levels: int) -> None:
        if level == 1:
            raise KeyboardInterrupt  # what Ctrl-C raises outside the level's event loop

    with observing(LevelEvents(on_level=ctrl_c_before_the_second_level)):
        result = execute(options(stream_server(ttft_ms=5, tpot_ms=1)), tmp_path)
    assert exit_code(result) == EXIT_INTERRUPTED
    assert any("interrupted after 1 level(s)" in p for p in result.problems), result.problems
    (run,) = RunFile.model_validate_json(result.path.read_text()).runs
    assert [p.offered_rate_rps for p in run.points] == [20.0]  # the first level, kept
    assert run.points[0].completed == 10
