"""``archivist db``: the schema, the pipeline's and serving's roles, the embedded server."""

from __future__ import annotations

import click

from deployments.settings_loader import load_settings


@click.group("db")
def db_group() -> None:
    """Schema commands."""


@db_group.command("upgrade")
def db_upgrade() -> None:
    """Create or migrate the schema (needs pgvector on the server)."""
    from deployments.commands.sync import upgrade_schema

    click.echo(upgrade_schema(load_settings()))


@db_group.command("roles")
@click.option(
    "--role",
    "roles",
    type=click.Choice(["pipeline", "serving"]),
    multiple=True,
    help="Only this role (again for both) [default: both].",
)
def db_roles(roles: tuple[str, ...]) -> None:
    """Give the pipeline and serving roles new passwords (creating a missing role) as the
    owner (ARCHIVIST_DATABASE_URL), and print the URL each kind of process is to be given.

    \b
    The workers and flows get ARCHIVIST_PIPELINE__DATABASE_URL alone, archivist api and
    mcp ARCHIVIST_SERVING__DATABASE_URL alone; the owner's URL stays where archivist db,
    keys, index and reembed run. The passwords are not shown again, and the previous ones
    stop working.
    """
    from deployments.commands.sync import set_up_roles

    for line in set_up_roles(load_settings(), roles or ("pipeline", "serving")):
        click.echo(line)
    click.echo(
        "copy these now: the passwords are not shown again, and the previous ones no longer work",
        err=True,
    )


@db_group.command("stop")
def db_stop() -> None:
    """Stop the embedded server now instead of after its keep-alive time."""
    from deployments.commands.sync import stop_embedded

    click.echo(stop_embedded(load_settings()))
