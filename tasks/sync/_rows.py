"""Rows the sync writes beside its memories: episodes, file blocks, timeline lines,
fingerprints."""

from __future__ import annotations

from typing import Any

from tasks.files import daily_log_path, task_cards_path, timeline_block, utc_iso
from tasks.sync._render import block_key, display_title, render_daily_block, render_task_card
from tasks.sync._types import Derived, SyncContext


def _cited_ids(d: Derived, ids: dict[tuple[str, str, str], int]) -> list[int]:
    sid = d.state.session.id
    return sorted(ids[(sid, r.kind, r.key)] for r in d.rows)


def episode_row(
    d: Derived, ids: dict[tuple[str, str, str], int], ctx: SyncContext
) -> dict[str, Any]:
    ep, state = d.extraction.episode, d.state
    return {
        "namespace": state.session.namespace,
        "session_id": state.session.id,
        "memory_id": ids[(state.session.id, "episode", d.rows[0].key)],
        "summary": ep.summary,
        "topics": list(ep.topics),
        "entities": list(ep.entities),
        "user_state": dict(ep.user_state),
        "outcomes": [o.__dict__ | {"message_ids": list(o.message_ids)} for o in ep.outcomes],
        "open_threads": [
            t.__dict__ | {"message_ids": list(t.message_ids)} for t in ep.open_threads
        ],
        "importance": ep.importance,
        "vehemence": ep.vehemence,
        "urgency": ep.urgency,
        "sentiment": ep.sentiment,
        "risk": ep.risk,
        "message_count": len(state.messages),
        "started_at": state.messages[0].timestamp,
        "ended_at": state.messages[-1].timestamp,
        "fingerprint": state.fingerprint,
        "extractor": ctx.extractor.name,
        "run_id": ctx.run_id,
        "created_at": ctx.as_of,
    }


def block_row(d: Derived, ids: dict[tuple[str, str, str], int], ctx: SyncContext) -> dict[str, Any]:
    state, day = d.state, ctx.as_of.astimezone(ctx.tz).date()
    memory_ids = _cited_ids(d, ids)
    card = d.extraction.task_card
    if card is not None:
        path = task_cards_path(state.session.namespace, day)
        content = render_task_card(state, card, memory_ids, ctx.tz)
        key = block_key(state, "task")
    else:
        path = daily_log_path(state.session.namespace, day)
        content = render_daily_block(state, d.extraction.episode, memory_ids, ctx.tz)
        key = block_key(state, "daily")
    return {
        "namespace": state.session.namespace,
        "path": path,
        "block_key": key,
        "content": content,
        "memory_ids": memory_ids,
        "run_id": ctx.run_id,
    }


def timeline_row(
    d: Derived, ids: dict[tuple[str, str, str], int], ctx: SyncContext
) -> dict[str, object]:
    """The ``session`` line of one state in its namespace's ``timeline.jsonl``."""
    state, episode, memory_ids = d.state, d.extraction.episode, _cited_ids(d, ids)
    session = state.session
    event = {
        "event": "session",
        "namespace": session.namespace,
        "session": session.id,
        "kind": session.kind,
        "state": state.fingerprint[:16],
        "started": utc_iso(state.messages[0].timestamp),
        "ended": utc_iso(state.messages[-1].timestamp),
        "title": display_title(state, episode),
        "topics": list(episode.topics),
        "outcomes": [{"type": o.type, "content": o.content} for o in episode.outcomes],
        "memory_ids": memory_ids,
        "run": None if ctx.run_id is None else str(ctx.run_id),
        "as_of": utc_iso(ctx.as_of),
    }
    key = block_key(state, "session")
    return timeline_block(session.namespace, key, event, memory_ids, ctx.run_id)


def processed_row(d: Derived, ctx: SyncContext) -> dict[str, Any]:
    state = d.state
    return {
        "session_id": state.session.id,
        "namespace": state.session.namespace,
        "fingerprint": state.fingerprint,
        "message_count": len(state.messages),
        "last_message_at": state.messages[-1].timestamp,
        "processed_as_of": ctx.as_of,
        "run_id": ctx.run_id,
    }
