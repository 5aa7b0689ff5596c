"""Open-loop load: Poisson (gamma) arrivals at a request rate, or all at once, or a fixed
number in flight; one load level at a time, with a live progress bar."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from fleetplan.collectors.openai_client import Endpoint, new_session, stream_completion
from fleetplan.collectors.requests_log import RequestResult

# Error names (RequestResult.error starts with one) that mean the server is gone, not just slow.
CONNECTION_ERRORS = (
    "ClientConnectorError",
    "ServerDisconnectedError",
    "ClientOSError",
    "SocketTimeoutError",
    "ConnectionTimeoutError",
    "ServerTimeoutError",
    "TimeoutError",
)


def arrival_offsets(count: int, rate: float, burstiness: float, seed: int) -> np.ndarray:
    """Send times from the level's start: gamma gaps (Poisson at burstiness 1), rescaled so that
    the N requests span exactly N / rate seconds; all zeros at an infinite rate."""
    if math.isinf(rate):
        return np.zeros(count)
    rng = np.random.default_rng(seed)
    gaps = rng.gamma(shape=burstiness, scale=1.0 / (rate * burstiness), size=count)
    ends = np.cumsum(gaps)
    ends *= (count / rate) / ends[-1]
    return np.concatenate(([0.0], ends[:-1]))


@dataclass
class LevelOutcome:
    results: list[RequestResult]
    duration_s: float
    interrupted: bool = False
    unreachable: bool = False  # connection-level failures: the server died or stopped answering
    notes: list[str] = field(default_factory=list)


async def run_level(
    endpoint: Endpoint,
    prompts: Sequence[tuple[str, int]],
    *,
    output_len: int,
    rate: float,
    burstiness: float = 1.0,
    seed: int = 0,
    max_concurrency: int | None = None,
    on_result: Callable[[RequestResult, float], None] | None = None,
) -> LevelOutcome:
    """Send every prompt once at its arrival time; returns all results, failures included."""
    offsets = arrival_offsets(len(prompts), rate, burstiness, seed)
    results: list[RequestResult | None] = [None] * len(prompts)
    limit = asyncio.Semaphore(max_concurrency) if max_concurrency else None
    async with new_session(endpoint, max_concurrency or 0) as session:
        start = time.perf_counter()

        async def one(i: int) -> None:
            delay = start + offsets[i] - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            text, tokens = prompts[i]
            if limit is not None:
                await limit.acquire()
            try:
                sent = time.perf_counter() - start
                result = await stream_completion(
                    session, endpoint, text, input_tokens=tokens, max_tokens=output_len
                )
            finally:
                if limit is not None:
                    limit.release()
            result.start_s = sent
            results[i] = result
            if on_result is not None:
                on_result(result, time.perf_counter() - start)

        tasks = [asyncio.create_task(one(i)) for i in range(len(prompts))]
        interrupted = False
        try:
            await asyncio.gather(*tasks)
        except asyncio.CancelledError:
            interrupted = True
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        duration = time.perf_counter() - start
    finished = [r if r is not None else RequestResult(error="interrupted") for r in results]
    unreachable = any(r.error.startswith(CONNECTION_ERRORS) for r in finished)
    return LevelOutcome(finished, duration, interrupted=interrupted, unreachable=unreachable)
