"""Errors of the serving layer, each with the HTTP status the API answers with.

Bad input raised by the store (``InputError``, ``RetrievalError``) answers 422 with its
own message; these are the rest.
"""

from __future__ import annotations

from storage.errors import ArchivistError, InputError, RetrievalError


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


def error_reply(exc: BaseException) -> tuple[int, str] | None:
    """The status and message the API answers an error of the service with (None: not one
    of its errors, a server error)."""
    if isinstance(exc, ServiceError):
        return exc.status, str(exc)
    if isinstance(exc, InputError | RetrievalError):
        return 422, str(exc)
    return None
