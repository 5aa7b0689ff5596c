"""A small OpenAI-compatible streaming server for tests, with set delays and faults.

    python benchmarks/inputs/stream_server.py --port 8123 --ttft-ms 50 --tpot-ms 10 [--slots K]
        [--fault ...]

Tokens are words; `/tokenize` and `/detokenize` work on them. Each completion streams one token
per chunk, the first `ttft_ms` after its generation starts and then every `tpot_ms` (scheduled
against the clock, so delays do not drift), then a usage chunk and `[DONE]`.

A known capacity (`--slots K`): at most K completions are generated at once, the others wait in
one FIFO queue (their TTFT counts the wait). With T output tokens a completion holds its slot
for ttft + tpot x (T - 1), so the server sustains at most K / (ttft + tpot x (T - 1)) req/s:
below that rate a request arriving on schedule finds a free slot, above it the queue, and TTFT,
grow without bound. Without `--slots` (0) every completion starts at once.
Faults: `http500` (every request fails), `close` (the connection drops after 3 tokens),
`hang` (the server stops sending after 3 tokens), `die-after=N` (the process exits after N
completions have started).
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import os
import time
from collections import deque

from aiohttp import web

try:
    from benchmarks.inputs.openai_stub import Words, end_stream, openai_app, serve, sse
except (
    ModuleNotFoundError
):  # run as a script (python benchmarks/inputs/...): its folder is on the path
    from openai_stub import Words, end_stream, openai_app, serve, sse

MODEL = "stream-test"


async def _until(deadline: float) -> None:
    """Sleep until a perf_counter deadline, precisely: the event loop's timers round up to the
    millisecond, so the last stretch yields in a tight loop instead."""
    coarse = deadline - time.perf_counter() - 0.002
    if coarse > 0:
        await asyncio.sleep(coarse)
    while time.perf_counter() < deadline:
        await asyncio.sleep(0)


class Slots:
    """At most `count` completions at once, the others waiting in arrival order (asyncio's
    Semaphore does not promise FIFO wake-ups on every Python version); `count` 0: no limit.

    A slot is free when its completion was due to end, not when a busy machine let it end: the
    next one starts at that time (or on arrival, if later), and a late write is caught up at
    once. So the server sustains exactly count / (ttft + tpot x (tokens - 1)) req/s however
    loaded the machine running it; delays show as jitter, never as lost capacity."""

    def __init__(self, count: int):
        self.limited = count > 0
        self.free_at = [0.0] * count  # a heap: when each free slot's last completion was due
        self.waiting: deque[asyncio.Future] = deque()

    async def acquire(self, arrived: float) -> float:
        """Wait for a slot; when generation starts (on the schedule, maybe just past)."""
        if not self.limited:
            return arrived
        if self.free_at and not self.waiting:
            return max(arrived, heapq.heappop(self.free_at))
        ticket = asyncio.get_running_loop().create_future()
        self.waiting.append(ticket)
        try:
            due = await ticket  # release() hands its slot straight to the first in line
        except asyncio.CancelledError:
            if ticket.done() and not ticket.cancelled():
                self.release(ticket.result())  # handed a slot while being cancelled: pass it on
            else:
                self.waiting.remove(ticket)
            raise
        return max(arrived, due)

    def release(self, due: float) -> None:
        """Give the slot back; `due`: when its completion was scheduled to end."""
        if not self.limited:
            return
        while self.waiting:
            ticket = self.waiting.popleft()
            if not ticket.done():
                ticket.set_result(due)
                return
        heapq.heappush(self.free_at, due)


def make_app(ttft_s: float, tpot_s: float, fault: str, slots: int = 0) -> web.Application:
    words = Words()
    # prompt -> when it arrived, joined the queue, began generating, first and last write
    timings: dict[str, dict[str, float]] = {}
    started = {"count": 0}
    generating = Slots(slots)
    die_after = int(fault.split("=")[1]) if fault.startswith("die-after=") else None

    async def completions(request: web.Request) -> web.StreamResponse:
        arrived = time.perf_counter()
        body = await request.json()
        started["count"] += 1
        if die_after is not None and started["count"] > die_after:
            os._exit(1)  # the server dies mid-level
        if fault == "http500":
            return web.json_response({"error": "boom"}, status=500)
        prompt_tokens = len(words.token_ids(body["prompt"]))
        record = timings.setdefault(body["prompt"], {"arrived": arrived})
        count = int(body["max_tokens"])
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        record["queued"] = time.perf_counter()
        begun = await generating.acquire(arrived)  # on arrival, or once a slot is free
        # The slot is given back when the completion is due to end, by a timer, not when its
        # writes end: timers fire in the order they are due, so on a busy machine a writer that
        # lags cannot hand a later slot to the next in line before an earlier one (seen once,
        # 2026-12-06: a start 0.27 ms past its due); an early end (a fault) keeps it till then.
        due = begun + ttft_s + tpot_s * max(count - 1, 0)
        if generating.limited:
            asyncio.get_running_loop().call_later(
                max(due - time.perf_counter(), 0.0), generating.release, due
            )
        await _stream(response, request, record, begun, count, prompt_tokens)
        return response

    async def _stream(
        response: web.StreamResponse,
        request: web.Request,
        record: dict[str, float],
        begun: float,
        count: int,
        prompt_tokens: int,
    ) -> None:
        record["generation_start"] = begun
        for i in range(count):
            await _until(begun + ttft_s + i * tpot_s)
            if i == 3 and fault == "close":
                request.transport.close()
                return
            if i == 3 and fault == "hang":
                await asyncio.sleep(3600)
            chunk = {
                "id": "x",
                "object": "text_completion",
                "model": MODEL,
                "choices": [{"index": 0, "text": f" t{i}", "finish_reason": None}],
            }
            await response.write(sse(chunk))
            record.setdefault("first_write", time.perf_counter())
            record["last_write"] = time.perf_counter()
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": count,
            "total_tokens": prompt_tokens + count,
        }
        await end_stream(response, usage)
        record["ended"] = time.perf_counter()  # the usage chunk and [DONE] written

    async def debug_timings(_: web.Request) -> web.Response:
        # perf_counter is CLOCK_MONOTONIC on Linux: comparable with the client's in another process
        return web.json_response(timings)

    return openai_app(words, model=MODEL, completions=completions, debug=("timings", debug_timings))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ttft-ms", type=float, default=50.0)
    parser.add_argument("--tpot-ms", type=float, default=10.0)
    parser.add_argument("--fault", default="none")
    parser.add_argument("--slots", type=int, default=0, help="completions generated at once")
    args = parser.parse_args()
    serve(make_app(args.ttft_ms / 1000, args.tpot_ms / 1000, args.fault, args.slots), args.port)


if __name__ == "__main__":
    main()
