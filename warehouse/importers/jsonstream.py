"""Reading JSON the way benchmark tools write it: one document, or several appended."""

from __future__ import annotations

import json
from typing import Any

import orjson

from fleetplan.core.errors import InputError

_DECODER = json.JSONDecoder()


def decode_json_stream(data: bytes, *, file: str) -> list[Any]:
    """All JSON values in `data`, one after another (`--append-result` writes several)."""
    try:
        # Fast path for the common case: one strict JSON document. Anything else (several
        # documents, NaN literals, errors) takes the slower reader below, which explains itself.
        return [orjson.loads(data)]
    except orjson.JSONDecodeError:
        pass
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(
            f"not UTF-8 text (byte {error.start}): is this a result file?", file=file
        ) from None
    values: list[Any] = []
    position, end = 0, len(text)
    while True:
        while position < end and text[position] in " \t\r\n":
            position += 1
        if position >= end:
            break
        try:
            value, position = _DECODER.raw_decode(text, position)
        except json.JSONDecodeError as error:
            what = "truncated JSON" if error.pos >= end else "invalid JSON"
            raise InputError(
                f"{what} at line {error.lineno}, column {error.colno}: {error.msg}", file=file
            ) from None
        except RecursionError:
            raise InputError("JSON nested too deeply", file=file) from None
        values.append(value)
    if not values:
        raise InputError("the file is empty", file=file)
    return values
