"""One place per source: the ranked hits, leaving out those a better one already shows.

A long message is stored as several ``turn`` chunks that cite it, and a fact cites the turn
it came from; ``one_per_source`` keeps the best-ranked of such hits, so a message fills one
place in the results. Document chunks (kind ``"doc"``) each keep their own place.
"""

from __future__ import annotations

from collections.abc import Iterable

from storage.long_term import LONG_TERM_KIND
from storage.retrieval._types import DOC_KIND, Hit

# Kinds that summarise a whole session: they cite all its messages and never stand in for
# the message-level memories of that session.
SESSION_KINDS = frozenset({"episode", "task_card"})


def one_per_source(hits: Iterable[Hit], limit: int | None = None) -> list[Hit]:
    """The hits in order, leaving out each hit whose sources a better hit already shows.

    A memory citing messages of a session that a better-ranked memory also cites (all of
    them) says nothing new: a fact and the turn it came from, the chunks of one long
    message. A long-term entry and the facts merged into it collapse the same way, in
    whichever order they rank.
    """
    kept: list[Hit] = []
    shown: set[int] = set()
    merged: set[int] = set()
    cited: dict[str, list[frozenset[str]]] = {}
    for hit in hits:
        if hit.kind == DOC_KIND:
            pass  # a document chunk: its own place (its id is no memory's)
        elif hit.kind == LONG_TERM_KIND:
            if shown.intersection(hit.sources):
                continue
            merged.update(hit.sources)
        elif hit.memory_id in merged:
            continue
        elif hit.session_id is not None and hit.message_ids and hit.kind not in SESSION_KINDS:
            messages = frozenset(hit.message_ids)
            seen = cited.setdefault(hit.session_id, [])
            if any(messages <= other for other in seen):
                continue
            seen.append(messages)
        kept.append(hit)
        if hit.memory_id is not None:  # a memory (a chunk's id is no memory's)
            shown.add(hit.memory_id)
        if limit is not None and len(kept) >= limit:
            break
    return kept
