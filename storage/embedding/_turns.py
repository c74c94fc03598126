"""The text a turn memory is embedded from when turns carry their context.

A turn alone ("Yes, the second one.") says little; embedded with the session's title, its
date and the start of the turn it answers, its vector lands near the questions a reader
would ask of it. The stored ``content`` stays the message itself: only the vector changes.
The header has no words of its own (a quote mark, not "replying to"), so a turn in German
or Japanese is not embedded beside English.

The turn comes first, so the model's 256 word pieces never cut it; the header after it is
capped (title at ``TITLE_CHARS``, the previous turn at ``PREVIOUS_CHARS``), so a short turn
gets its whole context and a long one carries its own. The date is the turn's UTC day.
``TURN_TEXT_SQL`` builds the same text in SQL (re-embedding, forgetting the vector cache);
both must change together.
"""

from __future__ import annotations

from datetime import UTC, datetime

TITLE_CHARS = 60
PREVIOUS_CHARS = 100

# The same text from a ``memories`` row ``m``, its session ``s`` and its previous turn ``p``
# (see ``storage.operations.reembed``); ``left`` counts characters as Python's slices do.
TURN_TEXT_SQL = (
    f"m.content || E'\\n(' || concat_ws(', ', NULLIF(left(s.title, {TITLE_CHARS}), ''), "
    "to_char(m.occurred_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')) || ')' "
    f"|| COALESCE(E'\\n> ' || left(p.content, {PREVIOUS_CHARS}), '')"
)

# The previous turn ``p`` of a turn ``m``: the last turn of another message before it.
PREVIOUS_TURN_SQL = (
    "SELECT q.content FROM memories q WHERE q.session_id = m.session_id "
    "AND q.kind = 'turn' AND q.message_ids <> m.message_ids "
    "AND (q.occurred_at, q.id) < (m.occurred_at, m.id) "
    "ORDER BY q.occurred_at DESC, q.id DESC LIMIT 1"
)
# The hashes (``storage.embedding.cache.text_hash``) of the context texts of the turns of
# ``memories m`` that match a condition appended after ``AND``: what purge and forget drop
# from the vector cache beside the hashes of the contents.
TURN_HASHES_SQL = (
    f"SELECT encode(sha256(convert_to({TURN_TEXT_SQL}, 'UTF8')), 'hex') "
    "FROM memories m LEFT JOIN chat_sessions s ON s.id = m.session_id "
    f"LEFT JOIN LATERAL ({PREVIOUS_TURN_SQL}) p ON true WHERE m.kind = 'turn' AND "
)


def turn_text(turn: str, *, title: str | None, occurred_at: datetime, previous: str | None) -> str:
    """``turn`` followed by its context: a line ``(title, date)``, then the turn it answers
    quoted, ``> <previous turn>``."""
    day = occurred_at.astimezone(UTC).date().isoformat()
    where = ", ".join(part for part in (title[:TITLE_CHARS] if title else "", day) if part)
    header = f"({where})"
    if previous is not None:
        header += f"\n> {previous[:PREVIOUS_CHARS]}"
    return f"{turn}\n{header}"
