"""Reading JSON the way benchmark tools write it: one document, or several appended; a key given
twice in one object refused (orjson, like most readers, silently keeps the last)."""

from __future__ import annotations

import json
from typing import Any

import orjson

from fleetplan.core.errors import InputError
from fleetplan.core.strict import duplicate_key, no_key_dropped

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


def refuse_repeated_keys(values: list[Any], data: bytes, *, file: str) -> None:
    """Refuse the parsed `values` of the JSON text `data` if an object of it gave a key twice:
    the cheap count (`core.strict.no_key_dropped`) first; only where it falls short is the text
    read again, strictly and slowly (`core.strict.duplicate_key`), to say which key and where.
    (benchmarks/RESULTS.md: the cost.)"""
    if no_key_dropped(values, data):
        return
    where = duplicate_key(data)
    if where:
        raise InputError(where, file=file)
