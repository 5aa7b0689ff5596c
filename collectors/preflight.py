"""The collector's small requests to a server before and around the measurement (`/v1/models`,
`/version`, `/tokenize`): each within a wall-clock deadline and a byte budget, its answer JSON or
a reason. A server that drips its answer, sends 300 MB or answers HTML holds nothing."""

from __future__ import annotations

import json
import time

import requests

from fleetplan.core.strict import duplicate_key, no_key_dropped
from fleetplan.core.text import printable

CHECK_DEADLINE_S = 5.0  # a check before the first request
MAX_ANSWER_BYTES = 4 * 1024 * 1024


class NoAnswer(Exception):
    """The server did not answer in time, or not with JSON: the reason, in words."""


def fetch_json(
    method: str,
    url: str,
    *,
    payload: object | None = None,
    headers: dict[str, str] | None = None,
    deadline_s: float = CHECK_DEADLINE_S,
    max_bytes: int = MAX_ANSWER_BYTES,
) -> tuple[int, object | None]:
    """(HTTP status, the JSON answer; None when not JSON). Raises `requests.ConnectionError` for
    a refused connection, NoAnswer past the deadline or the budget, or for JSON that gives a key
    twice (the last would silently win)."""
    end = time.monotonic() + deadline_s
    try:
        with requests.request(
            method,
            url,
            json=payload,
            headers=headers,
            timeout=(min(deadline_s, 5.0), deadline_s),
            stream=True,
        ) as response:
            body = bytearray()
            # read1: what has come, at once (a read of a size waits for all of it, drip by drip)
            while block := response.raw.read1(64 * 1024, decode_content=True):
                body += block
                if len(body) > max_bytes:
                    raise NoAnswer(f"{url} sent over {max_bytes // 2**20} MB")
                if time.monotonic() > end:
                    raise NoAnswer(f"{url} did not answer within {deadline_s:g} s")
            status = response.status_code
    except requests.Timeout:
        raise NoAnswer(f"{url} did not answer within {deadline_s:g} s") from None
    except requests.ConnectionError:
        raise
    except requests.RequestException as error:
        raise NoAnswer(printable(f"{url}: {type(error).__name__}: {error}")[:300]) from None
    try:
        answer = json.loads(bytes(body))
    except (ValueError, RecursionError):
        return status, None
    if not no_key_dropped(answer, bytes(body)) and (twice := duplicate_key(bytes(body))):
        raise NoAnswer(f"{url} answered JSON that gives a key twice ({twice})")
    return status, answer


def shown(value: object, limit: int = 60) -> str:
    """A value a server sent, as it may be quoted in a message: escaped and cut short."""
    text = printable(value if isinstance(value, str) else repr(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."
