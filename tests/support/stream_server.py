"""A small OpenAI-compatible streaming server for tests, with set delays and faults.

    python tests/support/stream_server.py --port 8123 --ttft-ms 50 --tpot-ms 10 [--fault ...]

Tokens are words; `/tokenize` and `/detokenize` work on them. Each completion streams one token
per chunk, the first `ttft_ms` after the request arrives and then every `tpot_ms` (scheduled
against the clock, so delays do not drift), then a usage chunk and `[DONE]`.
Faults: `http500` (every request fails), `close` (the connection drops after 3 tokens),
`hang` (the server stops sending after 3 tokens), `die-after=N` (the process exits after N
completions have started).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time

from aiohttp import web

MODEL = "stream-test"


async def _until(deadline: float) -> None:
    """Sleep until a perf_counter deadline, precisely: the event loop's timers round up to the
    millisecond, so the last stretch yields in a tight loop instead."""
    coarse = deadline - time.perf_counter() - 0.002
    if coarse > 0:
        await asyncio.sleep(coarse)
    while time.perf_counter() < deadline:
        await asyncio.sleep(0)


def make_app(ttft_s: float, tpot_s: float, fault: str) -> web.Application:
    vocab: dict[str, int] = {}
    timings: dict[str, dict[str, float]] = {}  # prompt -> when it arrived, first and last write
    words: list[str] = []
    started = {"count": 0}
    die_after = int(fault.split("=")[1]) if fault.startswith("die-after=") else None

    def token_ids(text: str) -> list[int]:
        ids = []
        for word in text.split():
            if word not in vocab:
                vocab[word] = len(words)
                words.append(word)
            ids.append(vocab[word])
        return ids

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": MODEL, "object": "model"}]})

    async def version(_: web.Request) -> web.Response:
        return web.json_response({"version": "test-0"})

    async def tokenize(request: web.Request) -> web.Response:
        body = await request.json()
        ids = token_ids(body["prompt"])
        return web.json_response({"tokens": ids, "count": len(ids)})

    async def detokenize(request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response({"prompt": " ".join(words[i] for i in body["tokens"])})

    async def completions(request: web.Request) -> web.StreamResponse:
        arrived = time.perf_counter()
        body = await request.json()
        started["count"] += 1
        if die_after is not None and started["count"] > die_after:
            os._exit(1)  # the server dies mid-level
        if fault == "http500":
            return web.json_response({"error": "boom"}, status=500)
        prompt_tokens = len(token_ids(body["prompt"]))
        record = timings.setdefault(body["prompt"], {"arrived": arrived})
        count = int(body["max_tokens"])
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for i in range(count):
            await _until(arrived + ttft_s + i * tpot_s)
            if i == 3 and fault == "close":
                request.transport.close()
                return response
            if i == 3 and fault == "hang":
                await asyncio.sleep(3600)
            chunk = {
                "id": "x",
                "object": "text_completion",
                "model": MODEL,
                "choices": [{"index": 0, "text": f" t{i}", "finish_reason": None}],
            }
            await response.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            record.setdefault("first_write", time.perf_counter())
            record["last_write"] = time.perf_counter()
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": count,
            "total_tokens": prompt_tokens + count,
        }
        await response.write(
            b"data: " + json.dumps({"choices": [], "usage": usage}).encode() + b"\n\n"
        )
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def debug_timings(_: web.Request) -> web.Response:
        # perf_counter is CLOCK_MONOTONIC on Linux: comparable with the client's in another process
        return web.json_response(timings)

    app = web.Application()
    app.add_routes(
        [
            web.get("/v1/models", models),
            web.get("/version", version),
            web.post("/tokenize", tokenize),
            web.post("/detokenize", detokenize),
            web.post("/v1/completions", completions),
            web.get("/debug/timings", debug_timings),
        ]
    )
    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ttft-ms", type=float, default=50.0)
    parser.add_argument("--tpot-ms", type=float, default=10.0)
    parser.add_argument("--fault", default="none")
    args = parser.parse_args()
    web.run_app(
        make_app(args.ttft_ms / 1000, args.tpot_ms / 1000, args.fault),
        host="127.0.0.1",
        port=args.port,
        print=None,
        access_log=None,
    )


if __name__ == "__main__":
    main()
