"""The redaction corpora: tricky clean text stays as it is, planted values all go."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storage.redaction import RedactionPolicy

DATA = Path(__file__).resolve().parents[3] / "bench" / "data" / "redaction"


def clean_lines() -> list[str]:
    lines = (DATA / "clean.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def planted() -> list[tuple[str, list[list[str]]]]:
    rows = (DATA / "planted.jsonl").read_text(encoding="utf-8").splitlines()
    return [(row["text"], row["pii"]) for row in map(json.loads, rows)]


@pytest.fixture(scope="module")
def policy() -> RedactionPolicy:
    return RedactionPolicy.from_settings(None)


def test_no_false_positive_on_the_clean_corpus(policy: RedactionPolicy) -> None:
    lines = clean_lines()
    changed = [(line, policy.redactor().redact(line)) for line in lines]
    false_positives = [(line, out) for line, out in changed if out != line]
    print(f"false positives: {len(false_positives)} of {len(lines)} clean lines")
    assert len(lines) >= 90
    assert false_positives == []


def test_every_planted_value_is_replaced_by_its_category(policy: RedactionPolicy) -> None:
    rows = planted()
    missed = []
    for text, values in rows:
        out = policy.redactor().redact(text)
        missed += [(c, v) for c, v in values if v in out or f"<{c}_" not in out]
    total = sum(len(values) for _, values in rows)
    print(f"recall: {total - len(missed)} of {total} planted values")
    assert {c for _, values in rows for c, _ in values} == {
        "EMAIL",
        "PHONE",
        "CARD",
        "IBAN",
        "IP",
        "ADDRESS",
    }
    assert missed == []


def test_the_evaluation_conversations_pass_unchanged(policy: RedactionPolicy) -> None:
    """Ordinary chat in six languages, written for retrieval tests, not tuned on here."""
    messages = [
        row["content"]
        for path in sorted((DATA.parent / "eval").glob("*/sessions.jsonl"))
        for row in map(json.loads, path.read_text(encoding="utf-8").splitlines())
        if row.get("type") == "message"
    ]
    changed = [m for m in messages if policy.redactor().redact(m) != m]
    assert len(messages) > 2000
    assert changed == []
