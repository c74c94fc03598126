"""The queue's statements, each kept whole and named (see ``storage.queue``)."""

from __future__ import annotations

from sqlalchemy import text

CHANNEL = "archivist_queue"  # NOTIFY on enqueue; drainers LISTEN instead of polling

_NOW = "COALESCE(CAST(:now AS timestamptz), now())"
# The backend that claimed an item has ended: its worker is gone (the drainer keeps its
# claiming connection until the claim is settled). Reads ``live``, the backends of
# pg_stat_activity; ``:gone_claimers`` false leaves only the stuck timeout.
_GONE = (
    "(CAST(:gone_claimers AS boolean) AND q.claimer_pid IS NOT NULL "
    "AND q.claimer_pid NOT IN (SELECT pid FROM live))"
)
_LIVE = "live AS MATERIALIZED (SELECT pid FROM pg_stat_activity)"

ENQUEUE = text(
    f"""
    INSERT INTO memory_write_queue (namespace, op, payload, idempotency_key, status, attempts,
                                    max_attempts, available_at, created_at, updated_at)
    VALUES (:namespace, :op, CAST(:payload AS jsonb), :idempotency_key, 'pending', 0,
            :max_attempts, {_NOW}, {_NOW}, {_NOW})
    ON CONFLICT (namespace, idempotency_key) DO NOTHING
    RETURNING id
    """
)
BY_KEY = text(
    "SELECT id FROM memory_write_queue WHERE namespace = :namespace "
    "AND idempotency_key = :idempotency_key"
)
# MATERIALIZED: the locking sub-select runs once, whatever plan the UPDATE gets.
CLAIM = text(
    f"""
    WITH picked AS MATERIALIZED (
        SELECT id FROM memory_write_queue
        WHERE status = 'pending' AND available_at <= {_NOW}
        ORDER BY available_at, id
        LIMIT :limit
        FOR UPDATE SKIP LOCKED
    )
    UPDATE memory_write_queue AS q
    SET status = 'processing', attempts = q.attempts + 1, claimed_by = :worker,
        claimed_at = {_NOW}, claimer_pid = pg_backend_pid(), updated_at = {_NOW}
    FROM picked
    WHERE q.id = picked.id
    RETURNING q.id, q.namespace, q.op, q.payload, q.attempts, q.max_attempts, q.claimed_by,
              q.claimed_at, q.created_at
    """
)
# ``id = ANY``: the primary key finds the rows; the claim index would wade through every
# completed item not yet vacuumed away.
COMPLETE = text(
    f"""
    UPDATE memory_write_queue AS q
    SET status = 'completed', result = d.result, completed_at = {_NOW}, updated_at = {_NOW}
    FROM unnest(CAST(:ids AS bigint[]), CAST(:workers AS text[]), CAST(:attempts AS integer[]),
                CAST(:results AS jsonb[])) AS d (id, worker, attempts, result)
    WHERE q.id = ANY(CAST(:ids AS bigint[])) AND q.id = d.id AND q.status = 'processing'
      AND q.claimed_by = d.worker AND q.attempts = d.attempts
    RETURNING q.id
    """
)
_RETRY = "(NOT CAST(:permanent AS boolean) AND attempts < max_attempts)"
FAIL = text(
    f"""
    UPDATE memory_write_queue
    SET status = CASE WHEN {_RETRY} THEN 'pending' ELSE 'dead' END,
        available_at = CASE WHEN {_RETRY}
                            THEN {_NOW} + CAST(:delay AS interval) ELSE available_at END,
        last_error = :error, updated_at = {_NOW}
    WHERE id = :id AND status = 'processing' AND claimed_by = :worker AND attempts = :attempts
    RETURNING status
    """
)
# A claim is judged by (id, attempts) in ``judged`` and only that claim is given back: if
# the item was meanwhile reclaimed and claimed again, by a backend newer than ``live``,
# its attempts differ and the new claim is left alone.
RECLAIM = text(
    f"""
    WITH {_LIVE},
    judged AS MATERIALIZED (
        SELECT q.id, q.attempts, {_GONE} AS gone FROM memory_write_queue AS q
        WHERE q.status = 'processing'
    )
    UPDATE memory_write_queue AS q
    SET status = CASE WHEN q.attempts < q.max_attempts THEN 'pending' ELSE 'dead' END,
        available_at = {_NOW},
        last_error = CASE WHEN j.gone
                          THEN 'worker gone: claimed by ' || coalesce(q.claimed_by, '?')
                               || ' (backend pid ' || q.claimer_pid || ') at ' || q.claimed_at
                               || ', whose database connection closed before it finished'
                          ELSE 'stuck: claimed by ' || coalesce(q.claimed_by, '?') || ' at '
                               || q.claimed_at || ' and not finished within '
                               || CAST(:stuck_after AS interval)
                     END
                     || CASE WHEN q.attempts < q.max_attempts THEN '; requeued'
                             ELSE '; attempts exhausted' END,
        updated_at = {_NOW}
    FROM judged AS j
    WHERE q.id = j.id AND q.status = 'processing' AND q.attempts = j.attempts
      AND (j.gone OR q.claimed_at < {_NOW} - CAST(:stuck_after AS interval))
    RETURNING q.status
    """
)
PURGE = text(
    f"""
    DELETE FROM memory_write_queue
    WHERE status = 'completed' AND completed_at < {_NOW} - CAST(:older_than AS interval)
    """
)
# ``stuck``: processing too long by a worker still connected (or not known to be gone);
# ``abandoned``: held by a worker that is gone, however recent the claim.
STATS = text(
    f"""
    WITH {_LIVE}
    SELECT count(*) FILTER (WHERE status = 'pending') AS pending,
           count(*) FILTER (WHERE status = 'pending' AND available_at <= {_NOW}) AS ready,
           count(*) FILTER (WHERE status = 'processing') AS processing,
           count(*) FILTER (WHERE status = 'processing' AND NOT {_GONE}
                            AND claimed_at < {_NOW} - CAST(:stuck_after AS interval)) AS stuck,
           count(*) FILTER (WHERE status = 'processing' AND {_GONE}) AS abandoned,
           count(*) FILTER (WHERE status = 'completed') AS completed,
           count(*) FILTER (WHERE status = 'dead') AS dead,
           EXTRACT(EPOCH FROM {_NOW} - min(created_at) FILTER (WHERE status = 'pending'))
               AS oldest_pending_seconds
    FROM memory_write_queue AS q
    WHERE CAST(:namespace AS text) IS NULL OR q.namespace = :namespace
    """
)
DEAD = text(
    """
    SELECT id, namespace, op, attempts, last_error, updated_at FROM memory_write_queue
    WHERE status = 'dead' ORDER BY updated_at DESC, id DESC LIMIT :limit
    """
)
# A drainer's own commits may skip the WAL flush wait: losing one in a crash loses a claim
# (the item stays pending) or an item's work together with its completion (the item stays
# processing and is reclaimed), never one without the other. Enqueues stay synchronous.
ASYNC_COMMIT = text("SET LOCAL synchronous_commit = off")
# pg_stat_activity is read once per transaction and then kept: drop that copy so a
# backend that connected since is not taken for gone.
FRESH_ACTIVITY = text("SELECT pg_stat_clear_snapshot()")
LISTEN = text(f"LISTEN {CHANNEL}")
UNLISTEN = text(f"UNLISTEN {CHANNEL}")

# One memory of the namespace, and when it is a turn chunk, every chunk of its message.
FORGET_MEMORY = text(
    """
    DELETE FROM memories m USING memories target
    WHERE target.id = :id AND target.namespace = :namespace
      AND m.namespace = target.namespace
      AND (m.id = target.id
           OR (target.kind = 'turn' AND m.kind = 'turn'
               AND m.session_id = target.session_id AND m.message_ids = target.message_ids))
    RETURNING m.id
    """
)
