from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from fleetplan.core.stats import RequestTimings, summarise_ms
from fleetplan.core.tabular import neutralise, to_csv, to_json_records
from fleetplan.warehouse.queries import load_curve


@pytest.mark.parametrize("text", ["=1+1", "+1", "-cmd", "@SUM(A1)", "\tx", "\rx"])
def test_formula_starts_are_neutralised(text):
    assert neutralise(text) == "'" + text


def test_csv_neutralises_text_but_not_numbers():
    frame = pd.DataFrame({"model": ["=HYPERLINK(1)", "ok"], "delta": [-1.5, math.inf]})
    lines = to_csv(frame).splitlines()
    assert lines[1] == "'=HYPERLINK(1),-1.5" and lines[2] == "ok,inf"


def test_json_records_have_no_nan_or_inf():
    frame = pd.DataFrame({"a": [math.inf, np.nan], "b": [pd.NA, "x"], "n": [1, 2]})
    rows = json.loads(to_json_records(frame))
    assert rows == [{"a": "inf", "b": None, "n": 1}, {"a": None, "b": "x", "n": 2}]


def test_summaries_use_linear_percentiles_and_null_when_empty():
    values = np.array([0.1, 0.2, 0.3, 0.4])
    stats = summarise_ms(values, "ttft")
    assert stats["ttft_p50_ms"] == pytest.approx(250.0)
    assert stats["ttft_p99_ms"] == pytest.approx(397.0)
    assert all(v is None for v in summarise_ms(np.zeros(0), "ttft").values())


def test_tpot_skips_single_token_requests():
    timings = RequestTimings(
        ttft_s=np.array([0.1, 0.1]),
        e2el_s=np.array([0.1, 1.1]),
        output_tokens=np.array([1, 11]),
        itl_s=np.array([0.1] * 10),
    )
    assert timings.latency_stats()["tpot_mean_ms"] == pytest.approx(100.0)


def test_load_curve_averages_repeats_and_sets_aside_saturation():
    points = pd.DataFrame(
        {
            "gpu_model": ["h100-pcie"] * 3 + ["rtx-4090"],
            "gpu_count": [1, 1, 1, 4],
            "offered_rate_rps": [4.0, 4.0, math.inf, 4.0],
            "total_throughput_tps": [100.0, 120.0, 500.0, 80.0],
        }
    )
    curve = load_curve(points, "total_throughput_tps")
    assert curve[["configuration", "value", "repeats"]].values.tolist() == [
        ["1x h100-pcie", 110.0, 2],
        ["4x rtx-4090", 80.0, 1],
    ]
    assert curve.attrs["saturation_levels"] == 1
