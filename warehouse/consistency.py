"""Figures a file states that contradict each other: a file is refused, naming both figures,
before anything from it is stored.

Checked once, on the canonical points every format produces (`fleetplan.warehouse.importers.
registry.parse` calls `check_runs`), so every format gets the same checks. A point states its
completed requests and its duration; where it also states these, they must agree:

- completed requests <= requests sent;
- request throughput = completed / duration; output throughput = output tokens (mean) x
  completed / duration; total throughput = (input + output tokens, mean) x completed / duration;
- for every statistic (mean, p50 ... p99): TTFT <= E2EL and TPOT <= E2EL (each request's first
  token and each of its token gaps come before its last token; order statistics keep that), and
  no TTFT or E2EL longer than the duration (a completed request lies inside the measured window);
- a mean at least (1 - q) x its q-quantile (p50, p90, p95, p99): latencies are never negative,
  so at least a fraction 1 - q of the requests take p_q or longer (Markov's inequality);
- not checked: TTFT + TPOT x (output tokens - 1) = E2EL holds per request, not between means
  (the mean of a product is not the product of means): one long fast request and a short slow
  one give a mean E2EL a quarter of the means' product (tests/test_vllm_import.py), so only a
  per-request log can check it, and statistics recomputed from one agree by construction.

Tolerance: two figures agree when they differ by at most 5% of the larger (`_RELATIVE`), plus
0.01 of the unit (`_ABSOLUTE`: a figure rounded to two decimals). Tools time their window
slightly differently from the duration they state: the largest gap between a stated and a
computed throughput in the real files of every tool (tests/fixtures/formats, ../shared/data) is
3.1% (AIPerf 0.13.0); tests/test_consistency.py checks that every one of them still imports.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from fleetplan.core.contract import LATENCY_STATS, Point, Run
from fleetplan.core.errors import InputError

_RELATIVE = 0.05
_ABSOLUTE = 0.01

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


def check_runs(runs: Sequence[Run], *, file: str) -> None:
    """An InputError naming the two figures of the first point that contradict each other."""
    for r, run in enumerate(runs):
        for i, point in enumerate(run.points):
            problem = contradiction(point)
            if problem is not None:
                field, message = problem
                where = f"run {r + 1} of {len(runs)}, level {i + 1} of {len(run.points)}"
                raise InputError(
                    f"{where}: the file contradicts itself: {message}", file=file, field=field
                )


def contradiction(point: Point) -> tuple[str, str] | None:
    """(the field, what contradicts it) for the first contradiction in a point, else None."""
    checks = (_counts, _throughputs, _latency_order, _means, _within_duration)
    for check in checks:
        problem = next(iter(check(point)), None)
        if problem is not None:
            return problem
    return None


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


def _throughputs(point: Point) -> Iterable[tuple[str, str]]:
    per_second = point.completed / point.duration_s
    basis = f"{_shown('completed', point.completed)} / {_shown('duration_s', point.duration_s)}"
    out_mean, in_mean = point.output_tokens_mean, point.input_tokens_mean
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
        if stated is not None and not agree(stated, computed):
            yield name, f"{_shown(name, stated)}, but {how} = {computed:.6g}"


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
