"""JSON and YAML read strictly, the same way wherever fleetplan reads them (scenarios, campaigns,
YAML results): a key given twice in one object is refused (silently the last would win:
`"rate_rps": 6, "rate_rps": 600000` plans 600,000 req/s), and so are YAML anchors and aliases
(578 bytes of them expand to gigabytes: a billion laughs)."""

from __future__ import annotations

import json
from typing import Any

import orjson

from fleetplan.core.errors import InputError
from fleetplan.core.text import printable


def _no_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _Twice(key)
        found[key] = value
    return found


class _Twice(ValueError):
    def __init__(self, key: object):
        super().__init__(f"the key {printable(str(key))[:80]!r} is given twice in one object")


def refuse_duplicate_keys(data: bytes | str, *, file: str) -> None:
    """Refuse JSON whose objects give a key twice (valid JSON is otherwise left to its reader,
    which reports its own errors)."""
    try:
        json.loads(data, object_pairs_hook=_no_twice)
    except _Twice:
        where = duplicate_key(data)
        raise InputError(where or "a key is given twice in one object", file=file) from None
    except (ValueError, RecursionError):
        return  # not JSON: its reader says why


class _Members(list):
    """An object's members as given, in order (a key twice kept twice)."""


def duplicate_key(data: bytes | str) -> str | None:
    """Where JSON text (one value, several appended, or JSON lines) first gives a key twice in
    one object, as a sentence naming the key and its path (`the key 'rate' is given twice in one
    object, at benchmarks[0].args.rate`), or None where it does not or is not JSON. Slow (every
    object kept as a list): for the rare file whose cheap count says a key is missing."""
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        return None
    decoder = json.JSONDecoder(object_pairs_hook=_Members)
    position, end, values = 0, len(text), []
    while True:
        while position < end and text[position] in " \t\r\n":
            position += 1
        if position >= end:
            break
        start = position
        try:
            value, position = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            return None
        values.append((start, value))
    for number, (start, value) in enumerate(values, 1):
        found = _first_twice(value)
        if found:
            key, path = found
            where = ""
            if len(values) > 1:
                where = f"value {number} (line {text.count(chr(10), 0, start) + 1}): "
            return f"{where}{_Twice(key)}, at {printable(path)[:200]}"
    return None


def _first_twice(value: Any) -> tuple[str, str] | None:
    """The first key given twice in an object of `value` (document order), and its path."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, _Members):
            seen: set[str] = set()
            children = []
            for key, child in item:
                here = f"{path}.{key}" if path else key
                if key in seen:
                    return key, here
                seen.add(key)
                children.append((child, here))
            stack.extend(reversed(children))
        elif isinstance(item, list):
            stack.extend(reversed([(child, f"{path}[{i}]") for i, child in enumerate(item)]))
    return None


def load_json(data: bytes | str, *, file: str) -> Any:
    """One JSON document; a key twice in an object, or invalid JSON, refused naming the file."""
    try:
        return json.loads(data, object_pairs_hook=_no_twice)
    except _Twice as error:
        raise InputError(duplicate_key(data) or str(error), file=file) from None
    except json.JSONDecodeError as error:
        raise InputError(
            f"invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}", file=file
        ) from None
    except (ValueError, RecursionError) as error:
        raise InputError(f"invalid JSON: {type(error).__name__}", file=file) from None


def load_yaml(text: str, *, file: str, every: bool = False) -> Any:
    """One YAML document, safely (no Python objects), without anchors, aliases or a key twice;
    `every`: the list of all its documents (`---`, as Kubernetes manifests are), each so read."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node, deep=False):
            seen: set = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                try:
                    if key in seen:
                        raise _Twice(key)
                    seen.add(key)
                except TypeError:  # an unhashable key: YAML's own error follows
                    break
            return super().construct_mapping(node, deep=deep)

    try:
        for token in yaml.scan(text, Loader=base):
            if isinstance(token, yaml.AnchorToken | yaml.AliasToken):
                raise InputError("YAML anchors and aliases are not accepted", file=file)
        if every:
            return list(yaml.load_all(text, Loader=Loader))
        return yaml.load(text, Loader=Loader)
    except _Twice as error:
        raise InputError(str(error), file=file) from None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        at = f" at line {where.line + 1}, column {where.column + 1}" if where else ""
        raise InputError(
            f"invalid YAML{at}: {getattr(error, 'problem', error)}", file=file
        ) from None


def no_key_dropped(values: Any, data: bytes) -> bool:
    """Whether the parsed `values` of the JSON text `data` kept every object member: cheap, and
    exact where it says True. Written again (orjson, C speed), the values hold as many colons as
    `data` (one per object member, and those inside strings) plus one per colon `data` escaped
    inside a string (`\\u003a`, written again as a colon). A key given twice was dropped, with its
    colon and any of its value's: fewer colons. False: a key may be given twice (or orjson cannot
    write a value): read it again with `duplicate_key` to say which and where."""
    try:
        again = orjson.dumps(values)
    except (TypeError, orjson.JSONEncodeError):
        return False
    escaped = 0
    if b"\\" in data:  # (a `\\u003a` of text, not an escape, can only send it the slow way)
        escaped = data.count(b"\\u003a") + data.count(b"\\u003A")
    return again.count(b":") == data.count(b":") + escaped
