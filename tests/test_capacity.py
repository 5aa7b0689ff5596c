"""`fleetplan capacity` and the service behind it (fleetplan/services/capacity.py): the capacity
of one configuration at P99 targets from its latency-against-load curve, today's measured rule
beside it, and an exit code per outcome; the command runs as a real process on the sample
warehouse."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from fleetplan.core.errors import InputError
from fleetplan.services.capacity import CapacityQuery, LatencyTargets, capacity_report
from tests.support.planner_points import level, points

QWEN = "DeepSeek-R1-Distill-Qwen-14B"
H100 = ("--model", QWEN, "--gpu", "h100-pcie", "--gpu-count", "1")


def test_a_capacity_between_levels_exits_0_and_its_json_is_the_service_s(
    cli, sample_warehouse_path, sample_tables
):
    done = cli(
        "capacity", "--warehouse", sample_warehouse_path, *H100, "--ttft-p99", "46",
        "--format", "json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    query = CapacityQuery(
        model=QWEN, gpu="h100-pcie", gpu_count=1, targets=LatencyTargets(ttft_p99_ms=46)
    )
    report = capacity_report(sample_tables.points, query, sample_tables.catalog)
    assert printed == json.loads(report.model_dump_json())
    # between the 1 req/s level (44-46 ms) and the 4 req/s level (47 ms); today's rule: 1.04
    assert 1.04 < printed["capacity_rps"] < 4 and printed["basis"] == "interpolated"
    assert printed["measured_rule_rps"] == pytest.approx(1.04, abs=0.01)
    # the 32 req/s bursts prove at least 8.83 req/s: the saturation the data shows
    assert printed["saturation_rps"] == pytest.approx(8.83, abs=0.01) and printed["reason"] is None
    assert printed["targets"] == {"ttft_p99_ms": 46.0, "tpot_p99_ms": None}
    assert printed["predicted_ttft_p99_ms"] == pytest.approx(46, abs=0.01)
    kept = [lv for lv in printed["levels"] if lv["offered_rps"] == 4.0]
    assert len(kept) == 2 and all(lv["kept_up"] == "kept up" for lv in kept)
    bursts = [lv for lv in printed["levels"] if lv["offered_rps"] == 32.0]
    assert bursts and all(lv["kept_up"] == "cannot tell" and not lv["in_curve"] for lv in bursts)
    assert all(lv["source_file"].endswith(".json") and lv["reason"] for lv in printed["levels"])


def test_the_text_report_reads_capacity_rule_saturation_and_levels(cli, sample_warehouse_path):
    done = cli(
        "capacity", "--warehouse", sample_warehouse_path, *H100, "--ttft-p99", "48",
        "--tpot-p99", "50",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "on 1x h100-pcie (vllm 0.8.5, float16, TP 1), sharegpt traffic" in text
    assert "Targets: P99 TTFT <= 48 ms; P99 TPOT <= 50 ms" in text
    # the 8 req/s levels are too short to tell (25 s of arrivals, a 12 s drain): the capacity the
    # levels prove is the 4 req/s one; beyond it, only when asked (--extrapolate)
    assert "Capacity:      4.00 req/s per server (at a measured level)" in text
    assert "Measured rule: 3.39 req/s" in text
    assert "Saturation:    8.83 req/s (the most a level that did not keep up proves" in text
    assert text.count("kept up: ") == 4 and text.count("a burst: ") == 4
    assert text.count("cannot tell: it ended within a drain") == 2


def test_no_rate_meeting_the_targets_exits_2_with_the_reason(cli, sample_warehouse_path):
    done = cli(
        "capacity", "--warehouse", sample_warehouse_path, *H100, "--ttft-p99", "10",
        "--format", "json",
    )  # fmt: skip
    assert done.returncode == 2
    printed = json.loads(done.stdout)
    assert printed["capacity_rps"] == 0 and printed["basis"] == "none"
    assert "P99 TTFT is 45 ms against 10 ms" in printed["reason"]
    assert "no capacity: even at its lowest stable level" in done.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--model", "no-such-model", "--gpu", "4090", "--gpu-count", "1"), QWEN),
        (("--model", QWEN, "--gpu", "4090", "--gpu-count", "3"), "2x rtx-4090, 4x rtx-4090"),
        (("--model", QWEN, "--gpu", "l40s", "--gpu-count", "1"), "it was on: 1x h100-pcie"),
        (("--model", QWEN, "--gpu", "no-gpu", "--gpu-count", "1"), "unrecognised GPU"),
        ((*H100, "--dataset", "random"), "it was with: sharegpt"),
    ],
)
def test_bad_input_exits_1_naming_what_there_is(cli, sample_warehouse_path, args, says):
    done = cli("capacity", "--warehouse", sample_warehouse_path, *args)
    assert done.returncode == 1 and done.stdout == ""
    assert says in done.stderr and "Traceback" not in done.stderr


def test_too_few_stable_levels_is_no_capacity_with_the_reason():
    # levels without durations cannot be judged: no stable level, no curve
    pts = points(("h100-pcie", 1, [level(1, 1, ttft=15), level(4, 4, ttft=20)]))
    report = capacity_report(pts, CapacityQuery(model="m", gpu="h100-pcie", gpu_count=1))
    assert report.capacity_rps == 0 and report.basis == "none"
    assert report.reason.startswith("too few stable levels (0)")
    assert report.measured_rule_rps == 4  # today's rule still reads the achieved rates
    assert [lv.kept_up for lv in report.levels] == ["cannot tell", "cannot tell"]


def test_several_kinds_of_traffic_ask_which():
    pts = pd.concat(
        [
            points(("h100-pcie", 1, [level(1, 1)]), dataset="sharegpt"),
            points(("h100-pcie", 1, [level(1, 1)]), dataset="random"),
        ]
    )
    query = CapacityQuery(model="m", gpu="h100-pcie", gpu_count=1)
    with pytest.raises(InputError, match=r"several kinds of traffic \(random; sharegpt\)"):
        capacity_report(pts, query)
    chosen = capacity_report(pts, query.model_copy(update={"dataset": "random"}))
    assert chosen.traffic == "random"


def test_extrapolation_only_when_asked():
    rows = []
    for rate, ttft in ((1, 50.0), (2, 55.0), (4, 70.0)):
        rows.append(level(rate, 400 / ((400 - 1) / rate + 1), ttft=ttft, tpot=20))
    rows.append(level(16, 8, ttft=5000, tpot=80))  # 400 requests over 50 s: fell behind at 8
    pts = points(("h100-pcie", 1, rows))
    pts["completed"] = 400
    pts["duration_s"] = [(400 - 1) / r + 1 for r in (1, 2, 4)] + [50.0]
    pts["e2el_p50_ms"] = [1000.0, 1000.0, 1000.0, 6000.0]
    pts["ttft_p50_ms"] = pts["ttft_p99_ms"] * 0.7
    query = CapacityQuery(
        model="m", gpu="h100-pcie", gpu_count=1, targets=LatencyTargets(ttft_p99_ms=140)
    )
    plain = capacity_report(pts, query)
    saturation = 400 / 49  # what the level that fell behind proves: the first done 1 s in
    assert plain.capacity_rps == 4 and plain.basis == "measured"
    assert plain.saturation_rps == pytest.approx(saturation)
    assert "beyond it nothing was measured" in plain.reason
    far = capacity_report(pts, query.model_copy(update={"extrapolate": True, "capacity_at": "mid"}))
    assert far.basis == "extrapolated" and 4 < far.capacity_rps < saturation
    assert (far.rps_low, far.capacity_at) == (4, "mid")  # the low end: what the data proves
    assert far.predicted_ttft_p99_ms == pytest.approx(140, rel=1e-3)


def test_token_lengths_a_token_apart_are_one_kind_of_traffic():
    from fleetplan.planner.capacity.rules import SHAPE_TOLERANCE, near_length
    from fleetplan.services.traffic_shapes import traffic_kinds

    first = points(("h100-pcie", 1, [level(1, 1), level(2, 2)]))
    second = points(("h100-pcie", 1, [level(4, 4)]))
    first[["input_len", "output_len"]] = [204, 62]
    second[["input_len", "output_len"]] = [204, 63]
    pts = pd.concat([first, second])
    report = capacity_report(pts, CapacityQuery(model="m", gpu="h100-pcie", gpu_count=1))
    assert len(report.levels) == 3  # one kind: every level counts
    (kind,) = traffic_kinds(pts, "m")
    assert (kind.input_len, kind.output_len, kind.levels) == (204, 62, 3)
    # what is a few percent apart is one kind; 512 and 2048 tokens are not
    assert SHAPE_TOLERANCE == 0.05 and near_length(204, 212) and not near_length(512, 2048)
    other = second.assign(input_len=2048)
    with pytest.raises(InputError, match="several kinds of traffic"):
        capacity_report(
            pd.concat([first, other]), CapacityQuery(model="m", gpu="h100-pcie", gpu_count=1)
        )


def test_a_query_s_targets_are_named_as_targets_and_checked():
    """One word, one meaning (issue 24): the P99s a capacity is computed at are the query's
    `targets` (the report's JSON field of the same name), never a bare `ttft_p99_ms` beside the
    measured and predicted P99s; a target must be positive."""
    from pydantic import ValidationError

    from fleetplan.planner.scenario.scenario import TrafficClass

    with pytest.raises(ValidationError):
        CapacityQuery(model="m", gpu="h100-pcie", gpu_count=1, ttft_p99_ms=46)
    with pytest.raises(ValidationError, match=r"targets\.ttft_p99_ms"):
        CapacityQuery(model="m", gpu="h100-pcie", gpu_count=1, targets={"ttft_p99_ms": 0})
    chat = TrafficClass(name="chat", rate_rps=2, ttft_p99_ms=300, tpot_p99_ms=None)
    assert LatencyTargets.of(chat) == LatencyTargets(ttft_p99_ms=300)
