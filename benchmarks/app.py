"""Dashboard speed, server side, through Streamlit's AppTest on the bundled sample data.

- Cold first render of each page: caches cleared, a new session, one run of the page.
- Re-plan latency: on the Plan page, a changed input (the utilisation ceiling, a new value each
  time, so no cached plan helps) and the rerun that recomputes and redraws the plan.
- The same re-plan with the "Cost vs carbon" tab open: the frontier planned too (the page plans
  it only while that tab is open).
- The same re-plan for a day (`examples/day-chat-nightly.json`, version 2, opened from its link):
  the day's 24-hour program, its peak plan and the comparisons (issue 22: aim under one second).
Baseline, measured in the same run: a one-line Streamlit script (`st.write`) in a new session.
Aim: re-plan under 300 ms.

    python benchmarks/app.py
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402
from streamlit.testing.v1 import AppTest  # noqa: E402

from fleetplan.app.plan_results import TAB_KEY  # noqa: E402
from fleetplan.app.views import PAGE_PATHS  # noqa: E402
from fleetplan.services.planning import load_scenario  # noqa: E402
from fleetplan.services.scenario_link import scenario_to_link  # noqa: E402
from fleetplan.warehouse.db import ENV_VAR, Warehouse  # noqa: E402
from fleetplan.warehouse.sample_data import build  # noqa: E402

PAGES = PAGE_PATHS
TRIVIAL = "import streamlit as st\nst.write('hello')\n"


def clear() -> None:
    st.cache_data.clear()
    st.cache_resource.clear()


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="fleetplan-app-bench-"))
    path = work / "sample.duckdb"
    with Warehouse.open(path) as warehouse:
        list(build(warehouse))
    os.environ[ENV_VAR] = str(path)
    main_script = str(ROOT / "app" / "main.py")

    baseline = []
    for _ in range(5):
        baseline.append(timed(lambda: AppTest.from_string(TRIVIAL).run()))
    base = statistics.median(baseline)
    print(f"baseline (one-line script, new session): {base * 1000:7.1f} ms")

    for page in PAGES:
        runs = []
        for _ in range(3):
            clear()
            at = AppTest.from_file(main_script, default_timeout=120)
            if page == PAGES[0]:
                runs.append(timed(at.run))
            else:
                at.run()
                clear()
                runs.append(timed(lambda at=at, page=page: at.switch_page(page).run()))
            assert not at.exception, at.exception
        cold = min(runs)
        print(f"cold render {page:<22} {cold * 1000:7.1f} ms  ({cold / base:5.1f}x baseline)")

    day = scenario_to_link(load_scenario(ROOT / "examples" / "day-chat-nightly.json"))
    for name, link, tab, aim in (
        ("", None, None, "300 ms"),
        ("the frontier's tab open: ", None, "Cost vs carbon", "300 ms"),
        ("a day: ", day, None, "1 s"),
    ):
        clear()
        at = AppTest.from_file(main_script, default_timeout=120)
        if link is not None:
            at.query_params["s"] = link
        if tab is not None:  # only the open tab is drawn (app/plan_results.py)
            at.session_state[TAB_KEY] = tab
        at.run()
        assert not at.exception, at.exception
        replans = []
        for value in (0.55, 0.6, 0.65, 0.7, 0.75, 0.85, 0.9, 0.95):
            slider = at.slider(key=f"w_headroom_{at.session_state['s_gens']['top']}")
            replans.append(timed(lambda slider=slider, value=value: slider.set_value(value).run()))
            assert not at.exception, at.exception
        cached = [timed(at.run) for _ in range(5)]
        median = statistics.median(replans)
        print(
            f"{name}re-plan after an input change: median {median * 1000:6.1f} ms, max "
            f"{max(replans) * 1000:6.1f} ms ({median / base:4.1f}x baseline; aim < {aim})"
        )
        print(
            f"{name}rerun with unchanged inputs (cached plan): median "
            f"{statistics.median(cached) * 1000:6.1f} ms"
        )


if __name__ == "__main__":
    main()
