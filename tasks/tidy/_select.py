"""Which memories make ``MEMORY.md``, and how they fit its caps (pure: no database, no files).

Selection rule of the weekly tidy:

1. **Candidates** of a namespace: memories of kind fact, preference, decision, goal, note,
   episode or task_card that occurred in the tidy's window (the 7 x 24 h ending at
   ``as_of``), the memories behind the entries already in ``MEMORY.md`` (still-valid
   long-term items; an entry whose memories are all gone leaves), and every pinned memory.
2. **Score** of a memory: ``0.4 importance + 0.3 salience + 0.3 recency``. Salience is
   ``storage.kernel.scoring.salience`` of its access count and the days since its last access
   (since it occurred, if never accessed), capped at 1 so use cannot swamp the rest;
   recency is ``storage.kernel.scoring.recency`` of its age at ``as_of``.
3. **Memories that say the same thing merge** (``_merge`` has the rule: the same words,
   equal once normalised or with a token-set Jaccard of at least 0.8, and the same
   decisive words: names, numbers, dates, quoted words, negations) into one entry citing
   every memory id. Its text is its most specific member's (preference, decision, fact,
   goal, note, task_card, episode, then the lowest id); it is pinned if any member is,
   and scores as its best member.
4. **Order**: pinned first, then score descending, ties by the lowest memory id.
5. **Fill**: entries are taken in that order until the next would break either cap (lines,
   or UTF-8 bytes of the whole file: header, section titles, blank lines and trace
   comments included), and the fill stops there. A line is first cut to
   ``Caps.line_bytes`` at a character boundary, with '…'.
6. **Stable**: carried-over memories whose entry missed the cut leave the candidates and
   the selection is repeated until it no longer changes, so a re-run for the same week,
   which sees only the survivors, selects the same lines.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from storage.kernel.errors import DataQualityError
from storage.kernel.facts import statement
from storage.kernel.scoring import importance, recency, salience
from tasks.tidy._merge import groups, normalise
from tasks.tidy._render import Caps, Line, added_cost, entry_line, measure, render, section_for

KINDS = ("preference", "decision", "fact", "goal", "note", "task_card", "episode")
WEIGHTS = {"importance": 0.4, "salience": 0.3, "recency": 0.3}


@dataclass(frozen=True)
class Candidate:
    """One memory that may enter ``MEMORY.md``; ``carried`` if only an old entry holds it."""

    id: int
    kind: str
    text: str
    score: float
    pinned: bool = False
    carried: bool = False
    session_id: str | None = None


@dataclass(frozen=True)
class Entry:
    """One line of ``MEMORY.md``: merged memories (and their sessions), their text as
    written, and the line."""

    key: str
    text: str
    section: str
    memory_ids: tuple[int, ...]
    pinned: bool
    score: float
    line: str
    session_ids: tuple[str, ...] = ()


def score(
    raw_importance: float | None,
    access_count: int,
    last_access: datetime | None,
    occurred_at: datetime,
    as_of: datetime,
    half_lives: tuple[float, float] = (30.0, 30.0),
) -> float:
    """The rule's score; ``half_lives`` are (recency, salience) in days."""
    day = 86_400.0
    age = (as_of - occurred_at).total_seconds() / day
    idle = (as_of - (last_access or occurred_at)).total_seconds() / day
    live = min(1.0, salience(access_count, idle, half_lives[1]))
    return (
        WEIGHTS["importance"] * importance(raw_importance)
        + WEIGHTS["salience"] * live
        + WEIGHTS["recency"] * recency(age, half_lives[0])
    )


def entry_key(text: str) -> str:
    """Stable identity of an entry: a hash of its normalised text."""
    return hashlib.sha256(normalise(text).encode("utf-8")).hexdigest()


def merge(candidates: Sequence[Candidate]) -> list[list[Candidate]]:
    """Groups of memories that say the same thing (``_merge``), each by memory id."""
    kept = [c for c in candidates if c.text.strip()]
    # a fact said in two sessions differs only in its closing (context, date): one line
    found = groups([statement(c.text) for c in kept])
    return [sorted((kept[i] for i in group), key=lambda c: c.id) for group in found]


def to_entry(group: Sequence[Candidate], caps: Caps) -> Entry:
    """One entry from a group: its most specific member's text, every member's id."""
    best = min(group, key=lambda c: (KINDS.index(c.kind) if c.kind in KINDS else 99, c.id))
    pinned, top = standing(group)
    ids = tuple(c.id for c in group)
    # members told in different sessions: the line keeps what all of them say, no one's context
    said = best.text if len({c.text for c in group}) == 1 else statement(best.text)
    text, line = entry_line(said, ids, caps)
    section = section_for(best.kind, pinned=pinned)
    sessions = tuple(sorted({c.session_id for c in group if c.session_id is not None}))
    return Entry(entry_key(statement(best.text)), text, section, ids, pinned, top, line, sessions)


def standing(group: Sequence[Candidate]) -> tuple[bool, float]:
    """What an entry of ``group`` ranks by: pinned if any member is, its best member's score."""
    return any(c.pinned for c in group), max(c.score for c in group)


def rank(groups: Sequence[Sequence[Candidate]]) -> list[Sequence[Candidate]]:
    """Groups (each by memory id) in their entries' order: pinned, score, lowest id (rule 4)."""

    def key(group: Sequence[Candidate]) -> tuple[bool, float, int]:
        pinned, top = standing(group)
        return not pinned, -top, group[0].id

    return sorted(groups, key=key)


def fill(head: str, ranked: Iterable[Entry], caps: Caps) -> list[Entry]:
    """The longest prefix of ``ranked`` whose rendered file stays within both caps."""
    lines, size = measure(render(head, []))
    open_sections: set[str] = set()
    chosen: list[Entry] = []
    for entry in ranked:
        more_lines, more_bytes = added_cost(Line(entry.section, entry.line), open_sections)
        if lines + more_lines > caps.max_lines or size + more_bytes > caps.max_bytes:
            break
        lines, size = lines + more_lines, size + more_bytes
        open_sections.add(entry.section)
        chosen.append(entry)
    return chosen


def select(head: str, candidates: Sequence[Candidate], caps: Caps) -> list[Entry]:
    """The entries of ``MEMORY.md``, ranked, at the fixed point of the rule (rule 6)."""
    pool = list(candidates)
    while True:
        # entries built as the fill asks for them: past the cap, none is (most of them)
        chosen = fill(head, (to_entry(g, caps) for g in rank(merge(pool))), caps)
        ids = {mid for entry in chosen for mid in entry.memory_ids}
        kept = [c for c in pool if not c.carried or c.id in ids]
        if len(kept) == len(pool):
            return chosen
        pool = kept


def document(head: str, entries: Sequence[Entry], caps: Caps) -> str:
    """The rendered file; refuses (never writes) anything over a cap."""
    text = render(head, [Line(e.section, e.line) for e in entries])
    lines, size = measure(text)
    if lines > caps.max_lines or size > caps.max_bytes:
        raise DataQualityError(
            f"MEMORY.md would have {lines} lines / {size} bytes, over the caps "
            f"{caps.max_lines} / {caps.max_bytes}; nothing was written"
        )
    return text
