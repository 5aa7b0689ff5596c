"""The per-request arrays of a vLLM serving result (`--save-detailed`: `ttfts`, `itls`,
`latencies`, `input_lens`, `output_lens`, `errors`, in seconds and tokens), checked against the
result's totals and turned into `RequestTimings`, from which the statistics are recomputed."""

from __future__ import annotations

import numpy as np

from fleetplan.core.contract import RequestLog
from fleetplan.core.stats import RequestTimings, pooled
from fleetplan.warehouse.importers.base import Reader, build


class CannotRecompute(Exception):
    """Per-request arrays are present but not enough to recompute; the reason is a warning."""


def request_timings(
    reader: Reader, completed: int, total_in: int | None, total_out: int | None
) -> RequestTimings | None:
    """The successful requests' timings; None without arrays. Arrays that contradict the
    result's totals are an InputError; arrays too incomplete to use, CannotRecompute."""
    if reader.obj.get("ttfts") is None:  # no per-request arrays (absent, or null)
        return None
    ttfts = reader.array("ttfts", None)
    n = ttfts.size
    output_lens = reader.array("output_lens", n)
    input_lens = reader.array("input_lens", n)
    latencies = reader.array("latencies", n)
    itls = reader.obj.get("itls")
    if itls is not None and (
        not isinstance(itls, list) or len(itls) != n or not all(isinstance(g, list) for g in itls)
    ):
        raise reader.error("itls", f"expected a list of {n} lists of chunk gaps (seconds)")
    ok = _succeeded(reader, n, completed)
    _check_total(reader, "total_input_tokens", total_in, "input_lens", input_lens, ok)
    if output_lens is None or (itls is None and latencies is None):
        raise CannotRecompute("`output_lens` and `itls` or `latencies` are needed")
    if output_lens.size and (output_lens != np.round(output_lens)).any():
        raise reader.error("output_lens", "expected whole numbers of tokens")
    _check_total(reader, "total_output_tokens", total_out, "output_lens", output_lens, ok)
    # A success that streamed no token (0 output tokens, a TTFT of 0: vLLM 0.6's files) has no
    # first token to time: left out of the statistics, not timed at 0 ms
    silent = ok & (output_lens == 0) & (ttfts == 0)
    ok = ok & ~silent
    kept = [g for g, good in zip(itls, ok, strict=True) if good] if itls is not None else []
    gaps = _gaps(reader, kept)
    if latencies is not None:
        e2el = latencies[ok]
    else:  # the first token's time plus the gaps after it
        ends = np.cumsum([len(g) for g in kept])
        sums = np.concatenate(([0.0], np.cumsum(gaps)))
        e2el = ttfts[ok] + (sums[ends] - sums[np.concatenate(([0], ends[:-1]))])
    return RequestTimings(
        ttft_s=ttfts[ok],
        e2el_s=e2el,
        output_tokens=output_lens[ok],
        itl_s=gaps,
        silent=int(silent.sum()),
    )


def _succeeded(reader: Reader, n: int, completed: int) -> np.ndarray:
    """Which of the n requests succeeded: by `errors`, or all when as many as completed."""
    errors = reader.obj.get("errors")
    if errors is not None:
        if not isinstance(errors, list) or len(errors) != n:
            raise reader.error("errors", f"expected a list of {n} error texts")
        ok = np.array([not e for e in errors], dtype=bool)
    elif n == completed:
        ok = np.ones(n, dtype=bool)
    else:
        raise CannotRecompute("no `errors` array says which requests failed")
    if int(ok.sum()) != completed:
        raise reader.error(
            "completed", f"is {completed} but the per-request data has {int(ok.sum())} successes"
        )
    return ok


def _check_total(
    reader: Reader,
    key: str,
    total: int | None,
    array_key: str,
    lengths: np.ndarray | None,
    ok: np.ndarray,
) -> None:
    if lengths is not None and total is not None and int(lengths[ok].sum()) != total:
        raise reader.error(
            key,
            f"is {total} but {array_key} of the completed requests sum to {int(lengths[ok].sum())}",
        )


def _gaps(reader: Reader, kept: list[list]) -> np.ndarray:
    """The successful requests' chunk gaps, pooled, in seconds."""
    try:
        gaps = np.asarray(pooled(kept)) if kept else np.zeros(0)
    except (TypeError, ValueError):  # a nested or ragged element
        raise reader.error("itls", "expected lists of chunk gaps (numbers, seconds)") from None
    if gaps.size and (
        gaps.dtype.kind not in "if" or not np.isfinite(gaps).all() or (gaps < 0).any()
    ):
        raise reader.error("itls", "expected non-negative finite chunk gaps (seconds)")
    return gaps.astype(float)


def request_log(reader: Reader, completed: int) -> RequestLog | None:
    """The per-request log with send times (`--save-detailed` results that have `start_times`),
    for the send-time judgement (`fleetplan.core.load`) and the rate requests were really sent
    at; None without `start_times` or without the arrays a log needs."""
    if "start_times" not in reader.obj or "ttfts" not in reader.obj:
        return None
    starts = reader.array("start_times", None)
    n = starts.size
    ttfts = reader.array("ttfts", n)
    latencies = reader.array("latencies", n)
    input_lens = reader.array("input_lens", n)
    output_lens = reader.array("output_lens", n)
    if n < 2 or latencies is None or input_lens is None or output_lens is None:
        return None
    try:
        ok = _succeeded(reader, n, completed)
    except CannotRecompute:
        return None
    itls = reader.obj.get("itls")
    gaps = itls if isinstance(itls, list) and len(itls) == n else [[] for _ in range(n)]
    errors = reader.obj.get("errors") if isinstance(reader.obj.get("errors"), list) else None
    start = float(starts.min())
    return build(
        RequestLog,
        reader.file,
        reader.where,
        start_s=tuple(float(t) - start for t in starts),
        ttft_s=tuple(float(t) if good else None for t, good in zip(ttfts, ok, strict=True)),
        e2el_s=tuple(float(t) if good else None for t, good in zip(latencies, ok, strict=True)),
        itl_s=tuple(tuple(g) if good else () for g, good in zip(gaps, ok, strict=True)),
        input_tokens=tuple(int(v) for v in input_lens),
        output_tokens=tuple(int(v) for v in output_lens),
        error=tuple(
            "" if good else (str(errors[i])[:2000] if errors else "failed") or "failed"
            for i, good in enumerate(ok)
        ),
    )
