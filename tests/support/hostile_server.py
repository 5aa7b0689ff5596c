"""An OpenAI-compatible server that lies, stalls and floods, for the collector's hardening tests.

    python tests/support/hostile_server.py --port 8123 --mode MODE

Every second completion (the odd ones: 1st, 3rd, ...) is answered as a well-behaved server
would (one word-token per chunk, 2 ms apart, usage, `[DONE]`); the others, and the checks
before the first request, as MODE says (`MODES`). Everything it sends is bounded: an "endless"
stream stops after `LIMIT_S` seconds, so a collector that does not stop it still ends.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path

from aiohttp import web

if not __package__:  # run as a script (python tests/support/...): the checkout's top on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.inputs.openai_stub import (
    Words,
    end_stream,
    finish,
    openai_app,
    serve,
    sse,
)

MODEL = "hostile"
LIMIT_S = 60.0  # the longest any answer of this server lasts
TPOT_S = 0.002
ESCAPES = "\x1b[2J\x1b]0;owned\x07\nproblem: forged line"

# mode -> what it changes: the completions' usage, their stream, or a check's answer
USAGE = {
    "usage-huge": {"prompt_tokens": 8, "completion_tokens": 2_000_000_000},
    "usage-negative": {"prompt_tokens": 8, "completion_tokens": -4},
    "usage-over-int32": {"prompt_tokens": 8, "completion_tokens": 2**31 + 5},
    "usage-text": {"prompt_tokens": 8, "completion_tokens": "abc"},
    "usage-float": {"prompt_tokens": 8, "completion_tokens": 3.7},
    "usage-1e400": "1e400",  # written raw: JSON's largest float is smaller
    "usage-twice": "twice",  # written raw: completion_tokens twice, the last a forgery
    "usage-list": {"prompt_tokens": 8, "completion_tokens": [4]},
    "usage-zero": {"prompt_tokens": 0, "completion_tokens": 0},
    "usage-short": {"prompt_tokens": 8, "completion_tokens": 1},
    "stops-early": {"prompt_tokens": 8, "completion_tokens": 2},  # and streams 2 (ignore_eos)
}
STREAMS = {
    "chunk-number",  # `data: 5`
    "chunk-list",  # `data: [1, 2]`
    "chunk-bad-json",  # `data: {"choices": [`
    "long-line",  # one SSE line of 600 KiB
    "many-chunks",  # 300,000 chunks for any max_tokens
    "comments",  # an SSE comment every 0.2 s, never a token
    "endless",  # tokens as fast as it can, never [DONE]
    "instant",  # every token in one write: timings no GPU makes
    "http500-escapes",  # HTTP 500 with escape codes and a forged line in its body
}
CHECKS = {
    "version-number",
    "version-dict",
    "version-list",
    "version-long",
    "version-escapes",
    "version-newline",  # a plain version but for a trailing newline
    "version-fullwidth",  # full-width digits: letters and digits, not ASCII ones
    "models-html",
    "models-list",
    "models-twice",  # /v1/models gives a model's id twice
    "models-slow",  # /v1/models drips a byte every 0.5 s
    "models-huge",  # /v1/models sends 300 MB
    "tokenize-empty",  # /tokenize answers []
    "tokenize-string",
    "long-model",  # serves a model named with 244 characters
}
LATER = {"stall-later"}  # completions after the 6th stall for LIMIT_S (well-behaved before)
MODES = sorted({*USAGE, *STREAMS, *CHECKS, *LATER, "none"})
LONG_MODEL = "m" * 244


def make_app(mode: str) -> web.Application:
    words = Words()
    count = {"completions": 0}
    model = LONG_MODEL if mode == "long-model" else MODEL

    async def models(request: web.Request) -> web.StreamResponse:
        if mode == "models-html":
            return web.Response(text="<html><body>login</body></html>", content_type="text/html")
        if mode == "models-list":
            return web.json_response([{"id": model}])
        if mode == "models-twice":  # the model it serves, then another in the same key
            text = f'{{"object": "list", "data": [{{"id": "{model}", "id": "other"}}]}}'
            return web.Response(text=text, content_type="application/json")
        if mode in {"models-slow", "models-huge"}:
            response = web.StreamResponse(headers={"Content-Type": "application/json"})
            await response.prepare(request)
            block = b" " * (1 << 20) if mode == "models-huge" else b" "
            for _ in range(300 if mode == "models-huge" else int(LIMIT_S / 0.5)):
                await response.write(block)
                if mode == "models-slow":
                    await asyncio.sleep(0.5)
            return response
        return web.json_response({"object": "list", "data": [{"id": model, "object": "model"}]})

    async def version(_: web.Request) -> web.Response:
        answers = {
            "version-number": {"version": 7},
            "version-dict": {"version": {"major": 1}},
            "version-list": ["0.6"],
            "version-long": {"version": "v" * 5000},
            "version-escapes": {"version": "0.6" + ESCAPES},
            "version-newline": {"version": "0.6.3\n"},
            "version-fullwidth": {"version": "\uff10.\uff16"},
        }
        return web.json_response(answers.get(mode, {"version": "hostile-0"}))

    async def tokenize(request: web.Request) -> web.Response:
        body = await request.json()
        if mode == "tokenize-empty":
            return web.json_response({"tokens": [], "count": 0})
        if mode == "tokenize-string":
            return web.json_response({"tokens": "no", "count": 2})
        ids = words.token_ids(body["prompt"])
        return web.json_response({"tokens": ids, "count": len(ids)})

    async def completions(request: web.Request) -> web.StreamResponse:
        body = await request.json()
        count["completions"] += 1
        hostile = count["completions"] % 2 == 0
        if mode == "stall-later" and count["completions"] > 6:
            await asyncio.sleep(LIMIT_S)
        if hostile and mode == "http500-escapes":
            return web.Response(status=500, text=ESCAPES)
        prompt_tokens = len(words.token_ids(body["prompt"]))
        tokens = int(body["max_tokens"])
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        with contextlib.suppress(TimeoutError, ConnectionError):
            await asyncio.wait_for(
                _stream(response, mode if hostile else "none", tokens, prompt_tokens), LIMIT_S
            )
        return response

    async def _stream(response: web.StreamResponse, mode: str, tokens: int, prompt: int) -> None:
        def chunk(i: int) -> bytes:
            return sse({"choices": [{"index": 0, "text": f" t{i}", "finish_reason": None}]})

        if mode == "comments":
            while True:
                await response.write(b": still thinking\n\n")
                await asyncio.sleep(0.2)
        if mode == "endless":
            i = 0
            while True:
                await response.write(chunk(i))
                i += 1
                if i % 100 == 0:
                    await asyncio.sleep(0)
        streamed = {"many-chunks": 300_000, "stops-early": 2}.get(mode, tokens)
        raw = {
            "chunk-number": b"data: 5\n\n",
            "chunk-list": b"data: [1, 2]\n\n",
            "chunk-bad-json": b'data: {"choices": [\n\n',
            "long-line": b'data: {"choices": [{"text": "' + b"x" * (600 << 10) + b'"}]}\n\n',
        }
        if mode in raw:
            await response.write(raw[mode])
        if mode == "instant":
            await response.write(b"".join(chunk(i) for i in range(tokens)))
        else:
            for i in range(streamed):
                await response.write(chunk(i))
                if mode != "many-chunks":
                    await asyncio.sleep(TPOT_S)
                elif i % 100 == 0:
                    await asyncio.sleep(0)
        usage = USAGE.get(mode, {"prompt_tokens": prompt, "completion_tokens": tokens})
        if usage not in ("1e400", "twice"):
            await end_stream(response, usage)
            return
        counts = (
            b'"completion_tokens": 1e400'
            if usage == "1e400"
            else f'"completion_tokens": {tokens}, "completion_tokens": 2000000000'.encode()
        )
        await response.write(
            b'data: {"choices": [], "usage": {"prompt_tokens": 8, ' + counts + b"}}\n\n"
        )
        await finish(response)

    async def completions_seen(_: web.Request) -> web.Response:
        return web.json_response(count)

    return openai_app(
        words,
        completions=completions,
        debug=("completions", completions_seen),
        models=models,
        version=version,
        tokenize=tokenize,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mode", choices=MODES, default="none")
    args = parser.parse_args()
    serve(make_app(args.mode), args.port)


if __name__ == "__main__":
    main()
