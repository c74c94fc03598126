"""Readers: a file's bytes to a title and Markdown-like text (headings as ``#`` lines,
paragraphs apart by a blank line), or a ``Skip`` with its reason.

Markdown and plain text are decoded as UTF-8, or as UTF-16 or UTF-32 when a byte order
mark says so (Windows editors save "Unicode" text that way); HTML goes through
BeautifulSoup (the standard library's ``html.parser``), its headings becoming ``#`` lines;
PDF through pypdf, one page after another. What cannot give text is skipped with a
reason, never raised further: ``binary`` (not UTF-8 or what its byte order mark says, or
control characters), ``empty`` (no text), ``unreadable_pdf``
(pypdf cannot parse it, or it is encrypted), ``unsupported_format`` (no reader for the
extension). Ingest adds ``too_large`` (over the size cap, checked before reading),
``unreadable`` (the file system refused it), ``not_found``, ``outside_folder`` (a file
of a local folder that a symbolic link places elsewhere) and ``refused`` (a name the store
cannot hold, such as one whose bytes are not UTF-8, or a row the database refused). The
rules every door applies before a reader (formats, decoding, size, tags) are
``storage.kernel.document_input``'s.
"""

from __future__ import annotations

import io
import logging
import re
import warnings
from dataclasses import dataclass
from pathlib import PurePosixPath

from storage.kernel.document_input import (
    FORMATS,
    SKIP_REASONS,
    Skip,
    check_not_empty,
    decode,
    format_of,
)
from storage.kernel.inputs import label

__all__ = ["FORMATS", "SKIP_REASONS", "Parsed", "Skip", "format_of", "parse", "tidy"]

_BLANK = re.compile(r"\n[ \t\r\f]*\n")
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$", re.MULTILINE)
_BLOCKS = (
    "p",
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "aside",
    "li",
    "ul",
    "ol",
    "table",
    "tr",
    "pre",
    "blockquote",
    "dt",
    "dd",
    "figure",
    "figcaption",
    "hr",
    "nav",
)


@dataclass(frozen=True)
class Parsed:
    """What a reader made of a file."""

    format: str
    title: str
    text: str


def parse(path: str, data: bytes) -> Parsed:
    """Title and text of a file's bytes; raises ``Skip``."""
    kind = format_of(path)
    if kind is None:
        raise Skip("unsupported_format", PurePosixPath(path).suffix or "no extension")
    check_not_empty(data)
    stem = PurePosixPath(path).stem
    if kind == "pdf":
        title, text = _pdf(data)
    elif kind == "html":
        title, text = _html(decode(data))
    else:
        title, text = None, decode(data)
    text = tidy(_storable(text))
    if not text:
        raise Skip("empty", "no text")
    return Parsed(kind, _title(title and _storable(title), text, stem), text)


def tidy(text: str) -> str:
    """Unix line ends, no trailing spaces, at most one blank line between paragraphs."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    return _BLANK.sub("\n\n", "\n".join(lines)).strip()


def _title(found: str | None, text: str, stem: str) -> str:
    """The document's title on one line (``storage.kernel.inputs.label``): its own, its first
    heading, its first line if short, else the file's name."""
    if found and label(found):
        return label(found)[:300]
    heading = _HEADING.search(text)
    if heading:
        return label(heading.group(2))[:300]
    first = label(text.split("\n", 1)[0])
    return first if 0 < len(first) <= 120 else label(_storable(stem)) or "untitled"


def _html(markup: str) -> tuple[str | None, str]:
    from bs4 import BeautifulSoup, MarkupResemblesLocatorWarning, XMLParsedAsHTMLWarning

    with warnings.catch_warnings():  # a page that looks like a URL, or XHTML: read it anyway
        warnings.simplefilter("ignore", MarkupResemblesLocatorWarning)
        warnings.simplefilter("ignore", XMLParsedAsHTMLWarning)
        soup = BeautifulSoup(markup, "html.parser")
    title = soup.find("title")
    found = title.get_text() if title is not None else None
    for tag in soup(["script", "style", "noscript", "template", "head"]):
        tag.decompose()
    for tag in soup.find_all("br"):
        tag.replace_with("\n")
    for tag in soup.find_all(re.compile(r"^h[1-6]$")):
        tag.insert_before(f"\n\n{'#' * int(tag.name[1])} ")
        tag.insert_after("\n\n")
    for tag in soup.find_all(_BLOCKS):
        tag.insert_before("\n\n")
        tag.insert_after("\n\n")
    paragraphs = (" ".join(p.split()) for p in _BLANK.split(soup.get_text()))
    return found, "\n\n".join(p for p in paragraphs if p)


def _pdf(data: bytes) -> tuple[str | None, str]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    # pypdf raises its own errors for most damage, and plain ones for some (a truncated
    # stream, a broken cross-reference table, a cycle of references).
    damage = (
        PyPdfError, ValueError, KeyError, TypeError, AttributeError, OSError, IndexError,
        RecursionError, ZeroDivisionError, AssertionError,
    )  # fmt: skip

    # pypdf logs the damage it works around; a skipped file is reported with its reason.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise Skip("unreadable_pdf", "encrypted")
        pages = [page.extract_text() or "" for page in reader.pages]
        meta = reader.metadata
        title = meta.title if meta is not None else None
    except damage as exc:
        raise Skip("unreadable_pdf", type(exc).__name__) from None
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    return (str(title) if title else None), text


def _storable(text: str) -> str:
    """Text PostgreSQL takes: no NUL, no lone surrogate (a PDF's fonts can map to either)."""
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")
