"""The per-session step of the sync: plan, derive memories, write them, queue file blocks.

Everything one batch writes (memories, episodes, file blocks, timeline lines, fingerprints)
commits in one transaction, so an interruption leaves either the whole batch or none of it;
the blocks and lines reach the files afterwards through the outbox (``storage.blocks``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta

import numpy as np
from sqlalchemy.orm import Session

from storage import blocks, episodes, memories, processed
from storage import sessions as raw
from storage.embedding import turn_text
from storage.kernel.records import SessionState
from storage.kernel.shards import Shard
from storage.meta import record_turn_context
from storage.processed import Candidate
from tasks.extraction import Extraction
from tasks.sync._render import task_card_text
from tasks.sync._rows import block_row, episode_row, processed_row, timeline_row
from tasks.sync._types import (
    BatchOutcome,
    Derived,
    MemoryRow,
    PreparedBatch,
    SyncContext,
    SyncPlan,
)

_SPOKEN = ("user", "assistant")  # the roles that get turn memories
# Sessions extracted while the embedder works on the previous ones' memories (about 500
# memories of bench/sync.py's sessions: long enough to hide an extraction behind).
PART_SESSIONS = 20


def plan_sync(
    session: Session,
    as_of: datetime,
    window_hours: float,
    min_user_messages: int,
    namespace: str | None,
    idle_minutes: float | None = None,
    shard: Shard | None = None,
) -> SyncPlan:
    """Sessions with activity in (as_of - window, as_of], sorted into work and skips.

    The minimum counts the user's messages; in a session where no user speaks (a
    sub-agent's run, an assistant's report) it counts the assistant's messages with text.
    With ``idle_minutes``, sessions with a message in the last ``idle_minutes`` are left
    for a later run (session summaries wait until a conversation has gone quiet).
    """
    start = as_of - timedelta(hours=window_hours)
    found = processed.find_candidates(session, start, as_of, namespace, shard)
    quiet_since = as_of - timedelta(minutes=idle_minutes) if idle_minutes else as_of
    active = tuple(c.session_id for c in found if c.last_message_at > quiet_since)
    candidates = [c for c in found if c.last_message_at <= quiet_since]
    rest, few, no_user = _by_minimum(candidates, min_user_messages)
    unchanged = tuple(c.session_id for c in rest if c.fingerprint == c.processed_fingerprint)
    # Back-filling an earlier day must not roll a session back to an older state.
    later = tuple(
        c.session_id
        for c in rest
        if c.fingerprint != c.processed_fingerprint
        and c.processed_as_of is not None
        and c.processed_as_of > as_of
    )
    work = tuple(
        c for c in rest if c.fingerprint != c.processed_fingerprint and c.session_id not in later
    )
    return SyncPlan(as_of, start, len(found), work, few, unchanged, later, active, no_user)


def _by_minimum(
    candidates: Sequence[Candidate], minimum: int
) -> tuple[list[Candidate], tuple[str, ...], tuple[str, ...]]:
    """Candidates with enough messages; the ids of the others with and without a user one."""
    counted = [(c, c.user_messages or c.assistant_messages) for c in candidates]
    short = [c for c, n in counted if n < minimum]
    few = tuple(c.session_id for c in short if c.user_messages)
    no_user = tuple(c.session_id for c in short if not c.user_messages)
    return [c for c, n in counted if n >= minimum], few, no_user


def load_states(
    session: Session, candidates: Sequence[Candidate], as_of: datetime
) -> list[SessionState]:
    """The state of each candidate session as of ``as_of``."""
    ids = [c.session_id for c in candidates]
    records = raw.load_sessions(session, ids)
    messages = raw.load_messages(session, ids, as_of)
    return [
        SessionState(
            session=records[c.session_id],
            messages=tuple(messages[c.session_id]),
            fingerprint=c.fingerprint,
        )
        for c in candidates
    ]


def derive(state: SessionState, extraction: Extraction) -> Derived:
    """The memory rows of one state: its episode, task card (sub-agents) and memories."""
    episode = extraction.episode
    ids = tuple(m.id for m in state.messages)
    last = state.messages[-1].timestamp
    text = episodes.episode_text(state.session.title, episode.summary)
    rows = [MemoryRow("episode", text, ids, last, episode.importance, episode.vehemence)]
    if extraction.task_card is not None:
        text = task_card_text(extraction.task_card)
        rows.append(MemoryRow("task_card", text, ids, last, episode.importance, episode.vehemence))
    rows += [
        MemoryRow(m.kind, m.content, m.message_ids, m.occurred_at, m.importance, m.vehemence)
        for m in extraction.memories
    ]
    unique = list({row.key: row for row in reversed(rows)}.values())[::-1]  # first wins
    return Derived(state, extraction, unique)


def read_batch(
    session: Session, ctx: SyncContext, candidates: Sequence[Candidate]
) -> tuple[list[SessionState], dict[tuple[str, str, str], int]]:
    """The batch's session states and the memories they already have (reads only)."""
    states = load_states(session, candidates, ctx.as_of)
    return states, memories.existing_keys(session, [c.session_id for c in candidates])


def derive_batch(
    ctx: SyncContext, states: Sequence[SessionState], existing: Mapping[tuple[str, str, str], int]
) -> PreparedBatch:
    """Extract every state and embed the memories not stored yet; touches no database.

    Model calls (an LLM extractor, an HTTP embedder) happen here, outside any transaction.
    The states go in parts of ``PART_SESSIONS``: while the embedder works on one part's
    new memories (on its own threads, or waiting on a remote model), this thread extracts
    the next (`Extractor.extract_many`: a part's summary sentences go to the model in one
    call), so the extraction (its summaries' own model calls included) no longer waits
    for the embedding nor the embedding for it. One part is embedded at a time, in order,
    on one worker thread, so the embedder is never called from two threads at once.
    """
    derived: list[Derived] = []
    vectors: dict[tuple[str, str, str], np.ndarray] = {}
    with ThreadPoolExecutor(1, thread_name_prefix="archivist-sync-embed") as worker:
        pending = []
        for start in range(0, len(states), PART_SESSIONS):
            chunk = states[start : start + PART_SESSIONS]
            part = [
                derive(s, e) for s, e in zip(chunk, ctx.extractor.extract_many(chunk), strict=True)
            ]
            derived += part
            texts_of = embed_texts(part, turn_context=ctx.turn_context)
            new_keys = [key for key in texts_of if key not in existing]
            texts = [texts_of[key] for key in new_keys]
            pending.append((new_keys, worker.submit(ctx.embedder.embed, texts)))
        for new_keys, embedded in pending:
            vectors.update(zip(new_keys, embedded.result(), strict=True))
    return PreparedBatch(derived, vectors)


def write_batch(session: Session, ctx: SyncContext, batch: PreparedBatch) -> BatchOutcome:
    """Write a prepared batch in the caller's transaction, against the memories stored now."""
    derived = batch.derived
    existing = memories.existing_keys(session, [d.state.session.id for d in derived])
    wanted = _wanted(derived)
    stale = [mid for key, mid in existing.items() if key not in wanted]
    new_keys = [key for key in wanted if key not in existing]
    outcome = _outcome(derived, len(wanted), len(new_keys), len(stale))
    if ctx.dry_run:
        return outcome
    memories.delete_memories(session, stale)
    if any(kind == "turn" for _, kind, _ in new_keys):  # how the store's turns are embedded
        record_turn_context(session, turn_context=ctx.turn_context)
    new_ids = _insert(session, ctx, derived, new_keys, wanted, batch.vectors)
    ids = {key: mid for key, mid in existing.items() if key in wanted} | new_ids
    episodes.upsert_episodes(session, [episode_row(d, ids, ctx) for d in derived])
    blocks.add_blocks(
        session,
        [block_row(d, ids, ctx) for d in derived] + [timeline_row(d, ids, ctx) for d in derived],
    )
    processed.mark_processed(session, [processed_row(d, ctx) for d in derived])
    return outcome


def process_batch(
    session: Session, ctx: SyncContext, candidates: Sequence[Candidate]
) -> BatchOutcome:
    """Read, derive and write one batch with one session (the flow splits the three)."""
    states, existing = read_batch(session, ctx, candidates)
    return write_batch(session, ctx, derive_batch(ctx, states, existing))


def _wanted(derived: Sequence[Derived]) -> dict[tuple[str, str, str], MemoryRow]:
    return {(d.state.session.id, r.kind, r.key): r for d in derived for r in d.rows}


def embed_texts(
    derived: Sequence[Derived], *, turn_context: bool
) -> dict[tuple[str, str, str], str]:
    """The text each memory row is embedded from, by key: its content, or for a turn with
    ``turn_context`` its content with the session's title, its date and the previous turn
    (``storage.embedding.turn_text``; ``storage.operations.reembed`` builds the same)."""
    texts = {(d.state.session.id, r.kind, r.key): r.content for d in derived for r in d.rows}
    if not turn_context:
        return texts
    for d in derived:
        turns = sorted((r for r in d.rows if r.kind == "turn"), key=lambda r: r.occurred_at)
        previous: MemoryRow | None = None
        for i, row in enumerate(turns):
            if i and turns[i - 1].message_ids != row.message_ids:
                previous = turns[i - 1]
            texts[(d.state.session.id, row.kind, row.key)] = turn_text(
                row.content,
                title=d.state.session.title,
                occurred_at=row.occurred_at,
                previous=None if previous is None else previous.content,
            )
    return texts


def _unindexed(d: Derived) -> tuple[int, int]:
    """Messages of a state with no text at all, and spoken ones with text but no turn."""
    turned = {mid for row in d.rows if row.kind == "turn" for mid in row.message_ids}
    texts = [(m, bool(m.content.strip())) for m in d.state.messages]
    empty = sum(not has_text for _, has_text in texts)
    short = sum(has_text and m.role in _SPOKEN and m.id not in turned for m, has_text in texts)
    return empty, short


def _outcome(derived: Sequence[Derived], wanted: int, added: int, removed: int) -> BatchOutcome:
    tokens = [d.extraction.tokens for d in derived]
    unindexed = [_unindexed(d) for d in derived]
    return BatchOutcome(
        sessions=len(derived),
        memories_added=added,
        memories_removed=removed,
        memories_kept=wanted - added,
        episodes=len(derived),
        task_cards=sum(d.extraction.task_card is not None for d in derived),
        blocks_queued=2 * len(derived),  # a log block or task card, and a timeline line
        prompt_tokens=sum(t.get("prompt", 0) for t in tokens),
        completion_tokens=sum(t.get("completion", 0) for t in tokens),
        llm_calls=sum(t.get("llm_calls", 0) for t in tokens),
        extractor_fallbacks=sum(t.get("fallback", 0) for t in tokens),
        messages_empty=sum(empty for empty, _ in unindexed),
        messages_too_short=sum(short for _, short in unindexed),
        redactions=_redactions(d.extraction.redactions for d in derived),
    )


def _redactions(per_session: Iterable[Mapping[str, int]]) -> dict[str, int]:
    total: Counter[str] = Counter()
    for counts in per_session:
        total.update(counts)
    return dict(sorted(total.items()))


def _insert(
    session: Session,
    ctx: SyncContext,
    derived: Sequence[Derived],
    new_keys: Sequence[tuple[str, str, str]],
    wanted: dict[tuple[str, str, str], MemoryRow],
    vectors: Mapping[tuple[str, str, str], np.ndarray],
) -> dict[tuple[str, str, str], int]:
    namespaces = {d.state.session.id: d.state.session.namespace for d in derived}
    late = [key for key in new_keys if key not in vectors]  # removed by someone meanwhile
    texts_of = embed_texts(derived, turn_context=ctx.turn_context) if late else {}
    embedded = dict(vectors) | dict(
        zip(late, ctx.embedder.embed([texts_of[k] for k in late]), strict=True)
    )
    rows = [
        memories.NewMemory(
            namespace=namespaces[key[0]],
            kind=wanted[key].kind,
            content=wanted[key].content,
            content_key=wanted[key].key,
            embedding=embedded[key],
            embedding_model=ctx.embedder.name,
            importance=wanted[key].importance,
            vehemence=wanted[key].vehemence,
            session_id=key[0],
            message_ids=wanted[key].message_ids,
            run_id=ctx.run_id,
            extractor=ctx.extractor.name,
            occurred_at=wanted[key].occurred_at,
            created_at=ctx.as_of,
        )
        for key in new_keys
    ]
    ids = memories.insert_memories(session, rows, half_life_days=ctx.half_life_days)
    return dict(zip(new_keys, ids, strict=True))
