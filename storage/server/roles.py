"""The pipeline and serving roles on a server the owner administers (``archivist db roles``).

Migrations create both roles when they can (migrations 0015 and 0024) and grant them what
they may do; this gives each a new password, creating it first if it is missing, and makes
the URL each process is to be given: the owner's, with the role's name and password. The
password reaches the server only as a SCRAM-SHA-256 verifier (libpq computes it), never
in clear in a statement that a server log could keep.
"""

from __future__ import annotations

import secrets

from psycopg import sql
from psycopg.errors import InsufficientPrivilege
from sqlalchemy import Connection
from sqlalchemy.engine import make_url

from storage.kernel.errors import StorageError

PIPELINE_ROLE = "archivist_pipeline"
SERVING_ROLE = "archivist_serving"
# The role of each kind of process, and the setting its URL goes to.
ROLES = {
    "pipeline": (PIPELINE_ROLE, "ARCHIVIST_PIPELINE__DATABASE_URL"),
    "serving": (SERVING_ROLE, "ARCHIVIST_SERVING__DATABASE_URL"),
}
CREATE = sql.SQL(
    "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = {name}) THEN "
    "CREATE ROLE {role} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE {bypass}; "
    "END IF; END $$"
)
# The pipeline crosses namespaces and loads with COPY (migration 0024); serving never.
BYPASS = {PIPELINE_ROLE: sql.SQL("BYPASSRLS"), SERVING_ROLE: sql.SQL("NOBYPASSRLS")}
PASSWORD = sql.SQL("ALTER ROLE {role} WITH LOGIN PASSWORD {verifier}")


def new_password() -> str:
    """32 random URL-safe characters (192 bits): no quoting needed in a URL."""
    return secrets.token_urlsafe(24)


def set_login(conn: Connection, role: str, password: str) -> None:
    """Create ``role`` if it is missing, and let it log in with ``password`` only."""
    raw = conn.connection.driver_connection
    if raw is None:
        raise StorageError("no database connection to set a role's password on")
    verifier = raw.pgconn.encrypt_password(password.encode(), role.encode(), b"scram-sha-256")
    try:
        bypass = BYPASS[role]
        raw.execute(CREATE.format(name=sql.Literal(role), role=sql.Identifier(role), bypass=bypass))
        raw.execute(
            PASSWORD.format(role=sql.Identifier(role), verifier=sql.Literal(verifier.decode()))
        )
    except InsufficientPrivilege as exc:
        raise StorageError(
            f"the owner's role may not create or change role {role}: give it CREATEROLE (and "
            f"ADMIN OPTION on {role}), or have an administrator run "
            f"CREATE ROLE {role} LOGIN PASSWORD '...' and build its URL by hand ({exc})"
        ) from exc


def role_url(owner_url: str, role: str, password: str) -> str:
    """The owner's URL with ``role`` and its password in place of the owner's."""
    url = make_url(owner_url).set(username=role, password=password)
    return url.render_as_string(hide_password=False)
