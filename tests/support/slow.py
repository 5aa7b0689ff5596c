"""Which tests are slow, so that `make test-fast` (`pytest -m 'not slow'`) leaves them out.

Marked by hand: the engine, browser and Ray tests, the modules whose every test runs the
dashboard in AppTest or starts a hostile server, and the few tests that spend seconds solving or
simulating in this process (a trace replayed through two fleets, spares at an extreme
availability, 13 fill plans), each with its reason beside the mark, and every other test that
took 0.5 s or more on the 2-core reference machine (`pytest -n 2 -m 'not slow' --durations=0`,
2026-12-07: 94 tests, 60 % of the fast loop's time; their mark says "0.5 s or more here"), but
not one whose time is spread over many cheap parameters (the docs test's 253 cases).
Marked here, at collection (`conftest.pytest_collection_modifyitems`): every other test that
starts a process of its own, which costs seconds each (an interpreter importing pandas, DuckDB
and scipy, or a Streamlit run):

- through a fixture that starts one (`PROCESS_FIXTURES`, or a fixture that calls a starter);
- by calling a starter (`starters()`: the `fleetplan` command, AppTest, a served dashboard,
  another process holding a warehouse, `subprocess.Popen` or `subprocess.run`), itself or
  through a helper function of its module that it calls.

`pytest -m slow --collect-only -q` lists them; `make test` runs them all.
"""

from __future__ import annotations

import inspect
import subprocess
import types
from collections.abc import Iterable

import pytest

# Fixtures that start a process: a test server, the dashboard, a browser, a Ray cluster.
PROCESS_FIXTURES = frozenset(
    {"stream_server", "dashboard_url", "shared_dashboard_url", "browser_page", "ray_cluster"}
)

# Modules that run alone, after the parallel part (`make test`: `pytest -n auto -m "not serial"`,
# then `pytest -m serial`): the vLLM engine on CPU, whose API server, starved of CPU by a
# neighbour, merges a stream's tokens into one chunk (a stream that looks buffered: the level is
# rightly refused). The clients' timings against the test servers (test_collect_stream,
# test_collect_search) hold beside a neighbour and run in the parallel part.
SERIAL_MODULES = frozenset({"test_collect_engines"})

# Modules run on one xdist worker (`--dist loadgroup`): the Ray modules, each with a cluster of
# its own, never two clusters at once; each browser module with one Chromium, not one a worker.
GROUPS = {"test_ray_campaign": "ray", "test_ray_hardening": "ray"} | {
    name: name
    for name in (
        "test_browser",
        "test_browser_benchmarks",
        "test_browser_hardening",
        "test_browser_plan_day",
        "test_browser_replay",
        "test_browser_plan_results",
        "test_browser_state",
        "test_browser_upload",
    )
}


def starters() -> tuple[object, ...]:
    """What starts a process when a test calls it."""
    from streamlit.testing.v1 import AppTest

    from tests.support import processes

    return (
        processes.fleetplan,
        processes.served_dashboard,
        processes.held_by_another_process,
        processes.local_servers,
        AppTest,
        AppTest.from_file,
        subprocess.Popen,
        subprocess.run,
    )


def _codes(code: types.CodeType) -> Iterable[types.CodeType]:
    """A function's code and the code of the functions and lambdas inside it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _imports(code: types.CodeType, starter: object) -> bool:
    """Whether `code` imports `starter` by name from its module or a package above it (`from
    streamlit.testing.v1 import AppTest`)."""
    module = getattr(starter, "__module__", None)
    name = getattr(starter, "__qualname__", "").split(".")[0]
    if not module or name not in code.co_names:
        return False
    return any(module == n or module.startswith(f"{n}.") for n in code.co_names)


def calls_a_starter(function: object, known: tuple[object, ...]) -> bool:
    """Whether `function`, or a function of its module that it names (followed to any depth),
    names one of `known` (by identity) among its globals, or as an attribute of a module."""
    seen: set[types.CodeType] = set()
    todo = [function]
    while todo:
        func = inspect.unwrap(todo.pop())
        code = getattr(func, "__code__", None)
        if code is None or code in seen:
            continue
        seen.add(code)
        for part in _codes(code):
            if any(_imports(part, starter) for starter in known):
                return True  # imported inside the function: a local name, not a global
            for name in part.co_names:
                value = func.__globals__.get(name)
                if isinstance(value, types.ModuleType):
                    found = [getattr(value, attr, None) for attr in part.co_names]
                else:
                    found = [value]
                if any(v is starter for v in found for starter in known):
                    return True
                if isinstance(value, types.FunctionType) and value.__module__ == func.__module__:
                    todo.append(value)
    return False


def mark_process_tests(items: list[pytest.Item]) -> None:
    """Mark `slow` each test that starts a process (see the module's docstring), `serial` (and
    `slow`) each test of the `SERIAL_MODULES`, and the `GROUPS`' tests with their xdist group."""
    known = starters()
    for item in items:
        module = item.module.__name__.rsplit(".", 1)[-1] if item.module is not None else ""
        if module in SERIAL_MODULES:
            item.add_marker(pytest.mark.serial)
            item.add_marker(pytest.mark.slow)
        if module in GROUPS:
            item.add_marker(pytest.mark.xdist_group(GROUPS[module]))
        if item.get_closest_marker("slow") or not isinstance(item, pytest.Function):
            continue
        fixtures = item._fixtureinfo.name2fixturedefs  # the fixtures it uses, with theirs
        started = bool(PROCESS_FIXTURES & set(item.fixturenames))
        started = started or calls_a_starter(item.function, known)
        started = started or any(calls_a_starter(d[-1].func, known) for d in fixtures.values())
        if started:
            item.add_marker(pytest.mark.slow)
