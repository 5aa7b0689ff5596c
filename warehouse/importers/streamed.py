"""Levels whose token timings are not token timings: a run that did not stream, and gaps between
streamed chunks that arrived together.

- **Not streamed.** A client that does not stream gets the whole answer at once, and the tools
  then write the whole request's time as its time to first token (GenAI-Perf with `streaming:
  false`, a real export: TTFT mean and P50 equal to the request latency's to the microsecond).
  Where a level's TTFT equals its E2EL at the mean and the median (within `SAME`) while its
  requests produced more than one token each, its TTFT, TPOT and ITL are not what they name:
  they are dropped (unknown), its E2EL and throughputs kept, and a note says so.
- **Chunks together.** An ITL of 0 ms at every statistic the file has (SGLang's `lora_bench`,
  a real file: its median alone, 0) is no token's time: the stream's chunks came in bunches,
  so the gaps between them say nothing of the decode step. The ITL is dropped (unknown) and a
  note says so; TPOT, per request from TTFT and E2EL, is kept. A median of 0 beside a P90 that
  is not (inference-perf's zeros for the tokens inside a chunk) is kept as the tool gave it.

Applied to every format after parsing (`registry.parse`), as the other readings of a level are.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleetplan.core.contract import Point, Run
from fleetplan.warehouse.importers.offered import each_level

SAME = 1e-3  # relative: TTFT and E2EL equal but for rounding
_STATS = ("mean", "p50", "p90", "p95", "p99")

NOT_STREAMED = (
    "its time to first token equals its whole request's (mean and median) with {tokens:.0f} "
    "output tokens a request: the run did not stream, so TTFT, TPOT and ITL are unknown (its "
    "E2EL and throughputs are kept)"
)
CHUNKS_TOGETHER = (
    "its gaps between streamed chunks are 0 ms: the chunks arrived in bunches, so ITL is "
    "unknown (TPOT, per request from TTFT and E2EL, is kept)"
)


def _same(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and abs(a - b) <= SAME * max(abs(a), abs(b), 1e-9)


def _cleared(point: Point, metrics: Sequence[str]) -> Point:
    return point.model_copy(update={f"{m}_{s}_ms": None for m in metrics for s in _STATS})


def _read(point: Point) -> tuple[Point, list[str]]:
    tokens = point.output_tokens_mean
    if (
        tokens is not None
        and tokens > 1.5
        and _same(point.ttft_mean_ms, point.e2el_mean_ms)
        and _same(point.ttft_p50_ms, point.e2el_p50_ms)
    ):
        return _cleared(point, ("ttft", "tpot", "itl")), [NOT_STREAMED.format(tokens=tokens)]
    itl = [getattr(point, f"itl_{stat}_ms") for stat in _STATS]
    if point.itl_p50_ms == 0 and all(not v for v in itl) and (tokens is None or tokens > 1.5):
        return _cleared(point, ("itl",)), [CHUNKS_TOGETHER]
    return point, []


def stream_readings(runs: Sequence[Run]) -> tuple[list[Run], list[str]]:
    """The runs with each level's token timings dropped where they are not token timings, and
    the notes as warnings naming the level."""
    return each_level(runs, _read)
