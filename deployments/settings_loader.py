"""The CLI's one way to build Settings: a bad value is one clear error, not a traceback."""

from __future__ import annotations

import os

import click
from pydantic import ValidationError

from storage.kernel.settings import Settings
from storage.kernel.settings.variables import describe, unknown_variables


def load_settings() -> Settings:
    """Settings from the environment (and policy file), or a click error naming the problem.

    ``ARCHIVIST_*`` variables that set nothing (a typo) are warned about on stderr.
    """
    for warning in unknown_variables(os.environ):
        click.echo(f"warning: {warning}", err=True)
    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(describe(exc).splitlines())
        raise click.ClickException(f"bad configuration: {problems}") from exc
