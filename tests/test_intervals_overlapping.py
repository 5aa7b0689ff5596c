"""`planner.capacity.intervals.overlapping` compares class by class, as arrays (a 50 x 100 plan
spent most of its time comparing 5,000^2 pairs): it must find exactly the pairs the definition
names, in the same order, on random capacities of several classes."""

from __future__ import annotations

import random

from fleetplan.planner.capacity.configuration import Capacity, Configuration
from fleetplan.planner.capacity.intervals import EPS, is_wide, overlapping


def _pairwise(capacities):
    found = {}
    for i, a in enumerate(capacities):
        for j, b in enumerate(capacities):
            if i == j or a.traffic_class != b.traffic_class or a.high <= 0 or b.high <= 0:
                continue
            if not (is_wide(a) or is_wide(b)):
                continue
            if max(a.low, b.low) <= min(a.high, b.high) + EPS:
                found.setdefault(i, []).append(j)
    return found


def _capacity(rng: random.Random, k: int) -> Capacity:
    low = rng.choice([0.0, 1.0, 2.0, rng.uniform(0, 10)])
    high = low + rng.choice([0.0, 0.0, rng.uniform(0, 5)])
    single = rng.random() < 0.3
    return Capacity(
        traffic_class=rng.choice("abc"),
        configuration=Configuration(f"gpu-{k}", rng.choice([1, 2])),
        capacity_rps=low,
        level=None,
        rps_low=None if single else low,
        rps_high=None if single else high,
    )


def test_overlapping_finds_the_pairs_the_definition_names_in_order():
    rng = random.Random(19)
    for trial in range(200):
        capacities = [_capacity(rng, k) for k in range(rng.randint(0, 14))]
        expected = _pairwise(capacities)
        got = overlapping(capacities)
        assert got == expected, trial
        assert list(got) == list(expected), trial  # the same order of configurations
