"""JSON and YAML read strictly, the same way wherever fleetplan reads them (scenarios, campaigns,
YAML results): a key given twice in one object is refused (silently the last would win:
`"rate_rps": 6, "rate_rps": 600000` plans 600,000 req/s), and so are YAML anchors and aliases
(578 bytes of them expand to gigabytes: a billion laughs)."""

from __future__ import annotations

import json
from typing import Any

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
    except _Twice as error:
        raise InputError(str(error), file=file) from None
    except (ValueError, RecursionError):
        return  # not JSON: its reader says why


def load_json(data: bytes | str, *, file: str) -> Any:
    """One JSON document; a key twice in an object, or invalid JSON, refused naming the file."""
    try:
        return json.loads(data, object_pairs_hook=_no_twice)
    except _Twice as error:
        raise InputError(str(error), file=file) from None
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
