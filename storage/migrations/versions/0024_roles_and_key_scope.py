"""Three roles, and a namespace scope the serving role cannot set for itself.

Revision ID: 0024
Revises: 0023

**The pipeline role.** ``archivist_pipeline`` is the role of the flows and the workers
(``ARCHIVIST_PIPELINE__DATABASE_URL``): it reads and writes every table's rows, in every
namespace, and may ``VACUUM`` and ``ANALYZE`` them (``MAINTAIN``, PostgreSQL 17 and
later), but owns nothing: it cannot change the schema, create or drop indexes, or read the
scope key below. It bypasses row-level security (``BYPASSRLS``: PostgreSQL refuses ``COPY
FROM``, the sync's bulk load, under a policy), which needs a superuser to give; without
it the migration warns, and a policy ``pipeline_all`` on each table with row-level
security still shows it every row.
Tables later migrations create are granted to it by default privileges; a later table with
row-level security needs its own ``pipeline_all`` policy (a test checks every such table).
The owner, the role that runs the migrations, keeps everything else.

**A scope bound to a key.** Until now the policies trusted ``archivist.namespace``, a custom
setting that any role can set: the serving role could ``SET archivist.namespace = 'bob'``
and read bob's rows. Now the serving role presents a key's hash to ``archivist_scope``
(``SECURITY DEFINER``), which checks it against ``api_keys`` and, for a valid key, sets
``archivist.scope`` to ``namespace/mode/tag``: ``mode`` is ``r`` or ``w`` (``w`` only when
the caller asks to write and the key is not read-only), and ``tag`` an HMAC-SHA256 under a
random key kept in ``archivist_scope_key`` (which only the owner reads) of the namespace,
the mode, this backend's pid and this transaction's start time. The policies call
``archivist_namespace()`` (``SECURITY DEFINER`` too), which recomputes the tag and answers
the namespace only when it matches, else NULL (nothing is visible).

So a value the serving role writes itself fails the check; a value copied from another
transaction fails too (another start time, or another backend's pid), as does a tag for
``alice`` presented as ``alice2`` or with mode ``w``. The setting is ``LOCAL``: it ends
with the transaction, and ``archivist_scope`` clears it before it checks a key, so a wrong
key leaves the transaction with no scope. Two transactions of one backend share a start
time only when one client message runs both (PostgreSQL takes the time at the message),
and then the second can carry only a scope the first was given by a key.

**Writes need a write scope.** ``memories``, ``episodes``, ``long_term_entries`` and
``memory_write_queue`` show their rows under any scope but change them only under a ``w``
scope: pinning, forgetting and queueing a write need a key that may write, checked by the
database as well as by the API. Recording accesses and auditing work under either mode.

**Adopting a model.** A store with no vectors yet adopts the first embedder that opens it
(``storage.meta``). The serving role sees no rows outside a scope and cannot write
``archivist_meta``, so it adopts through ``archivist_adopt_model``, which does so only for
a store that holds no vector at all.

``archivist_key_grant`` (migration 0015) is replaced by ``archivist_scope``.
"""

from __future__ import annotations

import secrets

from alembic import op
from sqlalchemy import text

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

SERVING = "archivist_serving"
PIPELINE = "archivist_pipeline"
OLD_SCOPE = "current_setting('archivist.namespace', true)"
READ = "(SELECT archivist_namespace())"
WRITE = "(SELECT archivist_namespace(true))"
# Tables the serving role may change only under a write scope.
WRITE_GATED = (
    "document_chunks",
    "documents",
    "episodes",
    "long_term_entries",
    "memories",
    "memory_write_queue",
)
# The policies that compare as ``IS TRUE`` (not an index condition, migration 0018).
NOT_INDEXED = ("document_chunks", "memories")
POLICY_TABLES = text(
    "SELECT DISTINCT tablename FROM pg_policies "
    "WHERE schemaname = current_schema() AND policyname = 'namespace_scope' ORDER BY 1"
)
# Every table with row-level security, for the pipeline's policy.
RLS_TABLES = text(
    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
    "WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relrowsecurity ORDER BY 1"
)

CREATE_ROLE = f"""
    DO $$
    BEGIN
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{PIPELINE}') THEN
            CREATE ROLE {PIPELINE} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE;
        END IF;
    EXCEPTION
        WHEN duplicate_object THEN NULL;  -- another database's migration made it
        WHEN insufficient_privilege THEN
            RAISE EXCEPTION 'cannot create role {PIPELINE}: give the migrating role '
                'CREATEROLE, or create it first: CREATE ROLE {PIPELINE} LOGIN BYPASSRLS '
                'PASSWORD ...';
    END $$
"""
# The pipeline loads memories with COPY, which PostgreSQL refuses under row-level security
# ("COPY FROM not supported with row-level security"): it needs BYPASSRLS, which only a
# superuser (or, from PostgreSQL 16, a role that has it) can give.
BYPASS = f"""
    DO $$
    BEGIN
        IF NOT (SELECT rolbypassrls FROM pg_roles WHERE rolname = '{PIPELINE}') THEN
            ALTER ROLE {PIPELINE} BYPASSRLS;
        END IF;
    EXCEPTION
        WHEN insufficient_privilege THEN
            RAISE WARNING 'cannot give role {PIPELINE} BYPASSRLS: ask an administrator to run '
                'ALTER ROLE {PIPELINE} BYPASSRLS, or the flows cannot load memories';
    END $$
"""
PIPELINE_GRANTS = (
    f"GRANT USAGE ON SCHEMA public TO {PIPELINE}",
    f"GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA public TO {PIPELINE}",
    f"GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO {PIPELINE}",
    f"ALTER DEFAULT PRIVILEGES IN SCHEMA public "
    f"GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON TABLES TO {PIPELINE}",
    f"ALTER DEFAULT PRIVILEGES IN SCHEMA public "
    f"GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO {PIPELINE}",
)
# VACUUM and ANALYZE by a role that owns nothing: the MAINTAIN privilege (PostgreSQL 17).
MAINTAIN = f"""
    DO $$
    BEGIN
        IF current_setting('server_version_num')::int >= 170000 THEN
            EXECUTE 'GRANT MAINTAIN ON ALL TABLES IN SCHEMA public TO {PIPELINE}';
            EXECUTE 'ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT MAINTAIN ON TABLES '
                    'TO {PIPELINE}';
        END IF;
    END $$
"""

SCOPE_FUNCTIONS = f"""
    CREATE TABLE archivist_scope_key (
        id boolean PRIMARY KEY DEFAULT true CHECK (id),
        inner_pad bytea NOT NULL,
        outer_pad bytea NOT NULL
    );
    REVOKE ALL ON archivist_scope_key FROM PUBLIC, {PIPELINE}, {SERVING};

    -- HMAC-SHA256 of the namespace and mode for this backend and this transaction. Not a
    -- definer: only the two functions below call it, as the owner.
    CREATE FUNCTION archivist_scope_tag(namespace text, mode text) RETURNS text
    LANGUAGE sql STABLE PARALLEL RESTRICTED SET search_path = public, pg_temp AS $$
        SELECT encode(sha256(k.outer_pad || sha256(k.inner_pad || convert_to(concat_ws('/',
            pg_backend_pid(), (extract(epoch FROM transaction_timestamp()) * 1000000)::bigint,
            mode, namespace), 'UTF8'))), 'hex')
        FROM archivist_scope_key k
    $$;
    REVOKE ALL ON FUNCTION archivist_scope_tag(text, text) FROM PUBLIC;

    CREATE FUNCTION archivist_scope(hash text, writing boolean DEFAULT false)
    RETURNS TABLE (key_id bigint, namespace varchar, read_only boolean, revoked boolean)
    LANGUAGE plpgsql SECURITY DEFINER PARALLEL RESTRICTED SET search_path = public, pg_temp
    AS $$
    DECLARE
        k api_keys%ROWTYPE;
        mode text;
    BEGIN
        PERFORM set_config('archivist.scope', '', true);  -- no scope unless the key holds
        SELECT * INTO k FROM api_keys a WHERE a.key_hash = hash;
        IF NOT FOUND THEN
            RETURN;
        END IF;
        IF k.revoked_at IS NULL THEN
            mode := CASE WHEN writing AND NOT k.read_only THEN 'w' ELSE 'r' END;
            PERFORM set_config('archivist.scope', concat_ws('/', k.namespace, mode,
                archivist_scope_tag(k.namespace, mode)), true);
            -- Noted at most once a minute, and never waiting: another transaction of the
            -- same request may hold the row (SKIP LOCKED).
            UPDATE api_keys a SET last_used_at = now()
            WHERE a.id = (SELECT u.id FROM api_keys u WHERE u.id = k.id
                          AND (u.last_used_at IS NULL
                               OR u.last_used_at < now() - interval '1 minute')
                          FOR UPDATE SKIP LOCKED);
        END IF;
        RETURN QUERY SELECT k.id, k.namespace, k.read_only,
                            k.revoked_at IS NOT NULL;
    END $$;
    REVOKE ALL ON FUNCTION archivist_scope(text, boolean) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION archivist_scope(text, boolean) TO {SERVING};

    -- The namespace this transaction is scoped to by a key, or NULL; ``writing``: only
    -- under a write scope.
    CREATE FUNCTION archivist_namespace(writing boolean DEFAULT false) RETURNS text
    LANGUAGE plpgsql STABLE SECURITY DEFINER PARALLEL RESTRICTED
    SET search_path = public, pg_temp AS $$
    DECLARE
        token text := current_setting('archivist.scope', true);
        ns text := split_part(token, '/', 1);
        mode text := split_part(token, '/', 2);
    BEGIN
        IF coalesce(token, '') = '' OR (writing AND mode <> 'w') THEN
            RETURN NULL;
        END IF;
        IF token = concat_ws('/', ns, mode, archivist_scope_tag(ns, mode)) THEN
            RETURN ns;
        END IF;
        RETURN NULL;
    END $$;
    REVOKE ALL ON FUNCTION archivist_namespace(boolean) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION archivist_namespace(boolean) TO {SERVING};

    -- A store with no vectors adopts the model of the embedder that opens it. The store's
    -- model afterwards: the one recorded, else the one most of its vectors name.
    CREATE FUNCTION archivist_adopt_model(model text) RETURNS text
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    BEGIN
        IF NOT EXISTS (SELECT FROM memories) AND NOT EXISTS (SELECT FROM document_chunks) THEN
            INSERT INTO archivist_meta (key, value) VALUES ('embedding_model', model)
            ON CONFLICT (key) DO UPDATE SET value = excluded.value;
        END IF;
        RETURN coalesce(
            (SELECT value FROM archivist_meta WHERE key = 'embedding_model'),
            (SELECT m.embedding_model FROM memories m GROUP BY 1 ORDER BY count(*) DESC, 1
             LIMIT 1),
            (SELECT c.embedding_model FROM document_chunks c GROUP BY 1
             ORDER BY count(*) DESC, 1 LIMIT 1));
    END $$;
    REVOKE ALL ON FUNCTION archivist_adopt_model(text) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION archivist_adopt_model(text) TO {SERVING};

    DROP FUNCTION archivist_key_grant(text);
"""

KEY_GRANT = f"""
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
    GRANT EXECUTE ON FUNCTION archivist_key_grant(text) TO {SERVING};
"""


def _pads() -> dict[str, bytes]:
    """HMAC's inner and outer keys (RFC 2104) of a new random 32-byte key."""
    key = secrets.token_bytes(32).ljust(64, b"\0")
    return {
        "inner": bytes(b ^ 0x36 for b in key),
        "outer": bytes(b ^ 0x5C for b in key),
    }


def _matches(table: str, scope: str) -> str:
    if table in NOT_INDEXED:
        return f"((namespace = {scope}) IS TRUE)"
    return f"(namespace = {scope})"


def upgrade() -> None:
    bind = op.get_bind()
    op.execute(CREATE_ROLE)
    op.execute(BYPASS)
    for grant in PIPELINE_GRANTS:
        op.execute(grant)
    op.execute(MAINTAIN)
    op.execute(SCOPE_FUNCTIONS)
    bind.execute(
        text("INSERT INTO archivist_scope_key (inner_pad, outer_pad) VALUES (:inner, :outer)"),
        _pads(),
    )
    for table in bind.execute(POLICY_TABLES).scalars().all():
        if table == "chat_messages":
            continue  # visible when its session is: the policy of chat_sessions decides
        if table in WRITE_GATED:
            op.execute(f"DROP POLICY namespace_scope ON {table}")
            op.execute(
                f"CREATE POLICY namespace_scope ON {table} FOR SELECT TO {SERVING} "
                f"USING {_matches(table, READ)}"
            )
            op.execute(
                f"CREATE POLICY namespace_write ON {table} TO {SERVING} "
                f"USING {_matches(table, WRITE)} WITH CHECK {_matches(table, WRITE)}"
            )
        else:
            op.execute(
                f"ALTER POLICY namespace_scope ON {table} "
                f"USING {_matches(table, READ)} WITH CHECK {_matches(table, READ)}"
            )
    for table in bind.execute(RLS_TABLES).scalars().all():
        op.execute(
            f"CREATE POLICY pipeline_all ON {table} TO {PIPELINE} USING (true) WITH CHECK (true)"
        )


def downgrade() -> None:
    bind = op.get_bind()
    for table in bind.execute(RLS_TABLES).scalars().all():
        op.execute(f"DROP POLICY IF EXISTS pipeline_all ON {table}")
    for table in bind.execute(POLICY_TABLES).scalars().all():
        if table == "chat_messages":
            continue
        old = (
            f"(namespace = (SELECT {OLD_SCOPE})) IS TRUE"
            if table in NOT_INDEXED
            else (f"namespace = {OLD_SCOPE}")
        )
        if table in WRITE_GATED:
            op.execute(f"DROP POLICY namespace_write ON {table}")
            op.execute(f"DROP POLICY namespace_scope ON {table}")
            op.execute(
                f"CREATE POLICY namespace_scope ON {table} TO {SERVING} "
                f"USING ({old}) WITH CHECK (namespace = {OLD_SCOPE})"
            )
        else:
            op.execute(
                f"ALTER POLICY namespace_scope ON {table} "
                f"USING ({old}) WITH CHECK (namespace = {OLD_SCOPE})"
            )
    op.execute(KEY_GRANT)
    op.execute("DROP FUNCTION archivist_adopt_model(text)")
    op.execute("DROP FUNCTION archivist_namespace(boolean)")
    op.execute("DROP FUNCTION archivist_scope(text, boolean)")
    op.execute("DROP FUNCTION archivist_scope_tag(text, text)")
    op.execute("DROP TABLE archivist_scope_key")
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON TABLES FROM {PIPELINE}")
    op.execute(f"ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE ALL ON SEQUENCES FROM {PIPELINE}")
    op.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {PIPELINE}")
    op.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM {PIPELINE}")
    op.execute(f"REVOKE USAGE ON SCHEMA public FROM {PIPELINE}")
