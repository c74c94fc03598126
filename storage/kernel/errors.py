"""Archivist's exceptions: one small hierarchy, so callers catch what they can handle.

ArchivistError
├── ConfigurationError   bad settings, missing pgvector, embedder/schema mismatch
├── StorageError         the store cannot be reached or is not migrated
├── InputError           bad transcripts or parameters that cannot be processed at all
│   ├── PermanentError   a refusal that retrying the same input cannot change
│   └── TooLarge         input over a configured size (the HTTP API answers 413)
├── DataQualityError     data that fails a check before load
└── RetrievalError       a search or priming request that cannot be answered
"""

from __future__ import annotations


class ArchivistError(Exception):
    """Base class of every error Archivist raises on purpose."""


class ConfigurationError(ArchivistError):
    """Settings that cannot work: fix the configuration named in the message."""


class StorageError(ArchivistError):
    """The database or the object store is unreachable or not in the expected state."""


class InputError(ArchivistError):
    """Input that cannot be processed at all (a per-line problem is reported, not raised)."""


class PermanentError(InputError):
    """A refusal that retrying cannot change (another namespace's data): dead at once, no retry."""


class TooLarge(InputError):
    """Input over a size the configuration sets; the message names the setting."""


class DataQualityError(ArchivistError):
    """Data that fails a quality check; the message carries counts and examples."""


class RetrievalError(ArchivistError):
    """A search or priming request that cannot be answered."""


def _refused_rows() -> tuple[type[Exception], ...]:
    import psycopg
    from sqlalchemy import exc

    return (exc.DataError, exc.IntegrityError, psycopg.DataError, psycopg.IntegrityError)


# What the database says of rows it will not store (what one record's data can cause, unlike
# a server that is gone): as SQLAlchemy wraps it, and as psycopg raises it from a COPY.
ROWS_REFUSED = _refused_rows()
