"""Progress bars for the CLI's long commands: on stderr, and only when it is a terminal.

``with progress_bars() as bars:`` gives a ``Bars``. ``bars.update(label, done, total)`` draws
or moves the bar named ``label``; ``bars.echo(line)`` prints a line of the command's output.
Whether stderr is a terminal is rich's call (``Console(stderr=True)``, which honours
``TTY_COMPATIBLE`` and ``FORCE_COLOR``). When it is not (a pipe, a file, a test's runner), or
the command prints JSON, nothing is drawn and ``echo`` is plain ``click.echo``: the output is
what it was without bars, line for line, and ``update(..., line=...)`` prints its ``line``.

Flows that run in this process report through their logs: ``bars.following_runs()`` attaches
a handler to Prefect's run loggers that moves a bar for every record logged with
``extra=progress(...)`` (``tasks.progress``). The flows need no callback and no terminal;
under a Prefect worker nobody listens. While bars are drawn the runs' INFO lines stay off the
terminal (they still reach the Prefect API), since lines printed by Prefect's own console
handler would tear the bars.

Only the long commands import this module, and they import rich's console and progress
display through it, when they open their bars.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

Echo = Callable[[str], None]
# Prefect's run loggers: flow bodies log to the first, tasks to the second.
RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")
_CONSOLE_LEVEL = "PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL"


class Bars:
    """The command's bars on a live display, or no display at all (``progress`` None)."""

    def __init__(self, echo: Echo, progress: Progress | None = None) -> None:
        self._echo = echo
        self._progress = progress
        self._tasks: dict[str, TaskID] = {}
        self._done: dict[str, int] = {}
        # Output lines join the live display only when stdout is that terminal too; into a
        # pipe or a file they go as they are.
        self._stdout_on_display = progress is not None and _isatty(sys.stdout)

    def echo(self, line: str) -> None:
        """One line of the command's output (above the bars while they are drawn)."""
        if self._progress is not None and self._stdout_on_display:
            self._progress.console.print(
                line, markup=False, highlight=False, emoji=False, soft_wrap=True
            )
        else:
            self._echo(line)

    def update(
        self, label: str, done: int, total: int, note: str = "", *, line: str | None = None
    ) -> None:
        """Move the bar ``label`` to ``done`` of ``total``; with no bars, print ``line``."""
        if self._progress is None:
            if line is not None:
                self._echo(line)
            return
        task = self._tasks.get(label)
        if task is None:
            self._tasks[label] = self._progress.add_task(
                label, total=total, completed=done, note=note
            )
        elif done < self._done[label]:  # a new round (the demo's next day): restart the clock
            self._progress.reset(task, total=total, completed=done, note=note)
        else:
            self._progress.update(task, total=total, completed=done, note=note)
        self._done[label] = done

    @contextmanager
    def following_runs(self) -> Iterator[None]:
        """Flow runs in this process move the bars through their progress records.

        Enter it before Prefect is imported: the quiet terminal is a Prefect setting, read
        once when Prefect configures its logging, which is done here, before the handler is
        attached (that first configuration replaces the run loggers' handlers).
        """
        if self._progress is None:
            yield
            return
        previous = os.environ.get(_CONSOLE_LEVEL)
        os.environ.setdefault(_CONSOLE_LEVEL, "WARNING")
        from prefect.logging.configuration import ensure_logging_setup

        ensure_logging_setup()
        handler = _RunProgress(self)
        loggers = [logging.getLogger(name) for name in RUN_LOGGERS]
        for logger in loggers:
            logger.addHandler(handler)
        try:
            yield
        finally:
            for logger in loggers:
                logger.removeHandler(handler)
            if previous is None:
                os.environ.pop(_CONSOLE_LEVEL, None)


class _RunProgress(logging.Handler):
    """Moves a bar for each run log record that carries progress; ignores the rest."""

    def __init__(self, bars: Bars) -> None:
        from tasks.progress import progress_of

        super().__init__(logging.INFO)
        self._bars = bars
        self._progress_of = progress_of

    def emit(self, record: logging.LogRecord) -> None:
        found = self._progress_of(record)
        if found is not None:
            self._bars.update(found.label, found.done, found.total, found.note)


def _isatty(stream: object) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except ValueError:  # a closed stream
        return False


@contextmanager
def progress_bars(echo: Echo = click.echo, *, enabled: bool = True) -> Iterator[Bars]:
    """Bars on stderr while the block runs, if ``enabled`` and stderr is a terminal."""
    if not enabled:
        yield Bars(echo)
        return
    from rich.console import Console

    console = Console(stderr=True)
    if not console.is_terminal:
        yield Bars(echo)
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(bar_width=30),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[note]}"),
        console=console,
        redirect_stdout=False,  # click writes past rich's proxy; ``Bars.echo`` does it instead
    )
    with progress:
        yield Bars(echo, progress)
