"""Traffic classes from a request log: hourly rates, token-length percentiles and burstiness.

Two formats are read: the Azure LLM inference trace (columns `TIMESTAMP`, `ContextTokens`,
`GeneratedTokens`; Patel et al., "Splitwise", 2023) and a generic CSV of `timestamp`,
`input_tokens`, `output_tokens` (a timestamp is ISO 8601 text or seconds since 1970; an optional
`class` column names each request's class). Hours are those of the timestamps as written (the
Azure traces' are UTC).

- Classes: one ("all"), or by input or output length (split at the median length: a short and a
  long class), or by the `class` column.
- Hourly rate of a class: its requests in each clock hour over the seconds of that hour the log
  covers (a log that starts at 18:15 covers 45 minutes of 18 h), averaged over the days it covers;
  24 rates (`hourly_rps`) where the log covers every hour of the day, else the highest hourly rate
  (`rate_rps`) and the hours it rests on.
- Burstiness of an hour: its peak 1-minute rate (requests in the busiest whole minute / 60 s) over
  its mean rate; a class's is the highest of its hours'. `burstiness` in a class tells the planner
  how far above its hourly rate a class may run within the hour; with the scenario's
  `plan_bursts: true` the planner serves that rate (docs/day-and-availability.md, "Workload from a
  trace").
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fleetplan.core.errors import InputError
from fleetplan.planner.scenario.parts import MAX_TOKENS

AZURE = {
    "TIMESTAMP": "timestamp",
    "ContextTokens": "input_tokens",
    "GeneratedTokens": "output_tokens",
}
GENERIC = ("timestamp", "input_tokens", "output_tokens")
CLASS_BY = ("all", "input", "output", "column")
PERCENTILES = (50, 90, 99)
HOURS = 24
MAX_SPAN = pd.Timedelta(days=3660)  # ten years of clock hours, each summed once


def read_trace(text: str, *, name: str) -> pd.DataFrame:
    """The log as (timestamp, input_tokens, output_tokens[, class]); InputError names the file
    and what is wrong."""
    try:  # a class is text as written ("1" and "1.0" two classes; an empty one refused)
        frame = pd.read_csv(io.StringIO(text), dtype={"class": str}, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise InputError(f"not a CSV table: {error}", file=name) from None
    if not isinstance(frame.index, pd.RangeIndex):  # pandas made the extra fields an index
        raise InputError(
            f"line 2 has more fields than the header's {len(frame.columns)} "
            f"({', '.join(map(str, frame.columns))}): its columns would be shifted",
            file=name,
        )
    if set(AZURE) <= set(frame.columns):
        frame = frame.rename(columns=AZURE)
    twice = sorted({str(c) for c in frame.columns[frame.columns.duplicated()]})
    if twice:
        raise InputError(
            f"column {', '.join(twice)} given twice (an Azure trace's header and a generic one)",
            file=name,
        )
    missing = [c for c in GENERIC if c not in frame.columns]
    if missing:
        raise InputError(
            f"no column {', '.join(missing)}: give an Azure LLM inference trace (TIMESTAMP, "
            "ContextTokens, GeneratedTokens) or timestamp, input_tokens, output_tokens",
            file=name,
        )
    keep = [*GENERIC, *(["class"] if "class" in frame.columns else [])]
    frame = frame[keep].copy()
    if frame.empty:
        raise InputError("the log has no requests", file=name)
    parsed = _timestamps(frame["timestamp"])
    for column in ("input_tokens", "output_tokens"):
        frame[column] = _numbers(frame[column])
    bad = parsed.isna() | frame["input_tokens"].isna() | frame["output_tokens"].isna()
    if "class" in frame.columns:
        bad |= frame["class"].str.strip() == ""
    for column in ("input_tokens", "output_tokens"):  # NaN is caught above
        bad |= ~frame[column].between(0, MAX_TOKENS)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0]) + 2  # the header is line 1
        raise InputError(
            f"line {row}: a timestamp that is not a time, a token count that is not a number "
            f"from 0 to {MAX_TOKENS:,}, or an empty class ({int(bad.sum())} such rows)",
            file=name,
        )
    frame["timestamp"] = parsed
    return frame.sort_values("timestamp", kind="stable").reset_index(drop=True)


def _numbers(values: pd.Series) -> pd.Series:
    """Numbers, NaN where a cell is none (a digit string too long for an integer: infinite;
    True/False, which pandas reads as booleans, none)."""
    if pd.api.types.is_bool_dtype(values):
        return pd.Series(math.nan, index=values.index)
    if values.dtype == object:  # text, and a True among it
        values = values.map(lambda v: math.nan if isinstance(v, bool) else v)
    try:
        return pd.to_numeric(values, errors="coerce").astype(float)
    except OverflowError:  # "9" * 400: pandas parses it as an integer first
        return values.map(_number)


def _number(value: object) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return math.nan


def _timestamps(stamps: pd.Series) -> pd.Series:
    """Each cell as a UTC time without zone: a number is seconds since 1970, text is ISO 8601
    (with or without an offset, a zone-less time read as UTC); NaT where it is neither (or out
    of pandas' range)."""
    numeric = pd.api.types.is_numeric_dtype(stamps) and not pd.api.types.is_bool_dtype(stamps)
    seconds = stamps if numeric else _numbers(stamps)
    seconds = seconds.astype(float).where(lambda v: np.isfinite(v))
    parsed = pd.to_datetime(seconds, unit="s", errors="coerce", utc=True)
    text = seconds.isna() & stamps.notna()
    if text.any():
        parsed[text] = pd.to_datetime(
            stamps[text].astype(str), errors="coerce", format="mixed", utc=True
        )
    return parsed.dt.tz_localize(None)


@dataclass(frozen=True)
class ClassStats:
    name: str
    requests: int
    hourly_rps: list[float | None]  # None: an hour the log does not cover
    input_tokens: dict[str, float]
    output_tokens: dict[str, float]
    burstiness: float | None  # peak 1-minute rate over the hour's mean, the highest hour's
    hourly_burstiness: list[float | None]

    def traffic_class(self) -> dict[str, object]:
        """The class as a scenario's `classes[]` entry (version 2 where every hour is known)."""
        known = [r for r in self.hourly_rps if r is not None]
        entry: dict[str, object] = {"name": self.name}
        if len(known) == HOURS and max(known) > 0:
            entry["hourly_rps"] = [round(r, 6) for r in known]
        else:
            entry["rate_rps"] = round(max(known), 6)
        return entry

    def summary(self) -> dict[str, object]:
        return {
            "name": self.name,
            "requests": self.requests,
            "hours_covered": [h for h, r in enumerate(self.hourly_rps) if r is not None],
            "hourly_rps": [None if r is None else round(r, 6) for r in self.hourly_rps],
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "burstiness": None if self.burstiness is None else round(self.burstiness, 4),
            "hourly_burstiness": [
                None if b is None else round(b, 4) for b in self.hourly_burstiness
            ],
        }


def classes_of(frame: pd.DataFrame, class_by: str = "all") -> dict[str, pd.DataFrame]:
    if class_by not in CLASS_BY:
        raise InputError(f"--class-by: one of {', '.join(CLASS_BY)}", field="class_by")
    if class_by == "all":
        return {"all": frame}
    if class_by == "column":
        if "class" not in frame.columns:
            raise InputError("--class-by column needs a 'class' column in the log", field="class")
        return {str(k): part for k, part in frame.groupby("class", sort=True)}
    column = f"{class_by}_tokens"
    median = float(frame[column].median())
    short = frame[frame[column] <= median]
    long = frame[frame[column] > median]
    parts = {f"{class_by} <= {median:g} tokens": short, f"{class_by} > {median:g} tokens": long}
    return {k: v for k, v in parts.items() if not v.empty}


def _percentiles(values: pd.Series) -> dict[str, float]:
    return {f"p{p}": float(np.percentile(values, p)) for p in PERCENTILES}


def class_stats(
    frame: pd.DataFrame, name: str, start: pd.Timestamp, end: pd.Timestamp
) -> ClassStats:
    """A class's figures over the log's span [start, end] (the whole log's, not the class's)."""
    stamps = frame["timestamp"]
    buckets = pd.date_range(start.floor("h"), end.floor("h"), freq="h")
    # requests per clock hour and the busiest minute of each: one pass over the rows (a mask
    # per hour made a log's cost its rows times the hours it spans)
    per_hour = stamps.dt.floor("h").value_counts()
    busiest = stamps.dt.floor("min").value_counts()
    busiest = busiest.groupby(busiest.index.floor("h")).max()
    rates: dict[int, list[float]] = {}
    bursts: dict[int, list[float]] = {}
    for bucket in buckets:
        lo, hi = max(bucket, start), min(bucket + pd.Timedelta(hours=1), end)
        seconds = (hi - lo).total_seconds()
        if seconds < 60:  # less than a minute of an hour says nothing about it
            continue
        count = int(per_hour.get(bucket, 0))
        rate = count / seconds
        rates.setdefault(bucket.hour, []).append(rate)
        if count:
            bursts.setdefault(bucket.hour, []).append(float(busiest[bucket]) / 60 / rate)
    hourly = [float(np.mean(rates[h])) if h in rates else None for h in range(HOURS)]
    hourly_burst = [max(bursts[h]) if h in bursts else None for h in range(HOURS)]
    known = [b for b in hourly_burst if b is not None]
    return ClassStats(
        name=name,
        requests=len(frame),
        hourly_rps=hourly,
        input_tokens=_percentiles(frame["input_tokens"]),
        output_tokens=_percentiles(frame["output_tokens"]),
        burstiness=max(known) if known else None,
        hourly_burstiness=hourly_burst,
    )


def workload(frame: pd.DataFrame, class_by: str = "all", *, source: str) -> dict[str, object]:
    """The classes of a log, as JSON: `classes` (scenario entries) and `workload` (the figures)."""
    start, end = frame["timestamp"].min(), frame["timestamp"].max()
    if end - start > MAX_SPAN:
        raise InputError(
            f"the log spans {start} to {end}: over the {MAX_SPAN.days:,} days fleetplan reads "
            "hour by hour (a timestamp out of place?)",
            file=source,
        )
    stats = [
        class_stats(part, name, start, end) for name, part in classes_of(frame, class_by).items()
    ]
    if not any(rate is not None for s in stats for rate in s.hourly_rps):
        span = (end - start).total_seconds()
        raise InputError(
            f"the log spans {span:g} s, with no minute of any clock hour in it: an hour's rate "
            "needs at least a minute of the hour",
            file=source,
        )
    classes = []
    for s in stats:
        entry = s.traffic_class()
        if s.burstiness is not None:
            entry["burstiness"] = round(s.burstiness, 4)
        classes.append(entry)
    return {
        "classes": classes,
        "workload": {
            "source": source,
            "class_by": class_by,
            "start": start.isoformat(),
            "end": end.isoformat(),
            "requests": len(frame),
            "classes": [s.summary() for s in stats],
        },
    }
