from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from fleetplan.core.contract import EnergyMethod, Point, Run, validation_message

POINT = {"offered_rate_rps": 4.0, "completed": 10, "duration_s": 2.5}
RUN = {"tool": "t", "model": "m", "gpu_model": "rtx-4090", "gpu_count": 2, "points": [POINT]}


def test_inf_rate_round_trips_through_json():
    point = Point.model_validate_json(
        '{"offered_rate_rps": "inf", "completed": 1, "duration_s": 1}'
    )
    assert math.isinf(point.offered_rate_rps)
    assert '"offered_rate_rps":"inf"' in point.model_dump_json()
    assert Point.model_validate_json(point.model_dump_json()) == point


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"duration_s": 0}, "duration_s"),
        ({"duration_s": "2.5"}, "duration_s"),
        ({"completed": -1}, "completed"),
        ({"offered_rate_rps": -1}, "offered_rate_rps"),
        ({"offered_rate_rps": float("nan")}, "offered_rate_rps"),
        ({"ttft_p99_ms": float("nan")}, "ttft_p99_ms"),
        ({"ttft_p99_ms": float("inf")}, "ttft_p99_ms"),
        ({"unknown_key": 1}, "unknown_key"),
    ],
)
def test_point_rejects_bad_values_naming_the_field(change, field):
    with pytest.raises(ValidationError) as caught:
        Point.model_validate({**POINT, **change})
    assert validation_message(caught.value, file="f.json").field == field


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"offered_rate_rps": None}, "offered load"),
        ({"requests_sent": 5, "failed": 1}, "exceeds requests_sent"),
        ({"gpu_energy_j": 10.0}, "energy_method is 'none'"),
        ({"energy_method": "nvml_counter"}, "gpu_energy_j is null"),
        ({"ttft_p50_ms": 10.0, "ttft_p99_ms": 5.0}, "not increasing"),
    ],
)
def test_point_cross_field_rules(change, message):
    with pytest.raises(ValidationError, match=message):
        Point.model_validate({**POINT, **change})


def test_energy_is_null_unless_measured():
    point = Point.model_validate(POINT)
    assert point.energy_method is EnergyMethod.NONE and point.gpu_energy_j is None
    measured = Point.model_validate(
        {**POINT, "gpu_energy_j": 900.0, "energy_method": "nvml_counter"}
    )
    assert measured.gpu_energy_j == 900.0


def test_run_requires_canonical_gpu_ids_and_sane_parallelism():
    assert Run.model_validate(RUN).gpu_known
    with pytest.raises(ValidationError, match="use 'rtx-4090'"):
        Run.model_validate({**RUN, "gpu_model": "NVIDIA GeForce RTX 4090"})
    with pytest.raises(ValidationError, match="exceeds gpu_count"):
        Run.model_validate({**RUN, "tensor_parallel_size": 4})
    unknown = Run.model_validate({**RUN, "gpu_model": "Mystery Accelerator"})
    assert not unknown.gpu_known
    with pytest.raises(ValidationError):
        Run.model_validate({**RUN, "points": []})


def test_a_rate_too_large_for_a_float_is_refused_not_an_overflow():
    """Found by the fuzzer on a clone without ../shared: an offered rate of 10**400 in a run
    file raised OverflowError from math.isnan; it is refused, naming the rate."""
    import json

    import pytest

    from benchmarks.inputs.fuzzing import seed_files
    from fleetplan.core.errors import FleetplanError
    from fleetplan.warehouse.importers.base import FileInput, ImportOptions
    from fleetplan.warehouse.importers.registry import parse

    name, data = seed_files()["fleetplan-run"]  # the fuzzer's seed: a real run file
    raw = json.loads(data)
    raw["runs"][0]["points"][0]["offered_rate_rps"] = 10**400
    huge = json.dumps(raw).encode()
    with pytest.raises(FleetplanError, match="implausibly large"):
        parse(FileInput.from_bytes(name, huge), ImportOptions(gpu="rtx-4090", gpu_count=1))
