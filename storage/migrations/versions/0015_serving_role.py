"""Row-level security: the serving role sees one namespace per transaction; namespace keys.

Revision ID: 0015
Revises: 0014

``archivist api``, ``archivist mcp`` and the retrieval they use log in as
``archivist_serving``. Every table that holds namespace data gets a policy that shows and
accepts only rows of ``current_setting('archivist.namespace')``, which the serving code
sets per transaction (``storage.server.scoped``); unset, the role sees nothing. ``chat_messages``
has no namespace column: a message is visible when its session is. The flows keep the
migrating role (the tables' owner, which policies do not bind) for cross-namespace work.

The serving role gets only what serving does: read, record access, pin, forget one
memory, queue a write, audit. ``api_keys`` holds hashes of namespace keys; the serving
role cannot read it and resolves a key only through ``archivist_key_grant``, which runs as
the owner and answers for one hash.

Under a policy PostgreSQL evaluates a condition before the policy's only if its function is
leakproof, so ``tsv @@ query`` (``ts_match_vq``) stops being an index condition: the lexical
candidates then scan the whole namespace (p95 of search at 100,000 memories went from 30 to
117 ms). The function returns a boolean and raises no error that depends on the row, so the
migration marks it LEAKPROOF, which needs a superuser; otherwise it says so, and an
administrator can run the same ``ALTER FUNCTION``.

On a managed PostgreSQL the migrating role needs CREATEROLE to create the serving role, or
an administrator creates it first (``CREATE ROLE archivist_serving LOGIN PASSWORD ...``,
without BYPASSRLS); the migration then only grants. The serving URL is
``ARCHIVIST_SERVING__DATABASE_URL``.
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

ROLE = "archivist_serving"
NAMESPACE_TABLES = (
    "archive_manifest",
    "archived_memories",
    "audit_log",
    "chat_sessions",
    "episodes",
    "long_term_entries",
    "memories",
    "memory_access_log",
    "memory_file_blocks",
    "memory_write_queue",
    "namespace_terms",
    "processed_sessions",
)
GRANTS = (
    f"GRANT USAGE ON SCHEMA public TO {ROLE}",
    f"GRANT SELECT ON {', '.join(NAMESPACE_TABLES)}, chat_messages TO {ROLE}",
    f"GRANT SELECT ON archivist_meta, alembic_version TO {ROLE}",
    f"GRANT SELECT, INSERT ON embedding_cache TO {ROLE}",
    # Search records access; pin and unpin; forget one memory (the trigger clears references).
    f"GRANT UPDATE (access_count, last_accessed_at, pinned, salience), DELETE ON memories "
    f"TO {ROLE}",
    f"GRANT INSERT, DELETE ON memory_access_log TO {ROLE}",
    f"GRANT UPDATE (memory_id) ON episodes, long_term_entries TO {ROLE}",
    f"GRANT INSERT ON memory_write_queue, audit_log TO {ROLE}",
    f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {ROLE}",
)
SCOPE = "current_setting('archivist.namespace', true)"


LEAKPROOF_MATCH = """
    DO $$
    BEGIN
        IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
            ALTER FUNCTION ts_match_vq(tsvector, tsquery) LEAKPROOF;
        ELSE
            RAISE WARNING 'not a superuser: ask an administrator to run ALTER FUNCTION '
                'ts_match_vq(tsvector, tsquery) LEAKPROOF, or lexical search under row-level '
                'security scans whole namespaces';
        END IF;
    END $$
"""


def upgrade() -> None:
    op.execute(
        f"""
        DO $$
        BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{ROLE}') THEN
                CREATE ROLE {ROLE} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
            END IF;
        EXCEPTION
            WHEN duplicate_object THEN NULL;  -- another database's migration made it
            WHEN insufficient_privilege THEN
                RAISE EXCEPTION 'cannot create role {ROLE}: give the migrating role '
                    'CREATEROLE, or create it first: CREATE ROLE {ROLE} LOGIN PASSWORD ...';
        END $$
        """
    )
    for grant in GRANTS:
        op.execute(grant)
    for table in NAMESPACE_TABLES:
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(
            f"CREATE POLICY namespace_scope ON {table} TO {ROLE} "
            f"USING (namespace = {SCOPE}) WITH CHECK (namespace = {SCOPE})"
        )
    op.execute(LEAKPROOF_MATCH)
    op.execute("ALTER TABLE chat_messages ENABLE ROW LEVEL SECURITY")
    op.execute(
        f"CREATE POLICY namespace_scope ON chat_messages TO {ROLE} "
        "USING (EXISTS (SELECT 1 FROM chat_sessions s WHERE s.id = chat_messages.session_id))"
    )
    op.execute(
        """
        CREATE TABLE api_keys (
            id bigserial PRIMARY KEY,
            namespace varchar(100) NOT NULL,
            key_hash varchar(64) NOT NULL CONSTRAINT uq_api_keys_key_hash UNIQUE,
            prefix varchar(16) NOT NULL,
            read_only boolean NOT NULL DEFAULT false,
            label varchar(100),
            created_at timestamptz NOT NULL DEFAULT now(),
            revoked_at timestamptz,
            last_used_at timestamptz
        );
        CREATE INDEX ix_api_keys_namespace ON api_keys (namespace);
        """
    )
    # Runs as its owner: answers for one hash, and notes the use at most once a minute.
    op.execute(
        f"""
        CREATE FUNCTION archivist_key_grant(hash text)
        RETURNS TABLE (key_id bigint, namespace varchar, read_only boolean, revoked boolean)
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
        BEGIN
            UPDATE api_keys k SET last_used_at = now()
            WHERE k.key_hash = hash AND k.revoked_at IS NULL
              AND (k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute');
            RETURN QUERY SELECT k.id, k.namespace, k.read_only, k.revoked_at IS NOT NULL
                FROM api_keys k WHERE k.key_hash = hash;
        END $$;
        REVOKE ALL ON FUNCTION archivist_key_grant(text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION archivist_key_grant(text) TO {ROLE};
        """
    )


def downgrade() -> None:
    op.execute(LEAKPROOF_MATCH.replace(") LEAKPROOF;", ") NOT LEAKPROOF;"))
    op.execute("DROP FUNCTION archivist_key_grant(text)")
    op.execute("DROP TABLE api_keys")
    for table in (*NAMESPACE_TABLES, "chat_messages"):
        op.execute(f"DROP POLICY namespace_scope ON {table}")
        op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
    op.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {ROLE}")
    op.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {ROLE}")
    op.execute(f"REVOKE USAGE ON SCHEMA public FROM {ROLE}")
