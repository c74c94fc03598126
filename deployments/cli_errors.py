"""Every error of the ``archivist`` command as one line on stderr, with its exit code.

A usage error (a missing argument, an unknown option, a value that does not parse) exits 2,
click's convention, and its line ends with the command's usage: what to type instead. Any
other error exits 1: Archivist's own errors and click's say what failed and what to check;
a file or bucket that cannot be reached, a Prefect API that does not answer, each get a line
of their own. Nothing prints a traceback, on a terminal or not: an error nobody foresaw (a
bug) says so in its line, and its traceback goes to a file the line names.
"""

from __future__ import annotations

import os
import tempfile
import traceback
from pathlib import Path
from typing import Any

import click
from click.exceptions import NoArgsIsHelpError

from deployments import quick_exit
from deployments.storage_errors import storage_problem
from storage.kernel.errors import ArchivistError


class ErrorLine(click.ClickException):
    """An error said in one line (``Error: ...``); exit code 1."""

    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class UsageLine(ErrorLine):
    """A usage error said in one line, usage included; exit code 2."""

    exit_code = 2


def one_line(message: str) -> str:
    """``message`` with its lines joined by "; " (a multi-line message would be several)."""
    return "; ".join(line.strip() for line in message.splitlines() if line.strip())


def usage_line(exc: click.UsageError) -> UsageLine:
    """A usage error's message, then the usage of the command it is about."""
    message = one_line(exc.format_message()).rstrip(".")
    ctx = exc.ctx
    if ctx is None:
        return UsageLine(message)
    usage = " ".join([ctx.command_path, *ctx.command.collect_usage_pieces(ctx)])
    return UsageLine(f"{message}; usage: {usage} (more: {ctx.command_path} --help)")


def error_line(exc: Exception) -> ErrorLine | None:
    """The line for an error a command let through; None: not an error (click's own exits)."""
    if isinstance(exc, ErrorLine | click.exceptions.Exit | click.Abort | NoArgsIsHelpError):
        return None  # already one line, or not an error (a group called bare shows its help)
    if isinstance(exc, click.UsageError):
        return usage_line(exc)
    if isinstance(exc, click.ClickException):
        return ErrorLine(exc.format_message())
    if isinstance(exc, ArchivistError):
        return ErrorLine(str(exc))
    if type(exc).__name__ == "ParameterTypeError":  # Prefect refused a flow's parameters
        return ErrorLine(str(exc))
    problem = storage_problem(exc) or prefect_problem(exc)
    if problem is not None:
        return ErrorLine(problem)
    return ErrorLine(f"unexpected {type(exc).__name__}: {exc} {unforeseen(exc)}")


def prefect_problem(exc: BaseException) -> str | None:
    """The line for a Prefect API that stopped answering; None for anything else.

    Recognised by module, so the CLI does not import httpx or Prefect to check."""
    module = type(exc).__module__
    if module.startswith(("httpx", "httpcore")) and "Connect" in type(exc).__name__:
        return f"the Prefect API does not answer ({type(exc).__name__}: {exc}); " + (
            "check PREFECT_API_URL, or unset it to let Archivist start a local server"
        )
    return None


def unforeseen(exc: BaseException) -> str:
    """Where the traceback of an error nobody foresaw was written, as the line says it."""
    path = Path(tempfile.gettempdir()) / f"archivist-error-{os.getpid()}.txt"
    try:
        path.write_text("".join(traceback.format_exception(exc)))
    except OSError:
        return "(a bug: please report it with the command that failed)"
    return f"(a bug: the traceback is in {path}; please report it)"


class Group(click.Group):
    """A command group whose errors, its subcommands' included, are one line each."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except NoArgsIsHelpError:
            raise
        except click.UsageError as exc:
            raise usage_line(exc) from exc

    def main(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().main(*args, **kwargs)
        except SystemExit as exc:  # how click ends every command it runs standalone
            quick_exit.note_exit(exc.code)
            raise

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise  # the reader left (`archivist search ... | head`): click exits quietly
        except Exception as exc:
            line = error_line(exc)
            if line is None:
                raise
            raise line from exc
