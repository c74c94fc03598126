"""User text inside the memory files' Markdown: it can add words, never structure.

Titles, speakers, summaries, topics and every other text a file quotes go through
``inline`` (inside a line) or ``line`` (at the start of one). Neither lets the text break
the line (line breaks, tabs and control characters become spaces), open or close an HTML
comment (which would forge or hide a block marker, ``<!-- archivist:block ... -->``), nor,
at a line's start, begin a heading, quote, list, table, fence or HTML block.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# What makes a line more than text in CommonMark (and GitHub's tables) when it starts it.
_BLOCK_START = re.compile(r"[#>+*=|`~<_-]|\d{1,9}[.)]")


def inline(text: str) -> str:
    """``text`` on one line, white space collapsed, comment delimiters defused."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat.replace("<!--", "<!–").replace("-->", "–>")


def line(text: str) -> str:
    """``inline(text)`` that may start a line: a leading block marker is backslash-escaped
    (``\\#``, ``\\-``, ``1\\.``), which Markdown shows as the character itself."""
    flat = inline(text)
    found = _BLOCK_START.match(flat)
    if found is None:
        return flat
    end = found.end()
    return f"{flat[: end - 1]}\\{flat[end - 1 :]}"
