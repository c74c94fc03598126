"""``MEMORY.md`` without some of its entries (pure): what a purge leaves of the file.

A line of the file is ``- <entry text> <!-- m:ids -->`` (``_render``); the entries a purge
deletes are known by their stored text, so their lines are found exactly, and a section
they leave empty goes with its title. Every other byte stays as the tidy wrote it.
"""

from __future__ import annotations

from collections.abc import Collection


def memory_md_path(namespace: str) -> str:
    return f"{namespace}/MEMORY.md"


def without_entries(document: str, texts: Collection[str]) -> str:
    """``document`` without the lines of the entries whose text is one of ``texts``."""
    starts = tuple(f"- {t} <!-- m:" for t in texts)
    if not starts:
        return document
    kept = "\n".join(line for line in document.split("\n") if not line.startswith(starts))
    parts = kept.rstrip("\n").split("\n\n")
    return "\n\n".join(p for p in parts if not _empty_section(p)) + "\n"


def _empty_section(part: str) -> bool:
    return part.startswith("## ") and "\n" not in part
