"""The solver kernel (planner/solve/kernel.py): one HiGHS call, one tie-break, one status map
for the peak, day and availability programs; and its recipe for a new constraint family, done
here for a power cap (kW) without touching the kernel."""

from __future__ import annotations

import ast
import itertools

import numpy as np
import pytest
from scipy.optimize import OptimizeResult

from fleetplan.planner.availability.program import ClassNeed, solve_available
from fleetplan.planner.capacity.configuration import Capacity, Configuration, Level
from fleetplan.planner.peak.economics import EnergyBasis, PoolEconomics
from fleetplan.planner.peak.program import Limits, Weights, peak_limit_rows, peak_program, solve
from fleetplan.planner.peak.results import PlanStatus
from fleetplan.planner.solve import kernel
from fleetplan.planner.solve.kernel import LimitRow, SolveStatus
from fleetplan.planner.solve.rows import Rows
from tests.support.paths import ROOT


def pool(gpu_model, gpus, capacity_rps, usd, kw, offer=None, traffic="chat") -> PoolEconomics:
    level = Level("r", capacity_rps, None, capacity_rps, 10.0, 5.0, 100.0, 100.0, None, "f.json")
    capacity = Capacity(traffic, Configuration(gpu_model, gpus), capacity_rps, level)
    return PoolEconomics(
        capacity, gpus, usd, 0.0, kw, 0.0, None, None, None, EnergyBasis.MODELLED, offer=offer
    )


# Three 4090 servers carry 6 req/s for $1.50/h at 1.35 kW; one H100 server for $2.50/h at 0.7 kW.
POOLS = [pool("rtx-4090", 1, 2.0, 0.5, 0.45), pool("h100-pcie", 1, 6.0, 2.5, 0.7)]
DEMAND = {"chat": 6.0}


def power_cap_rows(pools, cap_kw: float) -> Rows:
    """The recipe's step 2 for a power cap: one LimitRow over the peak program's columns
    (servers y per pool, then rates x per pool), from the pools' kW coefficients."""
    count = len(pools)
    entries = [(i, p.kw_per_server) for i, p in enumerate(pools)]
    entries += [(count + i, p.kw_per_rps) for i, p in enumerate(pools)]
    rows = Rows(2 * count)
    kernel.add_limit_rows(rows, [LimitRow("power cap", tuple(entries), cap_kw)])
    return rows


def cheapest_under(pools, demand, cap_kw: float) -> tuple[int, ...]:
    """An exhaustive search: the cheapest servers per pool whose capacity covers the demand
    within the cap."""
    best = None
    for combo in itertools.product(range(4), repeat=len(pools)):
        carried = sum(y * p.capacity.capacity_rps for y, p in zip(combo, pools, strict=True))
        power = sum(y * p.kw_per_server for y, p in zip(combo, pools, strict=True))
        cost = sum(y * p.usd_per_server_hour for y, p in zip(combo, pools, strict=True))
        if carried >= demand - 1e-9 and power <= cap_kw + 1e-9 and (best is None or cost < best[0]):
            best = (cost, combo)
    assert best is not None
    return best[1]


def test_a_power_cap_is_one_more_row_family_and_the_answer_meets_it():
    base = peak_program(POOLS, DEMAND, weights=Weights(), limits=Limits())
    free = kernel.outcome(kernel.solve(base, 10.0), 10.0, infeasible="")
    assert free.status is SolveStatus.OPTIMAL
    assert [round(v) for v in free.x[:2]] == [3, 0]  # three 4090s: cheaper, 1.35 kW
    capped = base.with_rows(power_cap_rows(POOLS, 1.0))
    out = kernel.outcome(kernel.solve(capped, 10.0), 10.0, infeasible="over the power cap")
    assert out.status is SolveStatus.OPTIMAL
    servers = tuple(round(v) for v in out.x[:2])
    assert servers == cheapest_under(POOLS, 6.0, 1.0) == (0, 1)
    power = sum(
        y * p.kw_per_server + x * p.kw_per_rps
        for y, x, p in zip(servers, out.x[2:], POOLS, strict=True)
    )
    assert power <= 1.0
    # under a cap no fleet meets, the program says so in the family's words
    none = kernel.outcome(
        kernel.solve(base.with_rows(power_cap_rows(POOLS, 0.5)), 10.0),
        10.0,
        infeasible="over the power cap",
    )
    assert (none.status, none.message) == (SolveStatus.INFEASIBLE, "over the power cap")


def test_the_tie_break_takes_the_fewest_gpus_among_equal_optima():
    # two 1-GPU servers or one 4-GPU server: $2/h either way
    pools = [pool("rtx-4090", 1, 1.0, 1.0, 0.4), pool("rtx-4090", 4, 2.0, 2.0, 1.6)]
    solution = solve(pools, {"chat": 2.0})
    assert solution.status is SolveStatus.OPTIMAL and solution.servers == (2, 0)
    base = peak_program(pools, {"chat": 2.0}, weights=Weights(), limits=Limits())
    first = kernel.run(base, 10.0)
    fewest = kernel.tie_break(base, first, 10.0)
    assert float(base.objective @ fewest.x) == pytest.approx(float(first.fun))
    assert float(base.fewest @ fewest.x) == 2.0


@pytest.mark.parametrize(
    ("status", "x", "expected", "says"),
    [
        (0, [1.0], SolveStatus.OPTIMAL, "optimal"),
        (1, None, SolveStatus.TIME_LIMIT, "no plan found within the time limit of 3 s"),
        (1, [1.0], SolveStatus.TIME_LIMIT, "stopped at the time limit of 3 s"),
        (2, None, SolveStatus.INFEASIBLE, "nothing fits"),
        (4, None, SolveStatus.ERROR, "the solver stopped: HiGHS said no"),
        (4, [1.0], SolveStatus.ERROR, "the solver stopped: HiGHS said no"),
    ],
)
def test_one_status_map_for_every_program(status, x, expected, says):
    result = OptimizeResult(
        status=status,
        x=None if x is None else np.array(x),
        fun=1.0,
        message="HiGHS said no",
        mip_gap=np.inf,
    )
    out = kernel.outcome(result, 3.0, infeasible="nothing fits")
    assert out.status is expected and out.message.startswith(says)
    assert PlanStatus(out.status) == out.status.value  # every solver status is a plan status


def test_a_limit_on_a_named_offer_binds_in_the_availability_program():
    """The availability program's limits are the peak program's rows (GPUs per offer): a limit
    on the offer 'h100 hourly' binds its pools, whatever their GPU model is called (it keyed
    them by GPU model before, so a named offer's limit was never applied)."""
    pools = [
        pool("h100-pcie", 1, 6.0, 2.0, 0.7, offer="h100 hourly"),
        pool("h100-pcie", 1, 6.0, 3.0, 0.7, offer="h100 reserved"),
    ]
    needs = {"chat": ClassNeed(6.0)}
    free = solve_available(pools, [1.0, 1.0], needs, weights=Weights(), limits=Limits())
    assert free.servers == (1, 0)
    limited = Limits(max_gpus={"h100 hourly": 0})
    assert {row.name for row in peak_limit_rows(pools, limited)} == {"max_gpus of h100 hourly"}
    held = solve_available(pools, [1.0, 1.0], needs, weights=Weights(), limits=limited)
    assert held.status is SolveStatus.OPTIMAL and held.servers == (0, 1)


@pytest.mark.slow  # 0.5 s or more here (tests/support/slow.py)
def test_the_highs_call_tie_break_and_status_map_exist_once():
    """Only the kernel calls scipy's milp, sets its gap, writes the tie-break's slack and
    reads scipy's status codes into a status."""
    calls = []
    for path in sorted((ROOT / "planner").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.module == "scipy.optimize":
                calls += [f"{path.name} imports milp" for a in node.names if a.name == "milp"]
        calls += [f"{path.name}: {word}" for word in ("mip_rel_gap", "1e-7 * abs") if word in text]
    kernel_only = {"kernel.py imports milp", "kernel.py: mip_rel_gap", "kernel.py: 1e-7 * abs"}
    assert set(calls) == kernel_only, calls


def _covering() -> kernel.Program:
    """min x + y with 2x + 3y >= 7.5 over integers 0..10: the optimum is 3 (x=0,y=3 or 1,2)."""
    from scipy.optimize import Bounds, LinearConstraint

    return kernel.Program(
        objective=np.array([1.0, 1.0]),
        constraints=[LinearConstraint(np.array([[2.0, 3.0]]), 7.5, np.inf)],
        integrality=np.ones(2),
        bounds=Bounds(np.zeros(2), np.full(2, 10.0)),
    )


@pytest.mark.parametrize("proof", [False, True])
@pytest.mark.parametrize(("cutoff", "expected"), [(2.5, False), (2.999, False), (3.5, True)])
def test_a_cutoff_run_says_whether_anything_beats_it(cutoff, expected, proof):
    """`run(cutoff=)` prunes what cannot beat the cutoff; `improves` reads the answer: nothing
    below 3 exists (whatever HiGHS reports, infeasible or an answer not below), 3 is below 3.5.
    A proof (its heuristics off) still finds the better answer where there is one."""
    result = kernel.run(_covering(), 10.0, cutoff=cutoff, proof=proof)
    assert kernel.improves(result, cutoff) is expected
    if expected:
        assert result.fun == pytest.approx(3.0)


def test_reduced_cost_fixing_keeps_every_plan_under_the_ceiling():
    """`relaxation.fixed`: every integer point of objective at most the ceiling lies within the
    tightened bounds (exhaustively, on a small program), and the bounds do tighten."""
    from scipy.optimize import Bounds, LinearConstraint

    from fleetplan.planner.day.relaxation import fixed, relax

    cost = np.array([1.0, 1.6, 2.9, 4.1])
    rows = [LinearConstraint(np.array([[1.0, 2.0, 3.5, 5.0]]), 9.0, np.inf)]
    bounds = Bounds(np.zeros(4), np.full(4, 6.0))
    relaxed = relax(cost, rows, bounds)
    assert relaxed is not None and relaxed.status == 0
    for ceiling in (relaxed.fun + 0.5, relaxed.fun + 2.0, relaxed.fun + 5.0):
        tight = fixed(np.ones(4), relaxed, ceiling, bounds)
        assert (tight.ub <= bounds.ub).all()
        inside = 0
        for point in itertools.product(range(7), repeat=4):
            v = np.array(point, dtype=float)
            if v @ rows[0].A[0] >= 9.0 and cost @ v <= ceiling:
                inside += 1
                assert (v <= tight.ub).all(), (ceiling, point, tight.ub)
        assert inside > 0
    assert (fixed(np.ones(4), relaxed, relaxed.fun + 0.5, bounds).ub < bounds.ub).any()


STRAY_SCRIPT = """
import os, sys
from fleetplan.planner.solve import kernel
print("before", flush=True)
with kernel.without_stray_lines():
    os.write(1, kernel.STRAY_LINE + b"kept 1\\n")
    with kernel.without_stray_lines():
        os.write(1, b"kept 2\\n" + kernel.STRAY_LINE)
    print("kept 3", flush=True)
    sys.stdout.write("kept 4\\n")
print("after", flush=True)
"""


def test_the_stray_highs_line_never_reaches_standard_output():
    """HiGHS 1.12 prints a debug line on descriptor 1 whatever its options: `run` solves inside
    `without_stray_lines`, which passes on everything else written meanwhile, in order, also
    from solves that overlap (nested here). A process of its own: its real standard output."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", STRAY_SCRIPT], capture_output=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == "before\nkept 1\nkept 2\nkept 3\nkept 4\nafter\n"
    tree = ast.parse((ROOT / "planner/solve/kernel.py").read_text())
    run = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "run")
    assert "without_stray_lines()" in ast.unparse(run)  # every HiGHS call passes through it
