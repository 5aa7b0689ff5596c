"""Figures a file states that contradict each other: a file whose figures are impossible is
refused, naming both figures, before anything from it is stored; two stated figures that real
tools produce apart (they count differently) are kept, with a note on the point.

Checked once, on the canonical points every format produces (`fleetplan.warehouse.importers.
registry.parse` calls `check_runs`), so every format gets the same checks. Only figures the file
states are compared: a figure the format derived (`derived`: GenAI-Perf's, LLMPerf's, ML.ENERGY's
and inference-perf's duration is completed / their request throughput) is never checked against
the figures it was derived from, nor its own derivation.

Refused (impossible, whatever the tool):
- completed requests > requests sent;
- for every statistic (mean, p50 ... p99): TTFT <= E2EL and TPOT <= E2EL (each request's first
  token and each of its token gaps come before its last token; order statistics keep that), and,
  where the duration is stated, no TTFT or E2EL longer than it;
- a mean below (1 - q) x its q-quantile (p50, p90, p95, p99): latencies are never negative, so at
  least a fraction 1 - q of the requests take p_q or longer (Markov's inequality);
- (percentiles out of order, negative or non-finite values: the data contract refuses those).

Throughputs (request throughput = completed / duration; output throughput = output tokens (mean)
x completed / duration, or x request throughput where the duration is derived; total throughput
likewise with input + output tokens): within `_RELATIVE` (5 %, plus `_ABSOLUTE` 0.01 of the unit:
a figure rounded to two decimals) they agree; apart by up to `_COUNTING` (a factor of 2) they are
a note on the point, both kept: tools time their window and count tokens differently from the
figures they state beside it (GenAI-Perf 25.01 and 25.07 count output tokens per request and per
benchmark window differently: output throughput 25.8 tok/s beside 124.4 tokens x 0.315 req/s =
39.1, a factor 1.52; AIPerf 0.13.0's throughputs are 3.1 % off its duration). More than a factor
of 2 apart is no window or counting difference (a throughput of a million requests/s beside 200
requests in 51 s): refused. tests/test_consistency.py checks that every real file still imports.
- not checked: TTFT + TPOT x (output tokens - 1) = E2EL holds per request, not between means
  (the mean of a product is not the product of means): one long fast request and a short slow
  one give a mean E2EL a quarter of the means' product (tests/test_vllm_import.py), so only a
  per-request log can check it, and statistics recomputed from one agree by construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fleetplan.core.contract import LATENCY_STATS, Point, Run
from fleetplan.core.errors import InputError

_RELATIVE = 0.05
_ABSOLUTE = 0.01
_COUNTING = 2.0

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
    """The runs, with a note on each point whose stated figures disagree (and those notes as
    warnings); an InputError naming the two figures of the first impossible point."""
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
            notes = [n for _, n in disagreements(point, derived) if n not in point.notes]
            warnings += [f"{where}: {note}" for note in notes]
            points.append(point.model_copy(update={"notes": (*point.notes, *notes)}))
        checked.append(run.model_copy(update={"points": tuple(points)}))
    return checked, warnings


def contradiction(point: Point, derived: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """(the field, what contradicts it) for the first impossible figure of a point, else None."""
    checks = (
        _counts(point),
        _throughputs(point, derived, impossible=True),
        _latency_order(point),
        _means(point),
        () if "duration_s" in derived else _within_duration(point),
    )
    for check in checks:
        problem = next(iter(check), None)
        if problem is not None:
            return problem
    return None


def disagreements(point: Point, derived: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """(field, note) for each pair of stated figures apart by more than rounding and less than
    the impossible: both are kept, the note says so."""
    return list(_throughputs(point, derived, impossible=False))


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


def _throughputs(
    point: Point, derived: frozenset[str], *, impossible: bool
) -> Iterable[tuple[str, str]]:
    """Each stated throughput against what the stated counts give: beyond `_COUNTING` apart
    (`impossible`), or beyond rounding but within it (not `impossible`)."""
    out_mean, in_mean = point.output_tokens_mean, point.input_tokens_mean
    if "duration_s" in derived:
        rps = point.request_throughput_rps
        if rps is None:
            return
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
    for name, (computed, how) in expected.items():
        stated = getattr(point, name)
        if stated is None or name in derived or agree(stated, computed):
            continue
        if _counting_apart(stated, computed) == impossible:
            if impossible:
                yield name, f"{_shown(name, stated)}, but {how} = {computed:.6g}"
            else:
                yield (
                    name,
                    (
                        f"{_shown(name, stated)} as the file states, but {how} = {computed:.6g} "
                        "(tools count their window and tokens differently): both kept"
                    ),
                )


def _counting_apart(stated: float, computed: float) -> bool:
    """More than `_COUNTING` apart: no window or token counting explains it."""
    low, high = sorted((abs(stated), abs(computed)))
    return high > _COUNTING * low + _ABSOLUTE


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
