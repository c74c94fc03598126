"""Searches' accesses recorded in batches: one statement for many searches.

Revision ID: 0030
Revises: 0029

Each search of the HTTP API counted its hits in a statement of its own (migration 0020's
access-log row and the pending counts of migration 0016), in its own transaction's scope:
about 0.5 ms of PostgreSQL's CPU and 0.3 of the server's per search, a third of it the
write transaction itself. ``archivist_record_searches`` records a batch of searches at
once (``serving._accesses`` sends one about every second): one access-log row per search,
its hits in rank order, and one pending upsert per memory however many searches of the
batch returned it.

The serving role cannot scope one transaction to many namespaces, so the function runs as
the owner (``SECURITY DEFINER``) and checks each search as the scope would: a search
counts only if the key whose hash it carries exists, is not revoked and is a key of the
search's namespace; a hit counts only if its memory is still in that namespace, hot or
archived (pending counts: hot only). A search of a key revoked since, or named under a
look-alike namespace, is not recorded; nor is a memory forgotten or purged between the
search and its batch (erasure: no access-log row names it afterwards), and a search none
of whose hits is left writes no row, as a search without hits never did.
"""

from __future__ import annotations

from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

SERVING = "archivist_serving"
PIPELINE = "archivist_pipeline"

# hit_search[n] is the (1-based) search that returned memory hit_ids[n], in rank order.
# A memory's pending row takes the batch's count and the time of the last search that
# returned it, locked in key order as the fold locks them (storage.operations.access).
RECORD_SEARCHES = f"""
    CREATE FUNCTION archivist_record_searches(
        hashes text[], namespaces text[], contexts text[], ats timestamptz[],
        hit_search integer[], hit_ids bigint[]
    ) RETURNS integer
    LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
        WITH searches AS (
            SELECT s.i, s.namespace, s.context, s.at
            FROM unnest(hashes, namespaces, contexts, ats)
                 WITH ORDINALITY AS s(hash, namespace, context, at, i)
            JOIN api_keys k ON k.key_hash = s.hash AND k.namespace = s.namespace
                           AND k.revoked_at IS NULL
        ), hits AS (
            SELECT s.i, s.namespace, s.at, h.id, h.n
            FROM unnest(hit_search, hit_ids) WITH ORDINALITY AS h(i, id, n)
            JOIN searches s ON s.i = h.i
            WHERE EXISTS (SELECT 1 FROM memories m
                          WHERE m.id = h.id AND m.namespace = s.namespace)
               OR EXISTS (SELECT 1 FROM archived_memories a
                          WHERE a.memory_id = h.id AND a.namespace = s.namespace)
        ), logged AS (
            INSERT INTO memory_access_log (namespace, context, accessed_at, memory_ids)
            SELECT s.namespace, s.context, s.at,
                   ARRAY(SELECT h.id FROM hits h WHERE h.i = s.i ORDER BY h.n)
            FROM searches s WHERE EXISTS (SELECT 1 FROM hits h WHERE h.i = s.i)
            ORDER BY s.i
            RETURNING 1
        ), counted AS (
            SELECT m.id, m.namespace, count(DISTINCT h.i) AS hits,
                   (array_agg(h.at ORDER BY h.i DESC))[1] AS at
            FROM hits h JOIN memories m ON m.id = h.id AND m.namespace = h.namespace
            GROUP BY m.id, m.namespace
        ), pending AS (
            INSERT INTO memory_access_pending AS p (memory_id, namespace, hits, last_accessed_at)
            SELECT id, namespace, hits, at FROM counted ORDER BY id, namespace
            ON CONFLICT (memory_id, namespace) DO UPDATE
            SET hits = p.hits + excluded.hits, last_accessed_at = excluded.last_accessed_at
            RETURNING 1
        )
        SELECT CAST(count(*) AS integer) FROM logged
    $$;
    REVOKE ALL ON FUNCTION archivist_record_searches(
        text[], text[], text[], timestamptz[], integer[], bigint[]) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION archivist_record_searches(
        text[], text[], text[], timestamptz[], integer[], bigint[]) TO {SERVING}, {PIPELINE};
"""


def upgrade() -> None:
    op.execute(RECORD_SEARCHES)


def downgrade() -> None:
    op.execute(
        "DROP FUNCTION archivist_record_searches("
        "text[], text[], text[], timestamptz[], integer[], bigint[])"
    )
