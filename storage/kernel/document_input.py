"""The documents' door: what a document's bytes must be before a reader takes them.

Every door a document enters by (``archivist docs ingest`` on files, the write queue's
``ADD_DOCUMENT`` from the HTTP API and MCP) applies these rules, so a document one door
refuses, every door refuses with the same words:

- **Format** (``format_of``): by the name's extension: Markdown (``.md``, ``.markdown``),
  text (``.txt``, ``.text``), HTML (``.html``, ``.htm``) and PDF (``.pdf``).
- **Text** (``decode``): UTF-8, or UTF-16 or UTF-32 when a byte order mark at its start
  says so (Windows editors save "Unicode" text that way); no control character other than
  tab, line feed, carriage return and form feed. Otherwise it is ``binary``.
- **Tag** (``check_tag``): 1 to 100 printable characters.

A refusal is a ``Skip`` with its reason, one of ``SKIP_REASONS``: ingest counts it and goes
on with the next file; the queue's door answers it as bad input.
"""

from __future__ import annotations

import codecs
import re
from pathlib import PurePosixPath

FORMATS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".txt": "text",
    ".text": "text",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
}
# The extension that names each format's reader (a name without one gets it).
EXTENSIONS = {"markdown": ".md", "text": ".txt", "html": ".html", "pdf": ".pdf"}
SKIP_REASONS = (
    "too_large",
    "empty",
    "binary",
    "unreadable_pdf",
    "unsupported_format",
    "unreadable",
    "not_found",
    "outside_folder",
    "refused",
)
MAX_TAG = 100
# Characters no text file holds (tab, newline, carriage return and form feed are fine).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
# Text that says its encoding by a byte order mark: UTF-32 first (its little-endian mark
# begins with UTF-16's). Without one, text is read as UTF-8.
_MARKS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


class Skip(Exception):  # noqa: N818 - a verdict on one document, not an error
    """A document left out, and why (one of ``SKIP_REASONS``)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def format_of(path: str) -> str | None:
    """The reader for a path by its extension, or None."""
    return FORMATS.get(PurePosixPath(path).suffix.lower())


def decode(data: bytes) -> str:
    """The text of a text document's bytes; ``Skip("binary")`` when they are not text."""
    encoding = next((name for mark, name in _MARKS if data.startswith(mark)), "utf-8-sig")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        said = "UTF-8" if encoding == "utf-8-sig" else f"{encoding.upper()} (its byte order mark)"
        raise Skip("binary", f"not {said} at byte {exc.start}") from None
    if len(_CONTROL.findall(text[:65536])) > 0:
        raise Skip("binary", "control characters")
    return text


def check_size(size: int, max_bytes: int) -> None:
    """``Skip("too_large")`` for a document over ``max_bytes``."""
    if size > max_bytes:
        raise Skip("too_large", f"{size} bytes; the cap is {max_bytes}")


def check_not_empty(data: bytes) -> None:
    """``Skip("empty")`` for no bytes, or only white space."""
    if not data.strip():
        raise Skip("empty")


def admit(data: bytes, kind: str, max_bytes: int) -> None:
    """The door's verdict on a document's bytes, before a reader parses them: ``Skip`` when
    they are over ``max_bytes``, blank, or (every format but PDF) not text."""
    check_size(len(data), max_bytes)
    check_not_empty(data)
    if kind != "pdf":
        decode(data)


def check_tag(tag: str) -> str:
    """The tag unchanged, or ValueError: 1 to ``MAX_TAG`` printable characters."""
    if not (0 < len(tag) <= MAX_TAG and tag.isprintable()):
        raise ValueError(f"must be 1 to {MAX_TAG} printable characters")
    return tag
