"""`make test-fast` leaves out the tests that start a process (tests/support/slow.py): found by
what a test, its module's helpers or its fixtures call, never by its name."""

from __future__ import annotations

import subprocess

from streamlit.testing.v1 import AppTest

from tests.support.paths import MAIN
from tests.support.processes import fleetplan
from tests.support.slow import calls_a_starter, starters


def _runs_the_command():
    return fleetplan("--version")


def _through_a_helper():
    return _runs_the_command()


def _adds():
    return sum(range(3))


def test_a_test_that_starts_a_process_is_found_through_its_helpers():
    known = starters()
    assert calls_a_starter(_runs_the_command, known)
    assert calls_a_starter(_through_a_helper, known)  # two helpers deep
    assert calls_a_starter(lambda: AppTest.from_file(MAIN), known)
    assert calls_a_starter(lambda: subprocess.Popen(["true"]), known)  # a module's attribute
    assert calls_a_starter(lambda: subprocess.run(["true"], check=True), known)


def _imports_apptest_itself():
    from streamlit.testing.v1 import AppTest as Page

    return Page.from_file(MAIN)


def test_a_starter_imported_inside_the_test_is_found():
    assert calls_a_starter(_imports_apptest_itself, starters())


def test_a_test_that_starts_nothing_is_not_slow(request):
    assert not calls_a_starter(_adds, starters())
    assert not calls_a_starter(lambda: subprocess.list2cmdline(["a"]), starters())
    assert request.node.get_closest_marker("slow") is None  # this test starts nothing
