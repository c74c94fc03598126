"""The command-line reference: every command of ``archivist`` and its options, walked
through click's own objects (the help a terminal shows, as Markdown)."""

from __future__ import annotations

from collections.abc import Iterator

import click

from deployments.cli import main
from gen_reference.text import code, paragraphs, prose, table

PROGRAM = "archivist"


def commands(
    command: click.Command = main, parent: click.Context | None = None
) -> Iterator[tuple[click.Context, click.Command]]:
    """(context, command) for the program and every visible command under it, in order."""
    name = PROGRAM if parent is None else command.name
    ctx = click.Context(command, info_name=name, parent=parent)
    yield ctx, command
    if isinstance(command, click.Group):
        for sub in command.list_commands(ctx):
            found = command.get_command(ctx, sub)
            if found is not None and not found.hidden:
                yield from commands(found, ctx)


def names() -> dict[str, set[str]]:
    """Each command's name, with its subcommands' names (empty for a plain command)."""
    out: dict[str, set[str]] = {}
    for ctx, _ in commands():
        path = ctx.command_path.split()[1:]
        if len(path) == 1:
            out[path[0]] = set()
        elif len(path) == 2:
            out[path[0]].add(path[1])
    return out


def markdown() -> str:
    """A section per command: usage, help, and a table of its options."""
    return "\n\n".join(_section(ctx, command) for ctx, command in commands()) + "\n"


def _section(ctx: click.Context, command: click.Command) -> str:
    path = ctx.command_path
    level = "#" * min(2 + path.count(" "), 4)
    parts = [f"{level} `{path}` {{#{path.replace(' ', '-')}}}"]
    usage = " ".join(command.collect_usage_pieces(ctx))
    parts.append(f"```text\n{path} {usage}\n```")
    if command.help:
        parts.append(paragraphs(command.help))
    rows = []
    for param in command.get_params(ctx):
        # Arguments are in the usage line; --help is everywhere.
        record = None if isinstance(param, click.Argument) else param.get_help_record(ctx)
        if record is None or param is command.get_help_option(ctx):
            continue
        rows.append([code(record[0]), prose(record[1]) or " "])
    if rows:
        parts.append(table(["Option", "What it does"], rows))
    if isinstance(command, click.Group):
        subs = [s for s in command.list_commands(ctx) if not _hidden(command, ctx, s)]
        links = ", ".join(f"[{s}](#{path.replace(' ', '-')}-{s})" for s in subs)
        parts.append(f"Commands: {links}.")
    return "\n\n".join(parts)


def _hidden(group: click.Group, ctx: click.Context, name: str) -> bool:
    found = group.get_command(ctx, name)
    return found is None or found.hidden
