"""The HTTP API's answers to errors: every one is JSON ``{"error": message}``.

The key is judged before the input: a request to a namespace route with no key, or a key
that does not stand, answers 401 even when its body or path is bad too (FastAPI reads the
body before the endpoint checks the key, so the handlers of bad input check it first).
Bad input names what to send instead: a body that is not JSON, not UTF-8, nested too
deeply or sent with another content type, a field that does not validate.
"""

from __future__ import annotations

from email.message import Message
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException

from serving._errors import INTERNAL, ServiceError, error_reply
from serving._service import MemoryService
from storage.kernel.errors import InputError, RetrievalError, StorageError
from storage.kernel.inputs import printable

NAMESPACE_ROUTES = "/v1/namespaces/"
# What FastAPI answers (400) when the body cannot be read as JSON for a reason other than
# a syntax error: the cause says which.
UNPARSABLE = "There was an error parsing the body"


def reply(status: int, message: str) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def install(app: FastAPI, service: MemoryService) -> None:
    """Every error of ``app`` as ``{"error": message}`` with its status."""

    def refused(request: Request) -> JSONResponse | None:
        """The answer to a namespace route's missing or refused key; None: the key stands
        (or the route needs none). Runs in a worker thread, as the handlers below do."""
        if not request.url.path.startswith(NAMESPACE_ROUTES):
            return None
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        try:
            service.authenticate(key.strip() if scheme.lower() == "bearer" else None)
        except Exception as exc:  # the key's refusal, or the store failing to judge it
            return reply(*error_reply(exc))
        return None

    @app.exception_handler(ServiceError)
    @app.exception_handler(InputError)
    @app.exception_handler(RetrievalError)
    @app.exception_handler(StorageError)
    @app.exception_handler(DBAPIError)
    def service_error(_: Request, exc: Exception) -> JSONResponse:
        return reply(*error_reply(exc))

    @app.exception_handler(Exception)
    def server_error(_: Request, exc: Exception) -> JSONResponse:
        # Starlette raises it again after this answer, and uvicorn logs its traceback.
        return reply(500, INTERNAL)

    @app.exception_handler(RequestValidationError)
    def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        media = _media_type(request)
        problems = [_problem(e, media) for e in exc.errors()]
        return refused(request) or reply(422, "; ".join(dict.fromkeys(problems)))

    @app.exception_handler(HTTPException)
    def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.detail == UNPARSABLE:
            return refused(request) or reply(422, _unparsable(exc.__cause__))
        return reply(exc.status_code, str(exc.detail))


def _media_type(request: Request) -> str | None:
    """The request's content type without parameters; None when it sent none."""
    declared = request.headers.get("content-type")
    if not declared:
        return None
    message = Message()
    message["content-type"] = declared
    return message.get_content_type()


def _json_media(media: str | None) -> bool:
    """Whether FastAPI reads a body of this content type as JSON (none: it does too)."""
    return media is None or media == "application/json" or media.endswith("+json")


def _problem(error: dict[str, Any], media: str | None) -> str:
    location = tuple(error.get("loc", ()))
    if error.get("type") == "json_invalid":  # its place is a character, not a field
        reason = (error.get("ctx") or {}).get("error", "cannot be parsed")
        return f"body: not valid JSON: {reason} (character {location[-1]})"
    if location == ("body",) and not _json_media(media):
        return f"body: send JSON with Content-Type: application/json, not {media}"
    where = ".".join(str(part) for part in location if part != "body")
    rule = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    return f"{printable(where, 80) or 'body'}: {rule}"


def _unparsable(cause: BaseException | None) -> str:
    """What was wrong with a body FastAPI could not read as JSON."""
    if isinstance(cause, UnicodeDecodeError):
        return f"body: not valid UTF-8 (byte {cause.start}); send JSON encoded as UTF-8"
    if isinstance(cause, RecursionError):
        return "body: JSON nested too deeply; send arrays and objects a few levels deep"
    return "body: cannot be read as JSON; send a JSON object encoded as UTF-8"
