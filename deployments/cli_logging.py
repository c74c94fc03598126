"""The console of the CLI's flow runs: Prefect's, without tracebacks.

A flow that fails logs its exception with its traceback; Prefect's console handler would
print that traceback above the command's own one-line error (85 lines for a transcripts
folder that does not exist). The CLI's one-shot flow commands name this handler in
``PREFECT_LOGGING_HANDLERS_CONSOLE_CLASS`` before Prefect loads: each record is printed as
its message line alone. The traceback still reaches the Prefect API with the run's logs,
where the UI shows it.
"""

from __future__ import annotations

import logging

from prefect.logging.handlers import PrefectConsoleHandler


class ConsoleWithoutTracebacks(PrefectConsoleHandler):
    """Prefect's console handler printing a record's message line, not its traceback."""

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info is None and record.exc_text is None and record.stack_info is None:
            return super().format(record)
        plain = logging.makeLogRecord(record.__dict__)  # the API's handler keeps the original
        plain.exc_info = plain.exc_text = plain.stack_info = None
        return super().format(plain)
