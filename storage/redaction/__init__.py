"""PII redaction: emails, phones, payment cards, IBANs, IPs, street addresses, custom regexes.

In the store's layer because both sides need it: the embedder redacts what it sends to a
remote model, the queue and the transcript loader what they store (with
``ARCHIVIST_REDACTION__BEFORE_STORAGE``), and the tasks what goes to an LLM or a webhook.
Build a ``RedactionPolicy`` once from the settings, and a ``Redactor`` per scope.
"""

from storage.redaction._records import redact_messages, redact_session
from storage.redaction._redactor import PLACEHOLDER, RedactionPolicy, Redactor

__all__ = ["PLACEHOLDER", "RedactionPolicy", "Redactor", "redact_messages", "redact_session"]
