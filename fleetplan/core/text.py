"""Text from files and users that reaches output: names are plain, and anything shown is escaped.

A name (model, GPU, dataset, host, class, site...) with a newline, ESC, NUL, a bidi override
(U+202E) or a zero-width character can forge a line of output, recolour a terminal, or show one
name while storing another. Names with such characters (Unicode categories Cc, Cf, Zl, Zp) are
refused where they come in; free text (notes, descriptions) may keep line breaks and tabs.
What is printed from a file (its name, messages quoting it) goes through `printable`.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated

from pydantic import AfterValidator

# Control (Cc), format (Cf: bidi marks and overrides, zero-width), line and paragraph separators.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
_LINE_BREAKS = frozenset("\n\r\t")


def hidden_characters(text: str, *, allowed: frozenset[str] = frozenset()) -> list[str]:
    """The characters of `text` that change how it is shown rather than what it says."""
    if text.isprintable():  # fast path: no Cc/Cf/Zl/Zp (nor Zs other than space) at all
        return []
    return [c for c in text if c not in allowed and unicodedata.category(c) in HIDDEN_CATEGORIES]


def printable(text: str) -> str:
    """`text` with each hidden character written as its escape (`\\n`, `\\x1b`, `\\u202e`)."""
    if text.isprintable():
        return text
    return "".join(
        c.encode("unicode_escape").decode("ascii")
        if unicodedata.category(c) in HIDDEN_CATEGORIES
        else c
        for c in text
    )


def printable_lines(text: str) -> str:
    """`printable` line by line: a message's own line breaks kept, every other hidden character
    (ESC, OSC, a carriage return that rewrites the line) escaped."""
    return "\n".join(printable(line) for line in text.split("\n"))


def _refuse(text: str, found: list[str], what: str) -> None:
    shown = ", ".join(dict.fromkeys(f"U+{ord(c):04X}" for c in found))
    raise ValueError(
        f"contains a control or formatting character ({shown}) in '{printable(text)}': {what}"
    )


# Letters of other scripts drawn like Latin ones (Unicode's confusables, the ones names use).
LOOKALIKE_LETTERS = str.maketrans(
    "АВЕНІЈКМОРСТХЅаеіјорсхѕԁһӏΑΒΕΗΙΚΜΝΟΡΤΧΥΖαερτυνοιᴀʙᴄᴅᴇꜰɢʜɪᴊᴋʟᴍɴᴏᴘʀꜱᴛᴜᴠᴡʏᴢ",
    "ABEHIJKMOPCTXSaeijopcxsdhlABEHIKMNOPTXYZaeptuvoiABCDEFGHIJKLMNOPRSTUVWYZ",
)


def look_alike_key(name: str) -> str:
    """What a reader sees of a name: NFKC, look-alike letters as Latin, case and runs of
    spaces (any kind) ignored. Two names with one key cannot be told apart on a page."""
    text = unicodedata.normalize("NFKC", name).translate(LOOKALIKE_LETTERS)
    return " ".join(text.split()).casefold()


def plain_name(text: str) -> str:
    """A name: no newline, escape code, NUL or direction mark (pydantic validator)."""
    found = hidden_characters(text)
    if found:
        _refuse(text, found, "a name is plain text on one line")
    return text


def plain_text(text: str) -> str:
    """Free text: line breaks and tabs kept, other hidden characters refused."""
    found = hidden_characters(text, allowed=_LINE_BREAKS)
    if found:
        _refuse(text, found, "text may hold line breaks, not escape codes or direction marks")
    return text


PlainName = AfterValidator(plain_name)
PlainText = AfterValidator(plain_text)
Name = Annotated[str, PlainName]
