"""Benchmark of PII redaction: false positives on tricky clean text, recall on planted PII.

    .venv/bin/python bench/redaction.py [--repeat 20] [--show]

``bench/data/redaction/clean.txt`` holds text with no personal data (version numbers shaped
like IPs, dates in many formats, order ids, ISBNs, times, prices, UUIDs, hashes, postcodes
alone): a line counts as a false positive when redaction changes it. ``planted.jsonl``
holds text with planted values (English, German, French, Spanish): a value counts as found
when it is gone from the output and a placeholder of its category stands in the text.
Then the messages of the evaluation conversations (``bench/data/eval/*/sessions.jsonl``,
ordinary chat in six languages, written for retrieval, not for this) as a second clean set
nobody tuned the patterns on. Prints both rates, recall per category, and the throughput
over ``--repeat`` passes of the corpora and of the conversations, with the default settings
(every category on, phone regions US GB DE FR ES).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a file, bench/ comes first on the path, and bench/queue.py would shadow the
# standard library's queue module (which psycopg imports); the package is installed.
if sys.path and Path(sys.path[0] or ".").resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import json
import time
from collections import Counter
from dataclasses import dataclass, field

from storage.redaction import RedactionPolicy

DATA = Path(__file__).resolve().parent / "data" / "redaction"


@dataclass
class Score:
    """False positives on the clean corpus, hits on the planted one."""

    clean_lines: int = 0
    false_positives: list[tuple[str, str]] = field(default_factory=list)
    planted: Counter[str] = field(default_factory=Counter)
    found: Counter[str] = field(default_factory=Counter)
    missed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def false_positive_rate(self) -> float:
        return len(self.false_positives) / max(1, self.clean_lines)

    @property
    def recall(self) -> float:
        return sum(self.found.values()) / max(1, sum(self.planted.values()))


def clean_lines() -> list[str]:
    lines = (DATA / "clean.txt").read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line.strip() and not line.startswith("#")]


def planted_lines() -> list[tuple[str, list[tuple[str, str]]]]:
    rows = [json.loads(line) for line in (DATA / "planted.jsonl").read_text().splitlines()]
    return [(row["text"], [(c, v) for c, v in row["pii"]]) for row in rows]


def score(policy: RedactionPolicy) -> Score:
    """Run both corpora through ``policy``, one redactor per line."""
    result = Score()
    for line in clean_lines():
        result.clean_lines += 1
        out = policy.redactor().redact(line)
        if out != line:
            result.false_positives.append((line, out))
    for text, values in planted_lines():
        out = policy.redactor().redact(text)
        for category, value in values:
            result.planted[category] += 1
            if value not in out and f"<{category}_" in out:
                result.found[category] += 1
            else:
                result.missed.append((category, value))
    return result


def conversations() -> list[str]:
    """Every message of the evaluation conversations."""
    found = []
    for path in sorted((DATA.parent / "eval").glob("*/sessions.jsonl")):
        rows = map(json.loads, path.read_text(encoding="utf-8").splitlines())
        found += [row["content"] for row in rows if row.get("type") == "message"]
    return found


def throughput(policy: RedactionPolicy, texts: list[str], repeat: int) -> tuple[int, float]:
    chars = sum(len(t) for t in texts) * repeat
    started = time.perf_counter()
    for _ in range(repeat):
        for text in texts:
            policy.redactor().redact(text)
    return chars, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--show", action="store_true", help="print each miss and false positive")
    args = parser.parse_args()
    policy = RedactionPolicy.from_settings(None)
    result = score(policy)
    fp = len(result.false_positives)
    print(
        f"false positives: {fp} of {result.clean_lines} clean lines "
        f"({result.false_positive_rate:.1%})"
    )
    total, found = sum(result.planted.values()), sum(result.found.values())
    print(f"recall: {found} of {total} planted values ({result.recall:.1%})")
    for category in sorted(result.planted):
        print(f"  {category:8} {result.found[category]} / {result.planted[category]}")
    chats = conversations()
    changed = [(text, out) for text in chats if (out := policy.redactor().redact(text)) != text]
    print(f"evaluation conversations: {len(changed)} of {len(chats)} messages changed")
    corpora = clean_lines() + [text for text, _ in planted_lines()]
    for name, texts in (("corpora (digit-heavy)", corpora), ("conversations", chats)):
        chars, seconds = throughput(policy, texts, args.repeat)
        print(f"throughput, {name}: {chars / seconds / 1000:.0f} k chars/s")
    if args.show:
        for line, out in result.false_positives:
            print(f"false positive: {line!r} -> {out!r}")
        for category, value in result.missed:
            print(f"missed {category}: {value!r}")
        for text, out in changed:
            print(f"conversation changed: {text!r} -> {out!r}")


if __name__ == "__main__":
    main()
