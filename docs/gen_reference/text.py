"""Markdown from plain text: what a docstring or a help text says, rendered as written."""

from __future__ import annotations

import html
import re

# ``code`` (docstrings) or `code` (help texts and descriptions).
_CODE = re.compile(r"``(.+?)``|`([^`]+)`")
_NAME = re.compile(r"\bARCHIVIST_[A-Z0-9_]*[A-Z0-9]")
_SPECIAL = re.compile(r"([\\`*_\[\]{}|#])")


def code(text: str) -> str:
    """An inline code span of ``text``, whatever backticks it holds."""
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def escape(text: str) -> str:
    """Plain text that Markdown shows as written; variables become code."""
    out, last = [], 0
    for found in _NAME.finditer(text):
        out.append(_escaped(text[last : found.start()]))
        out.append(code(found.group(0)))
        last = found.end()
    out.append(_escaped(text[last:]))
    return "".join(out)


def prose(text: str) -> str:
    """A docstring or help text on one line: its code spans kept, the rest escaped."""
    flat = " ".join(text.split())
    out, last = [], 0
    for found in _CODE.finditer(flat):
        out.append(escape(flat[last : found.start()]))
        out.append(code(found.group(1) or found.group(2)))
        last = found.end()
    out.append(escape(flat[last:]))
    return "".join(out)


def paragraphs(text: str) -> str:
    """A docstring's paragraphs, each as ``prose``."""
    blocks = re.split(r"\n\s*\n", text.strip())
    return "\n\n".join(prose(block) for block in blocks if block.strip())


def table(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table of cells that are Markdown already."""
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _escaped(text: str) -> str:
    return _SPECIAL.sub(r"\\\1", html.escape(text, quote=False))
