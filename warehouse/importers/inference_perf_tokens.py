"""What an inference-perf stage's TPOT and ITL are per: output tokens, or streamed messages.

inference-perf before v0.5.0 took each request's TPOT as (last streamed message - first) /
(messages - 1) and its ITL as the gaps between messages (reportgen before commit 3b882ba,
"Derive TPOT, ITL from Response Tokens, not Chunks", kubernetes-sigs/inference-perf #410,
2026-04-24). A message is not a token: the KubeCon NA 2025 demos' vLLM streamed about two a
token, so their TPOT is half the per-token figure, and inference-sim's H100 runs show an ITL of
0.03-0.1 ms. Neither is fleetplan's TPOT or ITL, so neither is stored, and the level says why:

- **by the tool's version**: `benchmark_time_seconds` is a required field of every report since
  v0.5.0 (commit 7ebc8bb, 2026-04-16, eight days before the per-token change, both first
  released in v0.5.0); a stage report without it was written by an earlier release, whose
  formula is per message, whatever the stage's own figures show;
- **by the stage's own figures** (`per_chunk_proof`), for a report of any version (a build
  between those two commits): where the time from the first token to the end is more than its
  TPOT allows.

An llm-d benchmark report converted from an inference-perf run carries the same figures, and
says the harness and its version (`scenario.load.standardized.tool` and `tool_version`, 0.2
schema: llm-d-benchmark's own example says "inference-perf" "0.3.0"): `harness_before_per_token`
applies the version rule to what it says, and the same figures' proof applies to any report.

TTFT and E2EL are per request in every version and are kept.
"""

from __future__ import annotations

import re
from typing import Any

from fleetplan.warehouse.importers.base import Reader

# How far a stage's first-token-to-end time may exceed what its TPOT allows (`per_chunk_proof`):
# room for the time from the last token to the response's end, which the E2EL also counts.
PER_CHUNK_MARGIN = 1.5
# Written into every report by inference-perf v0.5.0 and later (absent before).
VERSION_MARK = "benchmark_time_seconds"
# The statistics (`tpot_p99_ms`, `itl_p50_ms`, ...) that are per message in the old formula.
PER_MESSAGE = ("tpot_", "itl_")
# The first release whose TPOT and ITL are per output token.
PER_TOKEN_RELEASE = (0, 5, 0)
_RELEASE = re.compile(r"(?<![\d.])v?(\d+)\.(\d+)(?:\.(\d+))?(?![\d.])")


def per_token_only(
    report: dict[str, Any], successes: Reader, stats: dict[str, float]
) -> tuple[dict[str, float], str | None]:
    """The stage's statistics without a TPOT and ITL that are per streamed message, and the
    note that says why they are gone (None where they are per token and kept)."""
    note = before_per_token(report, stats) or per_chunk_proof(successes, stats)
    if note is None:
        return stats, None
    return without_per_message(stats), note


def before_per_token(report: dict[str, Any], stats: dict[str, float]) -> str | None:
    """Why the stage's TPOT and ITL are per streamed message where its report predates
    inference-perf v0.5.0 (no `benchmark_time_seconds`); None otherwise, or where it states
    neither."""
    if VERSION_MARK in report or not any(k.startswith(PER_MESSAGE) for k in stats):
        return None
    return (
        "TPOT and ITL not stored: the report has no benchmark_time_seconds, so inference-perf "
        "before v0.5.0 wrote it, which timed streamed messages, not tokens: its "
        "time_per_output_token is (last message - first) / (messages - 1) and its "
        "inter_token_latency the gaps between messages (per token since v0.5.0); TTFT and E2EL "
        "are kept"
    )


def harness_before_per_token(tool: Any, version: Any, stats: dict[str, float | None]) -> str | None:
    """Why a level's TPOT and ITL are per streamed message where the report says inference-perf
    of a release before v0.5.0 made them (`tool`, `tool_version`: "0.3.0", "v0.4.1", an image
    tag "...:v0.2.0"); None where it says another tool, a later release, no release it can
    read, or where the level states neither."""
    if not isinstance(tool, str) or "inference" not in tool.lower() or "perf" not in tool.lower():
        return None
    if not any(k.startswith(PER_MESSAGE) and v is not None for k, v in stats.items()):
        return None
    found = _RELEASE.findall(str(version)) if isinstance(version, str | int | float) else []
    if not found:
        return None
    release = tuple(int(part or 0) for part in found[-1])
    if release >= PER_TOKEN_RELEASE:
        return None
    return (
        f"TPOT and ITL not stored: the report says {tool} {version}, a release before v0.5.0, "
        "which timed streamed messages, not tokens: its time_per_output_token is (last message "
        "- first) / (messages - 1) and its inter_token_latency the gaps between messages (per "
        "token since v0.5.0); TTFT and E2EL are kept"
    )


def per_chunk_proof(successes: Reader, stats: dict[str, float]) -> str | None:
    """`per_chunk_proof_of` an inference-perf stage, its output lengths from
    `successes.output_len`."""
    lengths = successes.obj.get("output_len")
    if not isinstance(lengths, dict):
        return None
    longest = Reader(lengths, successes.file, "successes.output_len").number("p90")
    return per_chunk_proof_of(stats, longest)


def per_chunk_proof_of(stats: dict[str, float | None], longest: float | None) -> str | None:
    """Why a level's TPOT cannot be per output token, where its own figures prove it; None
    where they do not (`longest`: its output length's P90). At least 20 % of the requests have
    an E2EL of at least its median and a TTFT, a TPOT and an output length of at most their
    P90s (each of the last three leaves out at most 10 %): each such request spent at least
    E2EL p50 - TTFT p90 from its first token to its end, of which its tokens after the first
    took TPOT x (output tokens - 1) <= TPOT p90 x (output p90 - 1); `PER_CHUNK_MARGIN` leaves
    room for the time after the last token."""
    e2el, ttft, tpot = (stats.get(k) for k in ("e2el_p50_ms", "ttft_p90_ms", "tpot_p90_ms"))
    if None in (e2el, ttft, tpot) or longest is None or longest < 2:
        return None
    span, most = e2el - ttft, tpot * (longest - 1)
    if span <= PER_CHUNK_MARGIN * most:
        return None
    return (
        f"TPOT and ITL not stored: the file's time_per_output_token (P90 {tpot:.3g} ms) cannot "
        f"be per output token: 20 % of the requests or more took at least {span:.0f} ms (E2EL "
        f"median - TTFT P90) from the first token to the end, where the {longest - 1:.3g} tokens "
        f"after the first (output P90 {longest:.3g}) at {tpot:.3g} ms make {most:.0f} ms: about "
        f"{span / (longest - 1):.3g} ms a token, so it counts streamed chunks, not tokens "
        "(inference-perf before its per-token chunk times)"
    )


def without_per_message(stats: dict[str, Any]) -> dict[str, Any]:
    """`stats` without its TPOT and ITL statistics."""
    return {k: v for k, v in stats.items() if not k.startswith(PER_MESSAGE)}
