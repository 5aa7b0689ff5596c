"""benchmarks/fuzz.py --surface (issue 35): a few derandomised cases of each surface, mutated
scenarios, request logs and hostile names in exported files, end in a refusal or in results that
hold together; nothing else (the benchmark runs hundreds)."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from benchmarks import fuzz_surfaces as fuzz

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tables():
    return fuzz._tables()


def test_mutated_request_logs_are_read_or_refused():
    bugs, wrong = Counter(), Counter()
    rng = random.Random(5)
    seeds = fuzz._trace_seeds(random.Random(5))
    cases = [(name, fuzz.mutate_trace(data, rng)) for name, data in seeds * 20]
    _, refused, read = fuzz.run_traces(cases, bugs, wrong)
    assert not bugs and not wrong, (bugs, wrong)
    assert refused and read  # both kinds of case were drawn


def test_mutated_scenarios_are_planned_or_refused(tables):
    bugs, wrong = Counter(), Counter()
    _, mutated = fuzz.scenario_cases(16, random.Random(5))
    fuzz.run_scenarios(mutated, tables, bugs, wrong)
    assert not bugs and not wrong, (bugs, wrong)


def test_hostile_names_give_files_that_mean_what_they_say(tables):
    bugs, wrong = Counter(), Counter()
    _, named = fuzz.export_cases(8, random.Random(5))
    _, _, written = fuzz.run_exports(named, tables, bugs, wrong)
    assert not bugs and not wrong, (bugs, wrong)
    assert written
