"""Errors of the serving layer, each with the HTTP status the API answers with.

Bad input raised by the store (``InputError``, ``RetrievalError``) answers 422 with its own
message, input over a configured size (``TooLarge``) 413; a refusal of the service
(``ServiceError`` below 500) with its own status and message. A server error never shows its
text to a client: a failing store (``StorageError``, a database error,
``ServiceUnavailable``) answers 503 and anything else 500, each with a fixed message, while
the detail and its traceback go to the server's log.
"""

from __future__ import annotations

import logging

from sqlalchemy.exc import DBAPIError

from storage.kernel.errors import (
    ArchivistError,
    InputError,
    RetrievalError,
    StorageError,
    TooLarge,
)

log = logging.getLogger("archivist.serving")

UNAVAILABLE = "the store is unavailable; the server's log has the details"
INTERNAL = "internal error; the server's log has the details"


class ServiceError(ArchivistError):
    status = 500


class Unauthorized(ServiceError):
    status = 401


class Forbidden(ServiceError):
    status = 403


class NotFound(ServiceError):
    status = 404


class Conflict(ServiceError):
    status = 409


class ServiceUnavailable(ServiceError):
    status = 503


def error_reply(exc: BaseException) -> tuple[int, str]:
    """The status and message a client gets for ``exc``; a server error is logged here."""
    if isinstance(exc, ServiceError) and exc.status < 500:
        return exc.status, str(exc)
    if isinstance(exc, TooLarge):
        return 413, str(exc)
    if isinstance(exc, InputError | RetrievalError):
        return 422, str(exc)
    unavailable = isinstance(exc, ServiceUnavailable | StorageError | DBAPIError)
    log.error("%s: %s", type(exc).__name__, exc, exc_info=exc)
    return (503, UNAVAILABLE) if unavailable else (500, INTERNAL)
