"""A session source whose transcripts are redacted before they are stored.

Used when ``ARCHIVIST_REDACTION__BEFORE_STORAGE`` is on: each transcript (one session) is
one placeholder scope, numbered in the order values first appear, so loading a file that
only grew again gives its earlier messages the same text and changes nothing stored.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from storage.kernel.settings import RedactionSettings
from storage.redaction import RedactionPolicy, redact_messages, redact_session
from tasks.sync._transcripts import Problem, SessionSource, Transcript


def stored_source(source: SessionSource, settings: RedactionSettings) -> SessionSource:
    """``source`` as it should be stored: redacted when the settings say before storage."""
    policy = RedactionPolicy.from_settings(settings)
    return RedactedSource(source, policy) if policy.before_storage else source


@dataclass
class RedactedSource:
    """Wraps a source; counts the values replaced per category (never the values)."""

    source: SessionSource
    policy: RedactionPolicy
    counts: Counter[str] = field(default_factory=Counter)

    def read(self) -> Iterator[Transcript | Problem]:
        for item in self.source.read():
            if isinstance(item, Problem):
                yield item
                continue
            redactor = self.policy.redactor()
            session = redact_session(item.session, redactor)
            messages = redact_messages(item.messages, redactor)
            self.counts.update(redactor.counts)
            yield Transcript(item.source, session, messages)
