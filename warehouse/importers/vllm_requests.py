"""The per-request arrays of a vLLM serving result (`--save-detailed`: `ttfts`, `itls`,
`latencies`, `input_lens`, `output_lens`, `errors`, in seconds and tokens), checked against the
result's totals and turned into `RequestTimings`, from which the statistics are recomputed."""

from __future__ import annotations

import numpy as np

from fleetplan.core.stats import RequestTimings, pooled
from fleetplan.warehouse.importers.base import Reader


class CannotRecompute(Exception):
    """Per-request arrays are present but not enough to recompute; the reason is a warning."""


def request_timings(
    reader: Reader, completed: int, total_in: int | None, total_out: int | None
) -> RequestTimings | None:
    """The successful requests' timings; None without arrays. Arrays that contradict the
    result's totals are an InputError; arrays too incomplete to use, CannotRecompute."""
    if "ttfts" not in reader.obj:
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
    kept = [g for g, good in zip(itls, ok, strict=True) if good] if itls is not None else []
    gaps = _gaps(reader, kept)
    if latencies is not None:
        e2el = latencies[ok]
    else:  # the first token's time plus the gaps after it
        ends = np.cumsum([len(g) for g in kept])
        sums = np.concatenate(([0.0], np.cumsum(gaps)))
        e2el = ttfts[ok] + (sums[ends] - sums[np.concatenate(([0], ends[:-1]))])
    return RequestTimings(ttft_s=ttfts[ok], e2el_s=e2el, output_tokens=output_lens[ok], itl_s=gaps)


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
