"""`fleetplan workload`: classes from the two Azure LLM inference traces and a generic CSV."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from benchmarks.inputs.shared_data import azure_traces_dir
from fleetplan.core.errors import InputError
from fleetplan.planner.scenario.scenario import TrafficClass
from fleetplan.planner.scenario.workload import read_trace, workload

TRACES = ("AzureLLMInferenceTrace_code.csv", "AzureLLMInferenceTrace_conv.csv")


@pytest.fixture
def traces():
    found = azure_traces_dir()
    if found is None:
        pytest.skip("Azure traces not found: shared/data/traces/azure-llm-inference-2023")
    return found


@pytest.mark.parametrize("trace", TRACES)
def test_azure_trace_gives_classes_with_rates_lengths_and_burstiness(traces, trace):
    path = traces / trace
    raw = pd.read_csv(path)
    frame = read_trace(path.read_text(), name=trace)
    result = workload(frame, "input", source=trace)
    stats = result["workload"]["classes"]
    assert sum(s["requests"] for s in stats) == len(raw)
    median = raw["ContextTokens"].median()
    short, long = stats
    assert short["name"] == f"input <= {median:g} tokens"
    assert short["input_tokens"]["p99"] <= median < long["input_tokens"]["p50"]
    # rates: requests per covered second, hour by hour, add up to the log's requests
    start, end = pd.Timestamp(result["workload"]["start"]), pd.Timestamp(result["workload"]["end"])
    assert len(stats) > 0  # a loop over nothing asserts nothing
    for s in stats:
        assert s["hours_covered"] == sorted({start.hour, end.hour})
        first = start.floor("h") + pd.Timedelta(hours=1)
        seconds = {
            start.hour: (first - start).total_seconds(),
            end.hour: (end - first).total_seconds(),
        }
        counted = sum(s["hourly_rps"][h] * seconds[h] for h in s["hours_covered"])
        assert counted == pytest.approx(s["requests"], rel=1e-4)
        assert s["burstiness"] >= 1.0
    assert len(result["classes"]) > 0  # a loop over nothing asserts nothing
    for entry in result["classes"]:
        traffic = TrafficClass.model_validate(entry)  # a scenario's class as it stands
        assert traffic.burstiness == entry["burstiness"]
        assert traffic.rate_rps == max(
            r for r in next(s for s in stats if s["name"] == entry["name"])["hourly_rps"] if r
        )


def test_burstiness_is_the_peak_minute_over_the_hours_mean(tmp_path):
    # 60 requests in one minute of an hour otherwise at 1 request a minute
    stamps = [pd.Timestamp("2024-01-01 10:00") + pd.Timedelta(minutes=m) for m in range(60)]
    stamps += [pd.Timestamp("2024-01-01 10:30:00") + pd.Timedelta(seconds=s) for s in range(59)]
    stamps.append(pd.Timestamp("2024-01-01 11:00:00"))
    text = "timestamp,input_tokens,output_tokens\n" + "".join(
        f"{s.isoformat()},100,10\n" for s in stamps
    )
    result = workload(read_trace(text, name="t.csv"), source="t.csv")
    (s,) = result["workload"]["classes"]
    mean = 119 / 3600
    assert s["hourly_rps"][10] == pytest.approx(mean, rel=1e-3)
    assert s["hourly_burstiness"][10] == pytest.approx(60 / 60 / mean, rel=1e-3)


def test_a_full_day_gives_hourly_rps_and_the_class_column_names_classes():
    day = pd.Timestamp("2024-01-01")
    rows = []
    for h in range(24):
        for i in range(2 if 9 <= h < 18 else 1):
            stamp = (day + pd.Timedelta(hours=h, minutes=i)).timestamp()
            rows.append(f"{stamp},10,5,{'chat' if i else 'bg'}")
    rows.append(f"{(day + pd.Timedelta(hours=23, minutes=59)).timestamp()},10,5,bg")
    text = "timestamp,input_tokens,output_tokens,class\n" + "\n".join(rows) + "\n"
    frame = read_trace(text, name="day.csv")
    result = workload(frame, "column", source="day.csv")
    names = [c["name"] for c in result["classes"]]
    assert names == ["bg", "chat"]
    chat = TrafficClass.model_validate(result["classes"][1])
    assert chat.hourly_rps is not None and chat.hourly_rps[8] == 0 and chat.hourly_rps[9] > 0


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("a,b\n1,2\n", "no column timestamp"),
        ("timestamp,input_tokens,output_tokens\nyesterday,1,2\n", "line 2"),
        ("timestamp,input_tokens,output_tokens\n", "no requests"),
        # a token count pandas reads as an integer too large for a float (was OverflowError)
        (f"timestamp,input_tokens,output_tokens\n0,1,2\n60,1,{'9' * 400}\n", "line 3"),
        # infinite or beyond any prompt: not a count
        ("timestamp,input_tokens,output_tokens\n0,1,2\n60,inf,2\n", "line 3"),
        ("timestamp,input_tokens,output_tokens\n0,1,2\n60,1e308,2\n", "from 0 to 10,000,000"),
        ("timestamp,input_tokens,output_tokens\n1e308,1,2\n", "line 2"),
    ],
)
def test_a_bad_log_is_refused_naming_the_file(text, says):
    with pytest.raises(InputError, match=says) as error:
        read_trace(text, name="bad.csv")
    assert "bad.csv" in str(error.value)


def test_seconds_and_iso_times_mixed_in_one_column_are_each_read():
    # one ISO time among seconds made the whole column text, and every number a bad row
    text = (
        "timestamp,input_tokens,output_tokens\n1700000000,1,2\n"
        "2023-11-14T23:13:20+01:00,1,2\n2023-11-14 22:43:20,1,2\n"
    )
    frame = read_trace(text, name="mixed.csv")
    assert [t.isoformat() for t in frame["timestamp"]] == [
        "2023-11-14T22:13:20",
        "2023-11-14T22:13:20",  # +01:00 read at its offset, in UTC
        "2023-11-14T22:43:20",  # no zone: UTC
    ]


def test_a_log_shorter_than_a_minute_of_any_hour_is_refused_not_a_traceback():
    frame = read_trace("timestamp,input_tokens,output_tokens\n0,1,2\n1,1,2\n", name="s.csv")
    with pytest.raises(InputError, match="spans 1 s"):  # was ValueError from max()
        workload(frame, "all", source="s.csv")


def test_workload_command_writes_classes(cli, tmp_path, traces):
    out = tmp_path / "classes.json"
    done = cli("workload", traces / TRACES[0], "--class-by", "output", "-o", out)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert len(data["classes"]) == 2 and data["workload"]["class_by"] == "output"
    bad = tmp_path / "bad.csv"
    bad.write_text("x\n1\n")
    done = cli("workload", bad)
    assert done.returncode == 1 and "bad.csv" in done.stderr


@pytest.mark.parametrize(
    ("text", "says"),
    [
        # rows longer than the header: pandas made their first fields an index, shifting the
        # columns (a replay of it was "MEETS" at 1970-01-01)
        ("timestamp,input_tokens,output_tokens\n1,2,3,4,5,6\n61,2,3,4,5,6\n", "more fields"),
        # an Azure header and a generic one: two timestamp columns (was a TypeError)
        (
            "TIMESTAMP,ContextTokens,GeneratedTokens,timestamp,input_tokens,output_tokens\n"
            "0,1,2,0,1,2\n",
            "given twice",
        ),
        # an empty class was dropped silently by --class-by column
        ("timestamp,input_tokens,output_tokens,class\n0,1,2,a\n70,1,2,\n", "line 3"),
        # True/False are not times or counts
        ("timestamp,input_tokens,output_tokens\nTrue,1,2\nFalse,1,2\n", "line 2"),
        ("timestamp,input_tokens,output_tokens\n0,True,2\n70,False,2\n", "line 2"),
    ],
)
def test_a_log_whose_columns_are_not_what_its_header_says_is_refused(text, says):
    with pytest.raises(InputError, match=says):
        read_trace(text, name="bad.csv")


def test_classes_are_text_as_written_and_a_span_of_decades_is_refused_at_once():
    text = "timestamp,input_tokens,output_tokens,class\n0,1,2,1\n70,1,2,1.0\n"
    assert list(read_trace(text, name="c.csv")["class"]) == ["1", "1.0"]  # two classes
    # two rows 77 years apart: one mask per hour of the span ran for minutes (9999: forever)
    frame = read_trace(
        "timestamp,input_tokens,output_tokens\n2023-11-16T18:00:00,1,2\n2100-11-16T18:00:00,1,2\n",
        name="w.csv",
    )
    with pytest.raises(InputError, match="over the 3,660 days"):
        workload(frame, "all", source="w.csv")
