"""The layout of ``MEMORY.md``: one header line, then sections of one-line entries.

```
# Long-term memory · alice · week of 2026-11-16
(blank line)
## Pinned
- Alice is allergic to penicillin <!-- m:17 -->
(blank line)
## Preferences
- Prefers window seats <!-- m:12,40-42 +3 -->
```

Sections, in this order and only when not empty: Pinned (any pinned entry), Preferences,
Decisions, Facts (facts, goals, notes), Recent context (episodes, task cards). Each line
ends with its trace: the memory ids merged into it, consecutive ids written as a range
(``40-42`` is 40, 41 and 42), and ``+N`` when N more ids did not fit the line (the
``long_term_entries`` row always holds all of them). The file ends with a newline; its
line count is its number of newlines, and both caps count every byte of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date

from tasks.files import md_inline

SECTIONS = ("Pinned", "Preferences", "Decisions", "Facts", "Recent context")
SECTION_OF_KIND = {
    "preference": "Preferences",
    "decision": "Decisions",
    "fact": "Facts",
    "goal": "Facts",
    "note": "Facts",
}
DEFAULT_SECTION = "Recent context"
ELLIPSIS = "…"


@dataclass(frozen=True)
class Caps:
    """The hard caps of one file: lines (newlines) and UTF-8 bytes."""

    max_lines: int
    max_bytes: int

    @property
    def line_bytes(self) -> int:
        """The most one entry's line may take: a tenth of the byte cap, at least 96."""
        return max(96, self.max_bytes // 10)


@dataclass(frozen=True)
class Line:
    """One rendered entry: its section and its line, trace included."""

    section: str
    text: str


def section_for(kind: str, *, pinned: bool) -> str:
    return "Pinned" if pinned else SECTION_OF_KIND.get(kind, DEFAULT_SECTION)


def header(namespace: str, monday: date) -> str:
    return f"# Long-term memory · {namespace} · week of {monday:%Y-%m-%d}"


def render(head: str, lines: Sequence[Line]) -> str:
    """The whole file: header, then each non-empty section in the fixed order."""
    out = [head]
    for section in SECTIONS:
        items = [line.text for line in lines if line.section == section]
        if items:
            out += ["", f"## {section}", *items]
    return "\n".join(out) + "\n"


def added_cost(line: Line, open_sections: set[str]) -> tuple[int, int]:
    """Lines and bytes that adding ``line`` adds to a rendered file (exact)."""
    lines, size = 1, len(line.text.encode("utf-8")) + 1
    if line.section not in open_sections:
        lines += 2
        size += len(f"## {line.section}".encode()) + 2
    return lines, size


def measure(document: str) -> tuple[int, int]:
    """(lines, bytes) of a rendered file."""
    return document.count("\n"), len(document.encode("utf-8"))


def cut_utf8(text: str, budget: int) -> str:
    """``text`` in at most ``budget`` UTF-8 bytes, cut at a character boundary with '…'."""
    data = text.encode("utf-8")
    if len(data) <= budget:
        return text
    room = max(0, budget - len(ELLIPSIS.encode("utf-8")))
    return data[:room].decode("utf-8", "ignore").rstrip() + ELLIPSIS


def trace(ids: Sequence[int], budget: int) -> str:
    """``<!-- m:12,40-42 +3 -->``: as many id runs as fit ``budget`` bytes, then a count."""
    runs = _runs(sorted(set(ids)))
    shown: list[str] = []
    listed = 0
    for low, high in runs:
        part = str(low) if low == high else f"{low}-{high}"
        if shown and len(_trace([*shown, part], len(ids))) > budget:
            break
        shown.append(part)
        listed += high - low + 1
    return _trace(shown, len(ids) - listed)


def _trace(parts: Sequence[str], rest: int) -> str:
    more = f" +{rest}" if rest > 0 else ""
    return f"<!-- m:{','.join(parts)}{more} -->"


def _runs(ids: Sequence[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for mid in ids:
        if runs and runs[-1][1] == mid - 1:
            runs[-1] = (runs[-1][0], mid)
        else:
            runs.append((mid, mid))
    return runs


def entry_line(text: str, ids: Sequence[int], caps: Caps) -> tuple[str, str]:
    """(entry text as cut, full line) for an entry: ``- text <!-- m:ids -->``."""
    tail = trace(ids, max(40, caps.line_bytes // 3))
    room = caps.line_bytes - len(f"-  {tail}".encode())
    body = cut_utf8(md_inline(text), room)
    return body, f"- {body} {tail}"
