"""Figures a file states that contradict each other: a file whose figures are impossible is
refused, naming the figures, before anything from it is stored; a stated figure that disagrees
with the counts beside it is kept in a note, and the point plans with what the counts give.

Checked once, on the canonical points every format produces (`fleetplan.warehouse.importers.
registry.parse` calls `check_runs`), so every format gets the same checks. Only figures the file
states are compared: a figure the format derived (`derived`: GenAI-Perf's, LLMPerf's, ML.ENERGY's
and inference-perf's duration is completed / their request throughput) is never checked against
the figures it was derived from, nor its own derivation.

Refused (impossible, whatever the tool):
- completed requests > requests sent;
- counts that give no finite throughput;
- for every statistic (mean, p50 ... p99): TTFT <= E2EL and TPOT <= E2EL (each request's first
  token and each of its token gaps come before its last token; order statistics keep that), and,
  where the duration is stated, no TTFT or E2EL longer than it;
- a mean below (1 - q) x its q-quantile (p50, p90, p95, p99): latencies are never negative, so at
  least a fraction 1 - q of the requests take p_q or longer (Markov's inequality);
- a mean or median TPOT under `_FASTEST_TPOT_MS` (10 us a token): faster than any GPU decodes;
- more requests completed a second than their concurrency allows (Little's law: c / mean E2EL,
  plus c over the window for its edges; refused beyond twice that), or than they were sent at
  (refused beyond 3 x the offered rate, with 20 requests or more);
- (percentiles out of order, negative or non-finite values: the data contract refuses those).

Throughputs (request throughput = completed / duration; output throughput = output tokens (mean)
x completed / duration, or x request throughput where the duration is derived; total throughput
likewise with input + output tokens): within `_RELATIVE` (5 %, plus `_ABSOLUTE` 0.01 of the unit:
a figure rounded to two decimals) they agree. Apart by more, whatever the ratio or direction,
they disagree and nothing is refused: tools time their window and count tokens their own way
(warm-up, drain, a stage's send window against its completion window; GenAI-Perf 25.07's output
throughput is 12.1 tok/s beside 73.5 tokens x 0.470 req/s = 34.6, inference-perf 0.7.0's 51.7
beside 77.7 x 1.61 = 125.5), so a stated figure is no forgery for being apart. The point keeps
the stated figure in a note and holds, and plans with, the figure the counts give: a stated
figure that disagrees with the counts is never the one a plan uses. tests/test_consistency.py
checks that every real file imports.
- not checked: TTFT + TPOT x (output tokens - 1) = E2EL holds per request, not between means
  (the mean of a product is not the product of means): one long fast request and a short slow
  one give a mean E2EL a quarter of the means' product (tests/test_vllm_import.py), so only a
  per-request log can check it, and statistics recomputed from one agree by construction.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fleetplan.core.contract import LATENCY_STATS, Point, Run
from fleetplan.core.errors import InputError

_RELATIVE = 0.05
_ABSOLUTE = 0.01
# The shortest time a GPU takes for one token of one stream (a decode step: every layer's
# kernels, launched one after another, take some microseconds each): 10 us, 100,000 tokens/s.
_FASTEST_TPOT_MS = 0.01
_LITTLE_MARGIN = 2.0
_SENT_MARGIN = 3.0
_FEWEST_SENT = 20

# What a person calls each figure, with its unit.
_NAMES = {
    "completed": ("completed requests", ""),
    "requests_sent": ("requests sent", ""),
    "duration_s": ("duration", " s"),
    "request_throughput_rps": ("request throughput", " req/s"),
    "output_throughput_tps": ("output throughput", " tok/s"),
    "total_throughput_tps": ("total throughput", " tok/s"),
    "input_tokens_mean": ("input tokens (mean)", ""),
    "output_tokens_mean": ("output tokens (mean)", ""),
}


def check_runs(
    runs: Sequence[Run], *, file: str, derived: frozenset[str] = frozenset()
) -> tuple[list[Run], list[str]]:
    """The runs, each point planning with fleetplan's own throughputs where a stated one
    disagrees (the stated figure kept in a note, and said as a warning); an InputError naming
    the figures of the first impossible point."""
    checked, warnings = [], []
    for r, run in enumerate(runs):
        points = []
        for i, point in enumerate(run.points):
            where = f"run {r + 1} of {len(runs)}, level {i + 1} of {len(run.points)}"
            problem = contradiction(point, derived)
            if problem is not None:
                field, message = problem
                raise InputError(
                    f"{where}: the file contradicts itself: {message}", file=file, field=field
                )
            own, notes = {}, []
            for found in _disagreeing(point, derived):
                own[found.field] = found.computed
                if found.note not in point.notes:
                    notes.append(found.note)
            warnings += [f"{where}: {note}" for note in notes]
            points.append(point.model_copy(update={**own, "notes": (*point.notes, *notes)}))
        checked.append(run.model_copy(update={"points": tuple(points)}))
    return checked, warnings


def contradiction(point: Point, derived: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """(the field, what contradicts it) for the first impossible figure of a point, else None."""
    checks = (
        _counts(point),
        _infinite(point, derived),
        _latency_order(point),
        _means(point),
        _stream_speed(point),
        () if "duration_s" in derived else _within_duration(point),
        _littles_law(point, derived),
        _send_rate(point, derived),
    )
    for check in checks:
        problem = next(iter(check), None)
        if problem is not None:
            return problem
    return None


def disagreements(point: Point, derived: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """(field, note) for each stated throughput apart from what the counts give by more than
    rounding, whatever the ratio: both are kept, the note says which one a plan uses."""
    return [(found.field, found.note) for found in _disagreeing(point, derived)]


def agree(stated: float, computed: float) -> bool:
    """Whether two figures agree within the rounding tolerance."""
    return abs(stated - computed) <= _RELATIVE * max(abs(stated), abs(computed)) + _ABSOLUTE


def _shown(name: str, value: float) -> str:
    label, unit = _NAMES[name]
    return f"{label} {value:.6g}{unit}"


def _counts(point: Point) -> Iterable[tuple[str, str]]:
    sent = point.requests_sent
    if sent is not None and point.completed > sent:
        yield (
            "completed",
            f"{_shown('completed', point.completed)} exceeds {_shown('requests_sent', sent)}",
        )


@dataclass(frozen=True, slots=True)
class _Disagreement:
    field: str
    stated: float
    computed: float  # what the counts give: the figure a plan uses
    how: str

    @property
    def note(self) -> str:
        return (
            f"{_shown(self.field, self.stated)} as the file states, but {self.how} = "
            f"{self.computed:.6g}: both kept, fleetplan plans with {self.computed:.6g} from the "
            "counts (tools count their window and tokens differently)"
        )


def _expected(point: Point, derived: frozenset[str]) -> dict[str, tuple[float, str]]:
    """What the stated counts give for each throughput: (figure, how it was computed).
    Request throughput = completed / duration; output throughput = output tokens (mean) x
    completed / duration (x request throughput where the duration is derived from it); total
    throughput likewise with input + output tokens."""
    out_mean, in_mean = point.output_tokens_mean, point.input_tokens_mean
    if "duration_s" in derived:
        rps = point.request_throughput_rps
        if rps is None:
            return {}
        per_second, basis = rps, _shown("request_throughput_rps", rps)
        expected = {}
    else:
        per_second = point.completed / point.duration_s
        basis = f"{_shown('completed', point.completed)} / {_shown('duration_s', point.duration_s)}"
        expected = {"request_throughput_rps": (per_second, basis)}
    if out_mean is not None:
        expected["output_throughput_tps"] = (
            out_mean * per_second,
            f"{_shown('output_tokens_mean', out_mean)} x {basis}",
        )
        if in_mean is not None:
            expected["total_throughput_tps"] = (
                (in_mean + out_mean) * per_second,
                f"({_shown('input_tokens_mean', in_mean)} + output) x {basis}",
            )
    return {name: value for name, value in expected.items() if name not in derived}


def _disagreeing(point: Point, derived: frozenset[str]) -> Iterable[_Disagreement]:
    """Each stated throughput apart from what the counts give by more than rounding."""
    for name, (computed, how) in _expected(point, derived).items():
        stated = getattr(point, name)
        if stated is not None and math.isfinite(computed) and not agree(stated, computed):
            yield _Disagreement(name, stated, computed, how)


def _infinite(point: Point, derived: frozenset[str]) -> Iterable[tuple[str, str]]:
    """Counts that give no finite throughput (a duration of 1e-300 s): nothing to plan with."""
    for name, (computed, how) in _expected(point, derived).items():
        if not math.isfinite(computed):
            yield name, f"{how} is not a finite number"


def _latency_order(point: Point) -> Iterable[tuple[str, str]]:
    for stat in LATENCY_STATS:
        e2el = getattr(point, f"e2el_{stat}_ms")
        if e2el is None:
            continue
        for metric in ("ttft", "tpot"):
            value = getattr(point, f"{metric}_{stat}_ms")
            if value is not None and value > e2el and not agree(value, e2el):
                yield (
                    f"{metric}_{stat}_ms",
                    f"{stat} {metric.upper()} {value:.6g} ms exceeds {stat} E2EL {e2el:.6g} ms "
                    "(a request's last token cannot come before its first)",
                )


_QUANTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}


def _means(point: Point) -> Iterable[tuple[str, str]]:
    for metric in ("ttft", "tpot", "itl", "e2el"):
        mean = getattr(point, f"{metric}_mean_ms")
        if mean is None:
            continue
        for stat, q in _QUANTILES.items():
            value = getattr(point, f"{metric}_{stat}_ms")
            if value is not None and mean < (1 - q) * value and not agree(mean, (1 - q) * value):
                yield (
                    f"{metric}_mean_ms",
                    f"mean {metric.upper()} {mean:.6g} ms is below {1 - q:.2g} x {stat} "
                    f"{metric.upper()} {value:.6g} ms (at least {1 - q:.0%} of the requests "
                    f"took {value:.6g} ms or longer)",
                )


def _stream_speed(point: Point) -> Iterable[tuple[str, str]]:
    """A typical stream (mean or median TPOT) faster than any GPU decodes: `_FASTEST_TPOT_MS`."""
    for stat in ("mean", "p50"):
        value = getattr(point, f"tpot_{stat}_ms")
        if value is not None and 0 < value < _FASTEST_TPOT_MS:
            yield (
                f"tpot_{stat}_ms",
                f"{stat} TPOT {value:.6g} ms is a stream of {1000 / value:.3g} tokens/s, faster "
                f"than any GPU decodes one ({_FASTEST_TPOT_MS:g} ms a token at the fastest)",
            )


def _rate(point: Point, derived: frozenset[str]) -> tuple[float | None, str]:
    """The request throughput a plan would use, and the field it comes from."""
    if "duration_s" in derived:
        return point.request_throughput_rps, "request_throughput_rps"
    return point.completed / point.duration_s, "duration_s"


def _littles_law(point: Point, derived: frozenset[str]) -> Iterable[tuple[str, str]]:
    """More requests a second than `max_concurrency` in flight can complete: by Little's law a
    server with at most c requests in flight, each taking E2EL on average, completes at most
    c / E2EL a second, and a window cut at warm-up or drain counts at most c more. Only a rate
    above `_LITTLE_MARGIN` times that bound is refused: no window explains it."""
    c, e2el = point.max_concurrency, point.e2el_mean_ms
    rate, name = _rate(point, derived)
    if c is None or not e2el or not rate:
        return
    bound = c / (e2el / 1000) + c / (point.completed / rate)
    if rate > _LITTLE_MARGIN * bound:
        yield (
            name,
            f"{rate:.6g} requests completed a second, but at most {c} in flight taking mean "
            f"E2EL {e2el:.6g} ms complete {bound:.6g} a second, window edges included "
            "(Little's law)",
        )


def _send_rate(point: Point, derived: frozenset[str]) -> Iterable[tuple[str, str]]:
    """Requests completed much faster than they were sent: over a run, a server completes no
    more than it is sent. Poisson arrivals of `_FEWEST_SENT` requests or more span well over a
    third of their expected time, so only a rate `_SENT_MARGIN` times the offered one is
    refused (fewer requests are not checked)."""
    offered = point.offered_rate_rps
    rate, name = _rate(point, derived)
    if offered is None or math.isinf(offered) or not rate or point.completed < _FEWEST_SENT:
        return
    if rate > _SENT_MARGIN * offered:
        yield (
            name,
            f"{rate:.6g} requests completed a second, but they were sent at {offered:.6g} a "
            "second: no server completes requests faster than they are sent",
        )


def _within_duration(point: Point) -> Iterable[tuple[str, str]]:
    window_ms = point.duration_s * 1000
    for metric in ("ttft", "e2el"):
        for stat in LATENCY_STATS:
            value = getattr(point, f"{metric}_{stat}_ms")
            if value is not None and value > window_ms and not agree(value, window_ms):
                yield (
                    f"{metric}_{stat}_ms",
                    f"{stat} {metric.upper()} {value:.6g} ms is longer than the "
                    f"{_shown('duration_s', point.duration_s)} the requests were measured in",
                )
