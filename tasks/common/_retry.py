"""Retries for Prefect tasks: only on I/O, with an explicit backoff (STYLE: Failure)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import DBAPIError


def retry_on_io(_task: Any, _run: Any, state: Any) -> bool:
    """Retry only what an I/O hiccup can explain; a bug or bad data fails at once."""
    try:
        state.result()
    except (DBAPIError, OSError, TimeoutError):
        return True
    except Exception:  # a bug or bad data: retrying cannot help, so fail now
        return False
    return False


# Spread into @task(...): three retries after 2, 5 and 15 seconds, for I/O errors only.
IO_RETRY: dict[str, Any] = {
    "retries": 3,
    "retry_delay_seconds": [2, 5, 15],
    "retry_condition_fn": retry_on_io,
}
