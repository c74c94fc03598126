"""``ADD_DOCUMENT``: a knowledge document added over the HTTP API or MCP, as the queue
carries it until a drainer chunks, embeds and stores it (``tasks.documents``).

Its fields pass the input gate of their kind (``storage.kernel.inputs``): the ``name`` is
an ``Identifier`` (the document within its namespace: the same name again replaces it),
the ``title`` a ``Label`` (``label``), the ``text`` ``StorableText``. The bytes come as ``text``
(Markdown, plain text, HTML) or as ``content_base64`` (any format: the one way for a PDF,
or for text saved as UTF-16 or UTF-32 with its byte order mark). ``admit`` then applies
the documents' own door (``storage.kernel.document_input``), as ``docs ingest`` does to a
file before reading it: the size cap, blank, and text that is not text.
"""

from __future__ import annotations

import base64
import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from storage.kernel.document_input import EXTENSIONS, FORMATS, Skip, admit, check_tag, format_of
from storage.kernel.errors import InputError, TooLarge
from storage.kernel.inputs import Identifier, StorableText, label

DocumentFormat = Literal["markdown", "text", "html", "pdf"]
Tag = Annotated[str, AfterValidator(check_tag)]
Title = Annotated[str, Field(max_length=300), AfterValidator(label)]
MAX_SETTING = "ARCHIVIST_DOCUMENTS__MAX_UPLOAD_BYTES"
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_SPACE = re.compile(r"\s+")
_KNOWN = ", ".join(FORMATS)


class AddDocument(BaseModel):
    """ADD_DOCUMENT: a document's bytes, its name, and how to label it."""

    model_config = ConfigDict(frozen=True, extra="forbid", hide_input_in_errors=True)

    name: Identifier = Field(
        description="the document within the namespace, e.g. handbook.md: the same name again "
        "replaces it; its extension gives the format unless format is given"
    )
    text: StorableText | None = Field(
        None, description="the document as text (Markdown, plain text or HTML)"
    )
    content_base64: str | None = Field(
        None,
        description="the document's bytes in base64 (any format; a PDF is sent this way, and "
        "text in UTF-16 or UTF-32 with its byte order mark)",
    )
    format: DocumentFormat | None = Field(
        None, description="markdown, text, html or pdf (default: by the name's extension)"
    )
    title: Title | None = Field(
        None, description="its title, on one line (default: its own, or its first heading)"
    )
    tag: Tag | None = Field(None, description="a label (1-100 printable characters)")

    @field_validator("content_base64")
    @classmethod
    def _base64(cls, value: str) -> str:
        compact = _SPACE.sub("", value)
        if len(compact) % 4 or not _BASE64.fullmatch(compact):
            raise ValueError("not base64 (RFC 4648: A-Z, a-z, 0-9, + and /, = padding)")
        return compact

    @model_validator(mode="after")
    def _one_content(self) -> AddDocument:
        if (self.text is None) == (self.content_base64 is None):
            raise ValueError("give text or content_base64, not both and not neither")
        kind = self.format or format_of(self.name)
        if kind is None:
            raise ValueError(f"the name has no known extension ({_KNOWN}): give format")
        if kind == "pdf" and self.text is not None:
            raise ValueError("a PDF is sent as content_base64 (its bytes), not as text")
        return self

    @property
    def kind(self) -> str:
        """Its format: the one given, else its name's."""
        return self.format or format_of(self.name) or "text"  # the validator ensured one

    @property
    def size(self) -> int:
        """Its bytes' count, without decoding them."""
        if self.content_base64 is not None:
            return len(self.content_base64) * 3 // 4 - self.content_base64[-2:].count("=")
        return len((self.text or "").encode("utf-8"))

    def data(self) -> bytes:
        """Its bytes: the text's UTF-8, or the decoded base64."""
        if self.content_base64 is not None:
            return base64.b64decode(self.content_base64)
        return (self.text or "").encode("utf-8")

    def reader_path(self) -> str:
        """A name whose extension picks its format's reader (the name, or the name with the
        format's extension added)."""
        if format_of(self.name) == self.kind:
            return self.name
        return self.name + EXTENSIONS[self.kind]

    def admit(self, max_bytes: int) -> None:
        """The documents' door: ``TooLarge`` over ``max_bytes``, ``InputError`` for a blank
        document or text that is not text, each naming the field."""
        field = "text" if self.text is not None else "content_base64"
        if self.size > max_bytes:
            raise TooLarge(
                f"{field}: the document is {self.size} bytes; the cap is {max_bytes} "
                f"({MAX_SETTING}); add larger files with archivist docs ingest"
            )
        try:
            admit(self.data(), self.kind, max_bytes)
        except Skip as skip:
            detail = f" ({skip.detail})" if skip.detail else ""
            raise InputError(f"{field}: {skip.reason}{detail}") from None
