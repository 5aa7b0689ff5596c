"""Choosing a scenario's points by model name (`points_for_model`: full id or the name after
the '/', any case; a name that fits several models is refused) and the notes on what to measure
(`measure_notes`: each class none of whose traffic was measured, one note each, the model's
points chosen once)."""

from __future__ import annotations

import pandas as pd
import pytest

from fleetplan.core.errors import InputError
from fleetplan.planner.capacity.measure_hint import measure_notes
from fleetplan.planner.capacity.rules import points_for_model
from fleetplan.planner.scenario.scenario import Scenario


def table(models: list[object]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": models,
            "gpu_model": "rtx-4090",
            "gpu_count": 1,
            "dataset": None,
            "input_len": 512,
            "output_len": 128,
        }
    )


def test_a_model_is_chosen_by_its_full_id_or_its_short_name_in_any_case():
    points = table(["Qwen/Qwen2.5-7B", "meta/Llama-3.1-8B", "Qwen/Qwen2.5-7B", None])
    for name in ("Qwen/Qwen2.5-7B", "qwen2.5-7b", "QWEN/QWEN2.5-7B"):
        chosen = points_for_model(points, name)
        assert list(chosen.index) == [0, 2], name
    assert list(points_for_model(points, "Llama-3.1-8B").index) == [1]
    assert points_for_model(points, "Qwen2.5").empty  # a name is whole, not a prefix


def test_a_short_name_of_two_models_is_refused_naming_both():
    points = table(["a/Llama-3.1-8B", "b/Llama-3.1-8B"])
    with pytest.raises(InputError, match="matches several models") as refused:
        points_for_model(points, "Llama-3.1-8B")
    assert "a/Llama-3.1-8B, b/Llama-3.1-8B" in str(refused.value)
    assert list(points_for_model(points, "b/llama-3.1-8b").index) == [1]


def test_each_unmeasured_class_gets_its_note_and_a_measured_one_none():
    scenario = Scenario.model_validate(
        {
            "model": "Qwen/Qwen2.5-7B",
            "classes": [
                {"name": "chat", "rate_rps": 1, "input_len": 512, "output_len": 128},
                {"name": "rag", "rate_rps": 1, "input_len": 4096, "output_len": 256},
                {"name": "code", "rate_rps": 1, "input_len": 2048, "output_len": 512},
            ],
            "gpus": [{"gpu_model": "rtx-4090", "hourly_usd": 0.3, "site": "dc"}],
            "sites": [{"name": "dc", "electricity_usd_per_kwh": 0.1, "grid_gco2_per_kwh": 300}],
        }
    )
    notes = measure_notes(table(["Qwen/Qwen2.5-7B"] * 3), scenario)
    assert [note.split(":")[0] for note in notes] == ["class 'rag'", "class 'code'"]
    assert "--input-len 4096 --output-len 256" in notes[0]
    assert "--model Qwen/Qwen2.5-7B --gpu rtx-4090 --gpu-count 1" in notes[1]
