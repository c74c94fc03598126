"""Failures to reach files or a bucket, said in one line instead of a library traceback."""

from __future__ import annotations

_CREDENTIALS = {"NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError"}


def storage_problem(exc: BaseException) -> str | None:
    """The line to show for a storage failure, or None when ``exc`` is something else.

    botocore's errors are recognised by module, so the CLI does not import it to check.
    """
    kind = type(exc)
    if kind.__module__.startswith(("botocore", "aiobotocore")):
        hint = ""
        if kind.__name__ in _CREDENTIALS:
            hint = (
                "; set AWS credentials (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a "
                'profile), or "key" and "secret" in ARCHIVIST_STORAGE_OPTIONS'
            )
        return f"cannot reach the object store: {exc}{hint}"
    if isinstance(exc, OSError):
        where = f" {exc.filename}" if exc.filename else ""
        return f"cannot access{where}: {exc.strerror or exc}"
    return None
