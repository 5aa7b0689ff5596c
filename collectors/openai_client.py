"""Streaming requests to an OpenAI-compatible `/v1/completions` endpoint (vLLM, SGLang, TGI).

Timings follow vLLM's benchmark client: TTFT = send -> first chunk with choices; ITL = gaps between
later chunks; E2EL = send -> last token chunk; output tokens from the usage the server reports
(`stream_options.include_usage`), else the number of chunks.

A server cannot hold the collector or forge its numbers: a request fails (with its reason, as
data) when no token comes for `request_timeout_s` (SSE comments and keep-alives do not count),
when it has run `DEADLINE_FACTOR` x that in all, when it sends more chunks, lines or bytes than
the tokens asked for can take (`Budget`), when a chunk is not the JSON object the protocol has,
or when its usage is not whole token counts or contradicts what was asked and streamed.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass

import aiohttp

from fleetplan.collectors.requests_log import RequestResult
from fleetplan.core.strict import duplicate_key, no_key_dropped
from fleetplan.core.text import printable

# A request's whole wall-clock time is at most this many times its token timeout.
DEADLINE_FACTOR = 4
MAX_LINE_BYTES = 64 * 1024  # one SSE line (a chunk of one token is a few hundred bytes)
LARGEST_COUNT = 2**31 - 1  # what a token count can be (the run file's bound)


@dataclass(frozen=True, slots=True)
class Endpoint:
    base_url: str
    model: str
    api_key: str | None = None
    ignore_eos: bool = True
    request_timeout_s: float = 600.0  # no token from the server for this long: the request fails

    @property
    def completions_url(self) -> str:
        return self.base_url.rstrip("/") + "/v1/completions"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}


def new_session(endpoint: Endpoint, max_connections: int = 0) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=max_connections, force_close=False)
    timeout = aiohttp.ClientTimeout(
        total=None, sock_connect=10, sock_read=endpoint.request_timeout_s
    )
    return aiohttp.ClientSession(connector=connector, timeout=timeout, headers=endpoint.headers())


def _payload(endpoint: Endpoint, prompt: str, max_tokens: int) -> dict:
    payload = {
        "model": endpoint.model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if endpoint.ignore_eos:
        payload["ignore_eos"] = True
    return payload


@dataclass(frozen=True, slots=True)
class Budget:
    """What one streamed response may send, from the tokens asked for: a chunk per token (and a
    few more: a finish chunk, the usage), lines for those and as many comments, and bytes."""

    max_tokens: int

    @property
    def chunks(self) -> int:
        return self.max_tokens + 8

    @property
    def lines(self) -> int:
        return 4 * self.chunks + 64

    @property
    def bytes(self) -> int:
        return 4096 * self.chunks + MAX_LINE_BYTES


class Refused(Exception):
    """The response broke the protocol or its budget: the request fails with this reason."""


def token_count(value: object, name: str) -> int:
    """A token count as the server reported it: a whole number from 0 to 2^31 - 1, else
    refused (never truncated: 3.7 tokens is no count)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= LARGEST_COUNT:
        shown = printable(repr(value))
        raise Refused(f"usage {name} is {shown[:40]}: not a whole number of tokens")
    return value


class _Stream:
    """What a response streamed so far, chunk by chunk, checked against what was asked."""

    def __init__(self, result: RequestResult, budget: Budget, sent: float):
        self.result, self.budget, self.sent = result, budget, sent
        self.latest = sent
        self.chunks = 0
        self.usage: dict | None = None
        self.done = False

    def line(self, line: bytes, now: float) -> bool:
        """Take one SSE line; whether it carried a token."""
        if not line.startswith(b"data:"):
            return False  # a comment, an event name, a keep-alive
        data = line[5:].strip()
        if data == b"[DONE]":
            self.done = True
            return False
        try:
            chunk = json.loads(data)
        except (ValueError, RecursionError):
            raise Refused(f"a stream chunk is not JSON: {_shown(data)}") from None
        if not isinstance(chunk, dict):
            raise Refused(f"a stream chunk is not a JSON object: {_shown(data)}")
        if not no_key_dropped(chunk, data) and (twice := duplicate_key(data)):
            raise Refused(f"a stream chunk gives a key twice ({twice}): {_shown(data)}")
        choices, usage = chunk.get("choices"), chunk.get("usage")
        if choices is not None and not isinstance(choices, list):
            raise Refused(f"a stream chunk's choices are not a list: {_shown(data)}")
        if usage is not None and not isinstance(usage, dict):
            raise Refused(f"a stream chunk's usage is not an object: {_shown(data)}")
        if usage:
            self.usage = usage
        if not choices:
            return False
        self.chunks += 1
        if self.chunks > self.budget.chunks:
            raise Refused(
                f"the server streamed over {self.budget.chunks} chunks for max_tokens "
                f"{self.budget.max_tokens}"
            )
        if self.result.ttft_s is None:
            self.result.ttft_s = now - self.sent
        else:
            self.result.itl_s.append(now - self.latest)
        self.latest = now
        return True

    def output_tokens(self, ignore_eos: bool) -> int:
        """The output tokens, from the usage when the server reports one, checked against the
        chunks streamed and the tokens asked for."""
        asked = self.budget.max_tokens
        if self.usage is None:
            if self.chunks > asked + 1:
                raise Refused(f"the server streamed {self.chunks} chunks for max_tokens {asked}")
            return min(self.chunks, asked)
        if "prompt_tokens" in self.usage:
            prompt = token_count(self.usage["prompt_tokens"], "prompt_tokens")
            if prompt < 1 or prompt > 2 * self.result.input_tokens + 16:
                raise Refused(
                    f"the server counted {prompt} prompt tokens for a prompt of "
                    f"{self.result.input_tokens}"
                )
            self.result.input_tokens = prompt
        if "completion_tokens" not in self.usage:
            return min(self.chunks, asked)
        output = token_count(self.usage["completion_tokens"], "completion_tokens")
        if output > asked:
            raise Refused(f"the server reported {output} output tokens for max_tokens {asked}")
        if output < 1 or self.chunks > output + 1:
            raise Refused(f"the server reported {output} output tokens but streamed {self.chunks}")
        if ignore_eos and output != asked:
            raise Refused(
                f"the server reported {output} output tokens for max_tokens {asked} with "
                "ignore_eos (pass --no-ignore-eos for a server that does not honour it)"
            )
        return output


def _shown(data: bytes) -> str:
    text = printable(data[:60].decode("utf-8", "replace"))
    return text + ("..." if len(data) > 60 else "")


async def stream_completion(
    session: aiohttp.ClientSession,
    endpoint: Endpoint,
    prompt: str,
    *,
    input_tokens: int,
    max_tokens: int,
) -> RequestResult:
    """One completion, streamed; its timings, or its failure as data (`error`)."""
    payload = _payload(endpoint, prompt, max_tokens)
    result = RequestResult(input_tokens=input_tokens)
    sent = time.perf_counter()
    stream = _Stream(result, Budget(max_tokens), sent)
    idle = endpoint.request_timeout_s
    loop = asyncio.get_running_loop()
    hard = loop.time() + DEADLINE_FACTOR * idle
    try:
        async with asyncio.timeout_at(min(loop.time() + idle, hard)) as deadline:
            async with session.post(endpoint.completions_url, json=payload) as response:
                if response.status != 200:
                    body = await response.content.read(300)
                    text = printable(body.decode("utf-8", "replace"))
                    result.error = f"HTTP {response.status}: {text}"
                    return result
                await _read(
                    response, stream, lambda: deadline.reschedule(min(loop.time() + idle, hard))
                )
        result.output_tokens = stream.output_tokens(endpoint.ignore_eos)
    except TimeoutError:
        waited = "in all" if loop.time() >= hard - 1e-3 else "without a token"
        limit = DEADLINE_FACTOR * idle if waited == "in all" else idle
        result.error = f"TimeoutError: {limit:g} s {waited}"
        return result
    except Refused as error:
        result.error = f"refused: {error}"
        return result
    except aiohttp.ClientError as error:
        result.error = printable(f"{type(error).__name__}: {error}".strip(": ")[:500])
        return result
    except Exception as error:  # no response may end the run
        result.error = printable(f"unexpected {type(error).__name__}: {error}"[:500])
        return result
    if result.ttft_s is None:
        result.error = "the server streamed no token"
    elif not stream.done:
        result.error = "the stream ended before [DONE]"
    else:
        result.e2el_s = stream.latest - sent
    return result


async def _read(response: aiohttp.ClientResponse, stream: _Stream, token_came) -> None:
    """Read the SSE lines within the stream's budget, until [DONE] or the end."""
    budget = stream.budget
    pending = b""
    received = lines = 0
    async for block in response.content.iter_any():
        pending += block
        *complete, pending = pending.split(b"\n")
        if len(pending) > MAX_LINE_BYTES or any(len(raw) > MAX_LINE_BYTES for raw in complete):
            raise Refused(f"a stream line is over {MAX_LINE_BYTES} bytes")
        received += len(block)
        if received > budget.bytes:
            raise Refused(
                f"the server sent over {budget.bytes} bytes for max_tokens {budget.max_tokens}"
            )
        now = time.perf_counter()
        for raw in complete:
            lines += 1
            if lines > budget.lines:
                raise Refused(
                    f"the server sent over {budget.lines} lines for max_tokens {budget.max_tokens}"
                )
            if stream.line(raw.strip(), now):
                token_came()
            if stream.done:
                return
    if pending.strip():
        stream.line(pending.strip(), time.perf_counter())
