"""Text from a file (a name, a model, a GPU label, a message quoting a value) shown on a page as
the characters it is, never as Markdown: Streamlit renders the strings given to st.markdown,
st.caption, st.error, st.warning, st.info, st.success and expander labels as Markdown, so a
file name `[x](https://…)` would become a link and `![x](https://…)` an image fetched from
anywhere.

`plain` escapes every ASCII punctuation character (CommonMark renders a backslash-escaped
punctuation character as itself), which also stops Streamlit's own `:color[…]`, `:icon:` and
`$math$` syntax, and replaces control characters (a newline would start a new Markdown block).
Escapes do not stop GitHub-flavoured autolinks (`www.x.org`, `https://x.org`, `a@x.org`: found
in the text after escapes are read), so an invisible word joiner (U+2060) goes where each would
begin (`www.`, a scheme such as `https:`, `@`): the text reads the same, and nothing becomes a
link.
"""

from __future__ import annotations

import re
import string

_PUNCTUATION = frozenset(string.punctuation)
WORD_JOINER = "\u2060"
# Where GitHub-flavoured Markdown starts a link in plain text: `www.`, a URL scheme and `@`
# (remark-gfm's literal autolinks: http, https, ftp, mailto, xmpp). Only there: a joiner after
# every word before a colon would also sit inside ordinary text ("run.json: 1 run"), where a
# reader searching the page for it would not find it.
_AUTOLINK = re.compile(r"(?i)(www)(\.)|\b(https?|ftp|mailto|xmpp)(:)|(@)()")


def plain(text: object) -> str:
    """`text` escaped so that Markdown shows it as written, on one line."""
    out = []
    for char in _AUTOLINK.sub(_joined, str(text)):
        if char in _PUNCTUATION:
            out.append("\\" + char)
        elif char in "\r\n\t":
            out.append(" ")
        elif ord(char) < 32 or ord(char) == 127:
            out.append(f"\\\\x{ord(char):02x}")
        else:
            out.append(char)
    return "".join(out)


def _joined(match: re.Match[str]) -> str:
    before, after = [g for g in match.groups() if g is not None]
    return before + WORD_JOINER + after
