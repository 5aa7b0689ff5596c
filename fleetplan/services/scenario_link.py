"""A scenario in a link: the Plan page keeps its whole scenario in the page's URL, so that
reloading the page or sending the link restores the same plan.

The encoding is the scenario's JSON without the fields left at their defaults, compressed
(zlib) and written in base64url: a version prefix, bounded length. Reading a link goes through
the same checks as a scenario file (`planning.load_scenario`), with its size bounded before and
after decompression, so that a broken or hostile link is an `InputError` to show, never a
traceback and never a decompression bomb.
"""

from __future__ import annotations

import base64
import binascii
import zlib

from fleetplan.core.errors import InputError
from fleetplan.planner.scenario.scenario import Scenario
from fleetplan.services.planning import MAX_SCENARIO_BYTES, load_scenario

PREFIX = "1."  # the encoding's version: a later encoding can still read old links
# Browsers and servers take URLs of 8 KB and more; a scenario of a few classes is ~400 chars.
MAX_LINK_CHARS = 6000
LINK_NAME = "the link"


def scenario_to_link(scenario: Scenario) -> str | None:
    """The scenario as a URL-safe string, or None when it is too large for a link (the page
    then says to download the scenario instead)."""
    raw = scenario.model_dump_json(exclude_defaults=True).encode()
    packed = base64.urlsafe_b64encode(zlib.compress(raw, 9)).rstrip(b"=").decode()
    encoded = PREFIX + packed
    return encoded if len(encoded) <= MAX_LINK_CHARS else None


def scenario_from_link(text: str) -> Scenario:
    """The scenario a link holds; InputError (naming the link) when it holds none."""
    if len(text) > MAX_LINK_CHARS:
        raise InputError(f"over {MAX_LINK_CHARS} characters, longer than any link", file=LINK_NAME)
    if not text.startswith(PREFIX):
        raise InputError("not a scenario written by this dashboard", file=LINK_NAME)
    body = text.removeprefix(PREFIX)
    try:
        packed = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_SCENARIO_BYTES + 1)
    except (binascii.Error, ValueError, zlib.error):
        raise InputError("cut off or changed (it does not decode)", file=LINK_NAME) from None
    if len(raw) > MAX_SCENARIO_BYTES or inflater.unconsumed_tail:
        raise InputError("it unpacks to more than a scenario can hold", file=LINK_NAME)
    if not inflater.eof:
        raise InputError("cut off (it ends before the scenario does)", file=LINK_NAME)
    return load_scenario(raw, name=LINK_NAME, max_bytes=MAX_SCENARIO_BYTES)
