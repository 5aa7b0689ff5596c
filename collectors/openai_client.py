"""Streaming requests to an OpenAI-compatible `/v1/completions` endpoint (vLLM, SGLang, TGI).

Timings follow vLLM's benchmark client: TTFT = send -> first chunk with choices; ITL = gaps between
later chunks; E2EL = send -> last token chunk; output tokens from the usage the server reports
(`stream_options.include_usage`), else the number of chunks.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import aiohttp

from fleetplan.collectors.requests_log import RequestResult


@dataclass(frozen=True, slots=True)
class Endpoint:
    base_url: str
    model: str
    api_key: str | None = None
    ignore_eos: bool = True
    request_timeout_s: float = 600.0  # no byte from the server for this long: the request fails

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
    chunks = 0
    usage_output: int | None = None
    done = False
    sent = time.perf_counter()
    latest = sent
    try:
        async with session.post(endpoint.completions_url, json=payload) as response:
            if response.status != 200:
                body = (await response.text())[:300]
                result.error = f"HTTP {response.status}: {body}"
                return result
            async for raw in response.content:
                line = raw.strip()
                if not line.startswith(b"data:"):
                    continue
                data = line[5:].strip()
                if data == b"[DONE]":
                    done = True
                    break
                now = time.perf_counter()
                chunk = json.loads(data)
                if chunk.get("choices"):
                    if result.ttft_s is None:
                        result.ttft_s = now - sent
                    else:
                        result.itl_s.append(now - latest)
                    latest = now
                    chunks += 1
                usage = chunk.get("usage")
                if usage:
                    usage_output = usage.get("completion_tokens")
                    if usage.get("prompt_tokens") is not None:
                        result.input_tokens = int(usage["prompt_tokens"])
    except (TimeoutError, aiohttp.ClientError, json.JSONDecodeError) as error:
        result.error = f"{type(error).__name__}: {error}".strip(": ") or "connection error"
        return result
    if result.ttft_s is None:
        result.error = "the server streamed no token"
    elif not done:
        result.error = "the stream ended before [DONE]"
    else:
        result.e2el_s = latest - sent
        result.output_tokens = int(usage_output) if usage_output is not None else chunks
    return result
