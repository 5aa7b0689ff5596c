"""What the test servers (`stream_server.py` here, tests/support/`hostile_server.py`) share: word
tokens for `/tokenize` and `/detokenize`, the OpenAI-compatible routes, a stream's last chunks, and
serving on 127.0.0.1. Each server keeps only what makes it itself (its delays, faults or lies)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class Words:
    """Tokens are words: each new word gets the next id, for the life of the server."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.words: list[str] = []

    def token_ids(self, text: str) -> list[int]:
        for word in text.split():
            if word not in self.ids:
                self.ids[word] = len(self.words)
                self.words.append(word)
        return [self.ids[word] for word in text.split()]

    def text(self, ids: list[int]) -> str:
        return " ".join(self.words[i] for i in ids)


def sse(payload: object) -> bytes:
    """One server-sent event of a JSON payload."""
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


async def end_stream(response: web.StreamResponse, usage: object) -> None:
    """A completion stream's end: the usage chunk, `[DONE]`, end of the body."""
    await response.write(sse({"choices": [], "usage": usage}))
    await finish(response)


async def finish(response: web.StreamResponse) -> None:
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()


def openai_app(
    words: Words,
    *,
    completions: Handler,
    debug: tuple[str, Handler],
    model: str = "",
    **handlers: Handler,
) -> web.Application:
    """The routes a collector calls (`/v1/models` serving `model`, `/version`, `/tokenize`,
    `/detokenize` on `words`, `/v1/completions`) and the server's own `/debug/NAME` route, for
    the test to read back; `handlers` (models=, version=, tokenize=) replace the plain ones."""

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": model, "object": "model"}]})

    async def server_version(_: web.Request) -> web.Response:
        return web.json_response({"version": "test-0"})

    async def tokenize(request: web.Request) -> web.Response:
        ids = words.token_ids((await request.json())["prompt"])
        return web.json_response({"tokens": ids, "count": len(ids)})

    async def detokenize(request: web.Request) -> web.Response:
        return web.json_response({"prompt": words.text((await request.json())["tokens"])})

    chosen = {"models": models, "version": server_version, "tokenize": tokenize}
    assert set(handlers) <= set(chosen), f"no route for {set(handlers) - set(chosen)}"
    chosen.update(handlers)
    app = web.Application()
    app.add_routes(
        [
            web.get("/v1/models", chosen["models"]),
            web.get("/version", chosen["version"]),
            web.post("/tokenize", chosen["tokenize"]),
            web.post("/detokenize", detokenize),
            web.post("/v1/completions", completions),
            web.get(f"/debug/{debug[0]}", debug[1]),
        ]
    )
    return app


def serve(app: web.Application, port: int) -> None:
    """Serve `app` on 127.0.0.1:`port` until killed, quietly."""
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)
