"""A trace's requests on the plan's clock: each request's arrival (s), its hour of the day, its
lengths and its class.

- Time of day: a request arrives at the seconds since midnight of its timestamp (the hours as
  the trace writes them, taken to be the plan's hours), days after the first going on from
  there; `start_hour` instead moves the trace's first request to that hour (its gaps kept).
- `scale` X multiplies the rate: below 1, each request is kept with probability X; above 1,
  ceil(X) copies of the trace are laid over it, each kept with probability X / ceil(X), copy k
  shifted by k / ceil(X) of the trace's mean gap between arrivals (copies do not arrive at the
  same instant; the minute-scale bursts, and so the burstiness, are the trace's).
- Classes: the trace's classes as `scenario.workload.classes_of` splits them, matched to the
  plan's by name; a trace of one class ("all") goes to the plan's only class, or to `only`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fleetplan.core.errors import InputError

HOUR_S = 3600.0
# The most requests one replay simulates, the log's times its scale: a day of the Azure trace
# is about half a million; twenty million take minutes and about a gigabyte.
MAX_REPLAY_REQUESTS = 20_000_000


@dataclass(frozen=True)
class Requests:
    """The requests in arrival order."""

    time_s: np.ndarray  # on the plan's clock: seconds from midnight of the first day
    prompt: np.ndarray
    output: np.ndarray
    traffic_class: np.ndarray  # index into `names`
    names: list[str]
    placed: str  # how the arrivals were put on the plan's hours, in words

    def __len__(self) -> int:
        return len(self.time_s)

    def hour(self) -> np.ndarray:
        return (self.time_s // HOUR_S).astype(np.int64) % 24


def match_classes(
    parts: Mapping[str, pd.DataFrame], plan_classes: Sequence[str], only: str | None = None
) -> dict[str, pd.DataFrame]:
    """The trace's classes under the plan's names (InputError where one has no match)."""
    if only is not None:
        if only not in plan_classes:
            raise InputError(
                f"--class {only!r} is not a class of the plan ({', '.join(plan_classes)})",
                field="class",
            )
        return {only: pd.concat(list(parts.values())).sort_values("timestamp", kind="stable")}
    if list(parts) == ["all"] and "all" not in plan_classes:
        if len(plan_classes) == 1:
            return {plan_classes[0]: parts["all"]}
        raise InputError(
            "the trace is one class and the plan has several ("
            + ", ".join(plan_classes)
            + "): say which it is (--class NAME), or split the trace as the plan's classes were "
            "(--class-by input, output or column)",
            field="class",
        )
    unknown = [name for name in parts if name not in plan_classes]
    if unknown:
        raise InputError(
            f"the trace's class {unknown[0]!r} is not one of the plan's ("
            + ", ".join(plan_classes)
            + "): split the trace as the plan's classes were made (--class-by), or give --class",
            field="class",
        )
    return dict(parts)


def requests_of(
    parts: Mapping[str, pd.DataFrame],
    names: Sequence[str],
    *,
    start_hour: int | None = None,
    scale: float = 1.0,
    seed: int = 0,
    max_requests: int = MAX_REPLAY_REQUESTS,
) -> Requests:
    """The requests of `parts` (class name -> its rows of timestamp, input_tokens,
    output_tokens), placed and scaled as the module's docstring says; more than `max_requests`
    (the log's rows of the classes times `scale`) refused before any is made."""
    if not (math.isfinite(scale) and scale > 0):
        raise InputError("--scale must be a number above 0", field="scale")
    rows = sum(len(frame) for frame in parts.values())
    if rows * scale > max_requests:
        raise InputError(
            f"{rows:,} requests x {scale:g} is over the {max_requests:,} one replay simulates: "
            "replay part of the log, or a lower scale",
            field="scale",
        )
    frames = []
    for name, frame in parts.items():
        frames.append(
            frame.assign(_class=names.index(name))[
                ["timestamp", "input_tokens", "output_tokens", "_class"]
            ]
        )
    table = pd.concat(frames).sort_values("timestamp", kind="stable")
    if table.empty:
        raise InputError("the trace has no requests of the plan's classes", field="trace")
    stamps = table["timestamp"]
    midnight = stamps.iloc[0].normalize()
    time_s = (stamps - midnight).dt.total_seconds().to_numpy(dtype=float)
    placed = "at their time of day as the trace writes it"
    if start_hour is not None:
        time_s = time_s - time_s[0] + start_hour * HOUR_S
        placed = f"from {start_hour:02d}:00 (the trace's first request moved there, gaps kept)"
    prompt = table["input_tokens"].to_numpy(dtype=np.int64)
    output = table["output_tokens"].to_numpy(dtype=np.int64)
    classes = table["_class"].to_numpy(dtype=np.int64)
    if scale != 1.0:
        time_s, prompt, output, classes = _scaled(time_s, prompt, output, classes, scale, seed)
        placed += f", rate x {scale:g}"
    return Requests(time_s, prompt, output, classes, list(names), placed)


def _scaled(time_s, prompt, output, classes, scale: float, seed: int):
    rng = np.random.default_rng([seed, 7])
    copies = math.ceil(scale)
    keep_p = scale / copies
    gap = (time_s[-1] - time_s[0]) / max(len(time_s) - 1, 1)
    parts = []
    for k in range(copies):
        kept = rng.random(len(time_s)) < keep_p
        parts.append((time_s[kept] + k * gap / copies, prompt[kept], output[kept], classes[kept]))
    time_s, prompt, output, classes = (np.concatenate(p) for p in zip(*parts, strict=True))
    order = np.argsort(time_s, kind="stable")
    if len(order) == 0:
        raise InputError(f"--scale {scale:g} leaves no request of the trace", field="scale")
    return time_s[order], prompt[order], output[order], classes[order]
