"""``normalise`` against the rule as written, one code point at a time: casefold, every
Unicode punctuation code point (categories P*) a space, whitespace collapsed.

The tidy splits words with an ASCII table or a regex class built from those code points
(faster than a look-up per character); this pins it to the rule at every edge of the class:
each punctuation code point, its neighbours, every whitespace code point, in ASCII text, in
text below U+10000 and in text with characters above it."""

from __future__ import annotations

import functools
import random
import sys
import unicodedata

from tasks.tidy import normalise


def reference(text: str) -> str:
    spaced = "".join(" " if unicodedata.category(ch)[0] == "P" else ch for ch in text.casefold())
    return " ".join(spaced.split()) or " ".join(text.split())


@functools.cache
def edges() -> list[str]:
    """Every punctuation code point and its neighbours, every whitespace one, and a sample."""
    categories = map(unicodedata.category, map(chr, range(sys.maxunicode + 1)))
    punctuation = [cp for cp, category in enumerate(categories) if category[0] == "P"]
    near = {cp + step for cp in punctuation for step in (-1, 0, 1)}
    space = {cp for cp in range(0x3001) if chr(cp).isspace()}
    sample = set(random.Random(35).sample(range(sys.maxunicode + 1), 3000))
    return [chr(cp) for cp in sorted(near | space | sample) if 0 <= cp <= sys.maxunicode]


def test_every_edge_of_the_punctuation_class_splits_as_the_rule_says() -> None:
    chars = edges()
    texts = {
        "ascii": [ch for ch in chars if ch.isascii()],
        "below U+10000": [ch for ch in chars if "\x7f" < ch <= "\uffff"],
        "any": chars,
    }
    for name, some in texts.items():
        text = " ".join(f"A{ch}b{ch}{ch}" for ch in some)
        assert normalise(text) == reference(text), name
    for ch in chars:  # alone, punctuation keeps its identity; between letters, it splits
        for text in (ch, f"A{ch}b"):
            assert normalise(text) == reference(text), hex(ord(ch))


def test_random_mixes_of_edges_and_letters_normalise_as_the_rule_says() -> None:
    rng = random.Random(36)
    pool = [*edges(), *"TAP Lisbon ß İ ǅ 😀 👩‍👩‍👧 東京 \U00010100 \n".split(" ")]
    for _ in range(500):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 30)))
        assert normalise(text) == reference(text), repr(text)
