"""The CLI's one way to build Settings: a bad value is one clear error, not a traceback."""

from __future__ import annotations

import click
from pydantic import ValidationError

from storage.config import Settings


def load_settings() -> Settings:
    """Settings from the environment (and policy file), or a click error naming the problem."""
    try:
        return Settings()
    except ValidationError as exc:
        raise click.ClickException(f"bad ARCHIVIST_* configuration:\n{exc}") from exc
