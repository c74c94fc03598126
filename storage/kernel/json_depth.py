"""How deeply JSON text nests, found without recursion.

``json.loads`` recurses once per level: text nested near the interpreter's recursion limit
raises ``RecursionError`` deep in the stack, where a finaliser that the garbage collector
happens to run fails too ("Exception ignored in sys.unraisablehook"). Input is checked
first, so that it never gets that far.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 256
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class NestedTooDeeply(ValueError):
    """JSON text that opens more arrays or objects inside one another than allowed."""

    def __init__(self) -> None:
        super().__init__("JSON nested too deeply")


def load_json(text: str, limit: int = MAX_DEPTH) -> Any:
    """``json.loads``, refusing text nested deeper than ``limit`` with ``NestedTooDeeply``
    before the decoder recurses (and should the interpreter's limit still be reached)."""
    if nested_deeper_than(text, limit):
        raise NestedTooDeeply
    try:
        return json.loads(text)
    except RecursionError:  # json's decoder recurses once per level of nesting
        raise NestedTooDeeply from None


def nested_deeper_than(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether ``text`` opens more than ``limit`` arrays or objects inside one another
    (brackets inside strings do not count)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    depth = 0
    for bracket in brackets:
        depth += 1 if bracket in "[{" else -1
        if depth > limit:
            return True
    return False
