"""The serving role's engine, and the namespace every one of its transactions is scoped to.

The second wall behind each query's ``WHERE namespace = ...``: the serving role
(``archivist_serving``, migration 0015) sees and writes only the rows of
``current_setting('archivist.namespace')``, which ``scope`` sets for the current
transaction alone. A query that forgets its namespace filter still returns one namespace.
"""

from __future__ import annotations

from sqlalchemy import Connection, Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from storage.kernel.errors import ConfigurationError, StorageError
from storage.kernel.settings import Settings
from storage.server.engine import get_engine, install_signal_handlers, resolve_url

SERVING_ROLE = "archivist_serving"
SCOPE = text("SELECT set_config('archivist.namespace', :namespace, true)")
# Searches commit only access statistics: a crash of PostgreSQL may lose the last fraction
# of a second of them, never a memory, and no search waits for the WAL flush.
SCOPE_RELAXED = text(
    "SELECT set_config('archivist.namespace', :namespace, true), "
    "set_config('synchronous_commit', 'off', true)"
)
WHO = text(
    "SELECT current_user, rolbypassrls OR rolsuper FROM pg_roles WHERE rolname = current_user"
)


def scope(conn: Connection, namespace: str, *, relaxed: bool = False) -> None:
    """Bind this transaction to ``namespace`` (reset at its end; harmless for the owner);
    ``relaxed``: its commit does not wait for the WAL flush (searches only)."""
    conn.execute(SCOPE_RELAXED if relaxed else SCOPE, {"namespace": namespace})


def serving_url(settings: Settings) -> str:
    """``ARCHIVIST_SERVING__DATABASE_URL``, or the store's URL logged in as the serving role."""
    configured = settings.serving.database_url
    if configured is not None:
        url = make_url(configured.get_secret_value())
        if url.drivername in ("postgresql", "postgres"):
            url = url.set(drivername="postgresql+psycopg")
        return url.render_as_string(hide_password=False)
    url = make_url(resolve_url(settings)).set(username=SERVING_ROLE, password=None)
    return url.render_as_string(hide_password=False)


def open_serving_engine(settings: Settings) -> Engine:
    """The pool that serving uses: the serving role when row-level security is on (the
    default), else the store's own role. Refuses a role that would bypass the policies."""
    install_signal_handlers()
    size = settings.serving.pool_size
    if not settings.serving.row_level_security:
        return get_engine(resolve_url(settings), size)
    engine = get_engine(serving_url(settings), size)
    try:
        with engine.connect() as conn:
            user, bypass = conn.execute(WHO).one()
    except OperationalError as exc:
        raise StorageError(
            f"cannot log in as the serving role: {exc.orig}; run `archivist db upgrade` (it "
            "creates the role), and on a managed PostgreSQL set ARCHIVIST_SERVING__DATABASE_URL "
            f"to a URL of role {SERVING_ROLE} with its password"
        ) from exc
    if bypass is not False:
        raise ConfigurationError(
            f"the serving URL logs in as {user!r}, which bypasses row-level security; use role "
            f"{SERVING_ROLE} (or set ARCHIVIST_SERVING__ROW_LEVEL_SECURITY=false deliberately)"
        )
    return engine
