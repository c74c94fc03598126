"""The serving role's engine, and the namespace each of its transactions is scoped to.

The second wall behind each query's ``WHERE namespace = ...``: the serving role
(``archivist_serving``) sees and writes only the rows of the namespace its transaction was
scoped to by a key. ``storage.keys.resolve_key`` presents the key's hash to
``archivist_scope`` (migration 0024), a function that runs as the owner: for a valid key
it scopes the transaction to the key's namespace, for reading or (``write``, with a key
that may write) for writing too; for any other it leaves the transaction with no scope,
which sees nothing. The serving role cannot scope a transaction itself: the policies trust
only a value that function signed for this transaction. A query that forgets its
namespace filter still returns one namespace.

A serving process connects only as the serving role: ``serving_url`` never hands out the
owner's or the pipeline's credentials, and with the embedded server it leaves the
server's tuning to the processes that own it.
"""

from __future__ import annotations

from sqlalchemy import Engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from storage.kernel.errors import ConfigurationError, StorageError
from storage.kernel.settings import Settings
from storage.server.engine import (
    configured_url,
    embedded_url,
    get_engine,
    install_signal_handlers,
    psycopg_url,
    resolve_url,
)
from storage.server.roles import PIPELINE_ROLE, SERVING_ROLE

__all__ = ["PIPELINE_ROLE", "SERVING_ROLE", "open_serving_engine", "serving_url"]

WHO = text(
    "SELECT current_user, rolbypassrls OR rolsuper FROM pg_roles WHERE rolname = current_user"
)


def serving_url(settings: Settings) -> str:
    """``ARCHIVIST_SERVING__DATABASE_URL``; else the pipeline's or the owner's URL with the
    serving role as its user and no password; else the embedded server's, with that user."""
    configured = settings.serving.database_url
    if configured is not None:
        return psycopg_url("ARCHIVIST_SERVING__DATABASE_URL", configured)
    base = configured_url(settings)
    if base is not None:
        url = make_url(psycopg_url(*base))
    else:
        pgdata, keep_alive = settings.pgdata_dir, settings.embedded_keep_alive_seconds
        url = make_url(embedded_url(pgdata, keep_alive, tune=False))
    return url.set(username=SERVING_ROLE, password=None).render_as_string(hide_password=False)


def open_serving_engine(settings: Settings) -> Engine:
    """The pool that serving uses: the serving role when row-level security is on (the
    default), else the pipeline's role. Refuses a role that would bypass the policies."""
    install_signal_handlers()
    # One connection per request served at once, and one for the batches of the searches'
    # accesses (``serving._accesses``), which would otherwise open one past the pool while
    # every request's is taken (and PostgreSQL start a backend for it).
    size = settings.serving.pool_size + 1
    if not settings.serving.row_level_security:
        return get_engine(resolve_url(settings), size)
    engine = get_engine(serving_url(settings), size)
    try:
        with engine.connect() as conn:
            user, bypass = conn.execute(WHO).one()
    except OperationalError as exc:
        raise StorageError(
            f"cannot log in as the serving role: {exc.orig}; run `archivist db upgrade` (it "
            "creates the role), and on a server of your own run `archivist db roles` and set "
            f"ARCHIVIST_SERVING__DATABASE_URL to the URL it prints for {SERVING_ROLE}"
        ) from exc
    if bypass is not False:
        raise ConfigurationError(
            f"the serving URL logs in as {user!r}, which bypasses row-level security; use role "
            f"{SERVING_ROLE} (or set ARCHIVIST_SERVING__ROW_LEVEL_SECURITY=false deliberately)"
        )
    if user != SERVING_ROLE:
        raise ConfigurationError(
            f"the serving URL logs in as {user!r}; use role {SERVING_ROLE}, which the "
            "policies scope by key (or set ARCHIVIST_SERVING__ROW_LEVEL_SECURITY=false "
            "deliberately)"
        )
    return engine
