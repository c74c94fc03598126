"""How deeply JSON text nests, found without recursion.

``json.loads`` recurses once per level: text nested near the interpreter's recursion limit
raises ``RecursionError`` deep in the stack, where a finaliser that the garbage collector
happens to run fails too ("Exception ignored in sys.unraisablehook"). Input is checked
first, so that it never gets that far.
"""

from __future__ import annotations

import re

MAX_DEPTH = 256
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


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
