"""How a fact's text closes: its context and the day it was said, and the statement before.

The extractor writes a fact as ``<statement> (<context>, <YYYY-MM-DD>)``: ``Alice prefers
window seats. (in "Trip to Porto", 2026-11-27)``. The same statement said in two sessions
then differs only in that closing, and whatever compares what facts say (the weekly tidy
merging lines of ``MEMORY.md``, priming listing distinct facts) compares ``statement``.
"""

from __future__ import annotations

import re
from datetime import date

CONTEXTS = ("in", "answering", "after")
_CLOSING = re.compile(r' \((?:(?:in|answering|after) ".*", )?\d{4}-\d{2}-\d{2}\)$', re.DOTALL)


def closing(context: str, said: date) -> str:
    """`` (in "Trip to Porto", 2026-11-27)``, or `` (2026-11-27)`` without a context."""
    return f" ({context}, {said.isoformat()})" if context else f" ({said.isoformat()})"


def statement(text: str) -> str:
    """The text without a fact's closing context and date (any other text as it is)."""
    return _CLOSING.sub("", text)
