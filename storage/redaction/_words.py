"""Word lists behind redaction, read once from ``words.toml`` beside this file."""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from typing import Any

_DATA: dict[str, Any] = tomllib.loads(
    resources.files("storage.redaction").joinpath("words.toml").read_text(encoding="utf-8")
)


def words(table: str, name: str) -> tuple[str, ...]:
    """One list of the file, lower-cased, longest first (so regex alternatives prefer it)."""
    found = {w.lower() for w in str(_DATA[table][name]).split()}
    return tuple(sorted(found, key=lambda w: (-len(w), w)))


def alternation(table: str, name: str) -> str:
    """The list as a regex alternation of literals: ``(?:straße|str\\.|…)``."""
    return "(?:" + "|".join(re.escape(w) for w in words(table, name)) + ")"
