"""``archivist db``: the schema, the pipeline's and serving's roles, the embedded server."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from deployments.settings_loader import load_settings

if TYPE_CHECKING:
    from storage.kernel.settings import Settings


@click.group("db")
def db_group() -> None:
    """Schema commands."""


@db_group.command("upgrade")
def db_upgrade() -> None:
    """Create or migrate the schema (needs pgvector on the server)."""
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
    for line in set_up_roles(load_settings(), roles or ("pipeline", "serving")):
        click.echo(line)
    click.echo(
        "copy these now: the passwords are not shown again, and the previous ones no longer work",
        err=True,
    )


@db_group.command("stop")
def db_stop() -> None:
    """Stop the embedded server now instead of after its keep-alive time."""
    click.echo(stop_embedded(load_settings()))


# What the commands do, as plain functions that take settings. Their imports wait for the
# call: `archivist db ...` loads the server's modules alone, not the pipeline's (tasks,
# Prefect: about 1.2 s of CPU at each start).


def upgrade_schema(settings: Settings) -> str:
    """Apply pending migrations, as the owner, and say what happened."""
    from storage.server.engine import Role, open_store
    from storage.server.migrate import upgrade

    store = open_store(settings, Role.OWNER)
    before, after = upgrade(store.engine, settings)
    where = "embedded PostgreSQL in " + str(settings.pgdata_dir) if store.embedded else "database"
    if before == after:
        return f"schema already at revision {after} ({where})"
    return f"schema upgraded {before or 'empty'} -> {after} ({where})"


def set_up_roles(settings: Settings, roles: Sequence[str]) -> list[str]:
    """New passwords for ``roles`` (pipeline, serving) set as the owner; the setting each
    process is to be given, as ``VARIABLE='URL'`` lines."""
    from storage.server.engine import Role, open_store
    from storage.server.roles import ROLES, new_password, role_url, set_login

    store = open_store(settings, Role.OWNER)
    owner_url = store.engine.url.render_as_string(hide_password=False)
    lines = []
    with store.engine.begin() as conn:
        for kind in roles:
            role, variable = ROLES[kind]
            password = new_password()
            set_login(conn, role, password)
            lines.append(f"{variable}='{role_url(owner_url, role, password)}'")
    return lines


def stop_embedded(settings: Settings) -> str:
    """Let the embedded server's keeper go; say whether the server stopped."""
    from storage.server.engine import configured_url
    from storage.server.keeper import server_running, stop_keeper, stop_unheld, wait_stopped

    configured = configured_url(settings)
    if configured is not None:
        return f"nothing to stop: {configured[0]} names the database server"
    pgdata = settings.pgdata_dir
    pid = stop_keeper(pgdata)
    if pid is None:
        stop_unheld(pgdata)  # no keeper to leave, and a server nobody holds stays up
    holders = wait_stopped(pgdata, timeout=30, leaving=pid)
    said = f"the embedded PostgreSQL in {pgdata}"
    if pid is not None:
        said = f"keeper (pid {pid}) stopped; {said}"
    if not server_running(pgdata):
        return f"{said} is not running"
    if holders:
        pids = ", ".join(map(str, holders))
        return f"{said} stays up while other processes use it (pids {pids})"
    return f"{said} is still stopping"
