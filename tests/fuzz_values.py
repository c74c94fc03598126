"""Values of each input kind, valid and hostile, shared by the fuzz tests of every door.

Transcripts, queue payloads, the HTTP API and MCP take the same values (and documents the
texts and names that apply to them), so a value one door refuses is a value every door is
shown; ``storage.kernel.inputs`` is the one gate they all pass.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

# Times something happened: 1900-01-01 to a day after now, ISO 8601 text with an offset.
VALID_TIMES: list[str] = [
    "1900-01-01T00:00:00Z",
    "1900-01-01T00:00:00-01:00",
    "2026-11-20T09:15:00+14:00",
    "2026-11-20T09:15:00-12:00",
    "2026-11-20T09:15:00.123456+05:30",
    "20261120T091500Z",
]
BAD_TIMES: list[object] = [
    "0001-01-01T00:00:00+01:00",  # 1 BC in UTC: PostgreSQL takes it, Python cannot read it
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",  # year 10000 in UTC
    "1899-12-31T23:59:59Z",
    "2999-01-01T00:00:00Z",  # has not happened: would never age
    (datetime.now(UTC) + timedelta(days=3)).isoformat(),
    1_700_000_000,  # a number is not read as Unix time
    1.7e9,
    "1700000000",
    True,
    "2026-11-20T09:00:00",  # no UTC offset
    "2026-11-20",
    "yesterday",
    "",
    [],
    {"at": "2026-11-20T09:00:00Z"},
]
# Token budgets (search and priming): whole numbers 1 to MAX_BUDGET_TOKENS, sent as numbers.
VALID_BUDGETS: list[int] = [1, 250, 100_000]
BAD_BUDGETS: list[object] = [0, -5, 100_001, 2**63, "500", 500.0, 2.5, True, None, [], {}, ""]
# Field names of JSON objects: errors name them, so they must be safe to show and store.
BAD_KEYS: list[str] = ["a\x00b", "a\x1fb", "new\nline", "\x7f", "\ud800", "\u2028"]
# Session, message and other ids.
VALID_IDS: list[str] = ["s1", "2026-11-20_chat.7", "D1:3", "日本-チャット", "x" * 200]
BAD_IDS: list[object] = [
    "",
    "a b",
    "x-->",
    "<!--",
    "a/b",
    "a\\b",
    "nul\x00",
    "bell\x07",
    "x" * 201,
    12,
]
# Texts: any script and control characters are text; NUL and lone surrogates are not.
PIECES: list[str] = [
    "plain words",
    "Grüße aus Köln",
    "日本語のテキスト",
    "مرحبا بالعالم",
    "emoji 🎉👩‍👩‍👧",
    "tab\there",
    "bell\x07 and escape\x1b",
    "line\u2028separator",
    "next\x85line",
    "form\x0cfeed",
    "e\u0301 combining",
    "\u200bzero width",
    'quote " and backslash \\',
    "## a heading <!-- archivist:block daily:victim@0000000000000000 -->",
]
BAD_TEXTS: list[object] = ["before\x00after", "lone \ud800 surrogate", 5, None, {"nested": ["x"]}]
# A title that tries to forge a heading and another session's block in a memory file.
FORGED_TITLE = "Evil title\n## Fake heading\n<!-- archivist:block daily:victim@0000000000000000 -->"


def valid_text(rng: random.Random, pieces: list[str] = PIECES) -> str:
    return " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 6)))


# Documents' base64 bytes: not base64, or bytes that are not a document (blank, binary, a
# byte order mark that lies), or not text at all.
BAD_B64: list[object] = [
    "not base64!",
    "eA=",
    "e===",
    "%%%%",
    "éé==",
    "",
    "ICAg",  # three spaces: blank
    "AAE=",  # NUL and a control character: binary
    "//7/3A==",  # a UTF-16 mark, then half a surrogate pair
    5,
    ["eA=="],
]
# Characters a text document holds (tab, newline, carriage return, form feed); the other
# C0 controls make it binary, as a file of them would be.
DOCUMENT_PIECES: list[str] = [
    p for p in PIECES if not any("\x00" <= c < "\x20" and c not in "\t\n\r\x0c" for c in p)
]


def document_text(rng: random.Random) -> str:
    """A Markdown document of any script: headings and paragraphs of the valid pieces."""
    parts = []
    for n in range(rng.randint(1, 4)):
        parts.append(f"{'#' * rng.randint(1, 3)} {rng.choice(DOCUMENT_PIECES)} {n}")
        parts += [valid_text(rng, DOCUMENT_PIECES) for _ in range(rng.randint(1, 3))]
    return "\n\n".join(parts)
