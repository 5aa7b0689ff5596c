"""The cost of planning in a process of its own (the dashboard's `services.plan_runner`) against
planning in the page's own process, on the bundled sample data and example scenario.

Baseline, in the same run: `plan_on_the_page` called directly. Measured: the same call through
`PlanRunner.run` (a process forked from the fork server, the inputs and the plan pickled across).
The first call through the runner starts the fork server (imports included) and is shown apart.
Aim: the dashboard's re-plan stays fast (under 300 ms, benchmarks/app.py).

    python benchmarks/plan_process.py --repeat 10
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fleetplan.services.plan_runner import PlanRunner  # noqa: E402
from fleetplan.services.planning import load_scenario, plan_on_the_page  # noqa: E402
from fleetplan.warehouse.db import Warehouse  # noqa: E402
from fleetplan.warehouse.queries import benchmark_points, gpu_catalog  # noqa: E402
from fleetplan.warehouse.sample_data import build  # noqa: E402

SCENARIO = ROOT / "examples" / "chat-batch-qwen14b.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fleetplan-runner-bench-"))
    try:
        with Warehouse.open(work / "sample.duckdb") as warehouse:
            list(build(warehouse))
            points, catalog = benchmark_points(warehouse), gpu_catalog(warehouse)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    scenario = load_scenario(SCENARIO)
    runner = PlanRunner(slots=1)

    def here() -> object:
        return plan_on_the_page(scenario, points, catalog)

    def there() -> object:
        return runner.run("bench", plan_on_the_page, scenario, points, catalog)

    started = time.perf_counter()
    there()
    cold = time.perf_counter() - started
    here()  # warm the in-process caches alike
    inside, outside = [], []
    for _ in range(args.repeat):  # alternating, so that load on the machine falls on both
        for times, call in ((inside, here), (outside, there)):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
    base, ours = statistics.median(inside), statistics.median(outside)
    print(f"{len(points)} points, {SCENARIO.name}, median of {args.repeat}")
    print(f"first plan through the runner (fork server start): {cold * 1000:8.1f} ms")
    print(f"plan in the page's process:                        {base * 1000:8.1f} ms")
    print(f"plan in a process of its own:                      {ours * 1000:8.1f} ms")
    print(f"overhead: {(ours - base) * 1000:+.1f} ms, ratio {ours / base:.2f}x")


if __name__ == "__main__":
    main()
