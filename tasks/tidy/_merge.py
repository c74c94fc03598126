"""When two memories say the same thing, and so may share one line of ``MEMORY.md`` (pure).

Two texts say the same thing when both hold:

1. **Same words**: equal once normalised (casefolded, punctuation to spaces, whitespace
   collapsed), or a token-set Jaccard of at least 0.8.
2. **Same decisive words**: the words that decide what a text says, read in order, are
   the same in both. A word is decisive in a text if it holds a digit ("3pm", "14A",
   "2026"), is a month, weekday, number word or negation (``decisive.toml``), is inside
   quotes, or has a capital letter and does not merely open a sentence ("Iberia",
   "Porto", "TAP", "iPhone"; "Booked" opening a sentence is not, "TAP" opening one is).
   The pair is compared on the words decisive in either text, so "alice PREFERS" and
   "Alice prefers" agree, while "the TAP one" and "the Iberia one", "Copenhagen" and
   "Porto", "3pm" and "5pm", or "Lisbon to Porto" and "Porto to Lisbon" do not.

A group is a clique: a memory joins a group only if it says the same thing as every
member, so no chain of small differences joins two that differ. Pairs are taken in the
order of the texts' first appearance, which makes the grouping deterministic.

Sentence starts are guessed, leaning towards "no": a word opens one at the start of the
text or after ".", "!", "?" or "…", but not after a period that ends a word of at most four
letters ("Dr.", "Prof.", "J.", "etc.") or a word with an inner period ("e.g."). So a
capitalised word after an abbreviation stays decisive, which can keep two memories apart
but never merges two that differ.
"""

from __future__ import annotations

import functools
import re
import sys
import tomllib
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from fractions import Fraction
from importlib import resources

JACCARD = Fraction(4, 5)
_ENDS = ".!?…。！？"
_CLOSERS = "\"'”’»)]}›」"
# Every alternative opens with its quote mark, so a search skips from mark to mark; the
# apostrophe's "no word character before it" is checked once it is matched, (?<!\w')
_QUOTED = re.compile(
    r"\"[^\"]+\"|“[^”]+”|„[^“”]+[“”]|«[^»]+»|‹[^›]+›|「[^」]+」|`[^`]+`|'(?<!\w')[^']+'(?!\w)"
)


@functools.cache
def _lexicon() -> frozenset[str]:
    """Calendar, number and negation words of ``decisive.toml``."""
    data = tomllib.loads(
        resources.files("tasks.tidy").joinpath("decisive.toml").read_text(encoding="utf-8")
    )
    return frozenset(word for words in data["words"].values() for word in words.split())


@functools.cache
def _splitters() -> tuple[dict[int, str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """What ``_words`` needs, built from every punctuation code point (categories P*).

    A full ASCII table for ``str.translate`` (its fast path: no look-up misses); a pattern
    of the span that holds every punctuation code point above U+FFFF; the words of a text
    with no character in that span (one bitmap look-up a character); the words of any text
    (also the ranges above U+FFFF, tried one by one for each character).
    """
    categories = map(unicodedata.category, map(chr, range(sys.maxunicode + 1)))
    punctuation = [cp for cp, category in enumerate(categories) if category[0] == "P"]
    runs: list[list[int]] = []
    for cp in punctuation:
        if runs and runs[-1][1] == cp - 1:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp])
    table = {cp: " " if cp in punctuation else chr(cp) for cp in range(128)}
    astral = [cp for cp in punctuation if cp > 0xFFFF]
    span = f"[{_range(astral[0], astral[-1])}]" if astral else "(?!)"  # (?!) never matches
    bmp = "".join(_range(low, high) for low, high in runs if high <= 0xFFFF)
    every = "".join(_range(low, high) for low, high in runs)
    return table, re.compile(span), re.compile(rf"[^\s{bmp}]+"), re.compile(rf"[^\s{every}]+")


def _range(low: int, high: int) -> str:
    return rf"\U{low:08x}-\U{high:08x}"


def _words(text: str) -> list[str]:
    """``text.split()`` once every punctuation code point in ``text`` is a space."""
    table, span, bmp, every = _splitters()
    if text.isascii():
        return text.translate(table).split()
    return (every if span.search(text) else bmp).findall(text)


def normalise(text: str) -> str:
    """Casefolded, punctuation turned into spaces, whitespace collapsed."""
    words = _words(text.casefold())
    return " ".join(words) if words else " ".join(text.split())


def decisive(text: str) -> frozenset[str]:
    """The normalised words of ``text`` that decide what it says (module docstring, 2)."""
    found = {w for m in _QUOTED.finditer(text) for w in normalise(m.group()).split()}
    opening = True
    for chunk in text.split():
        words = _words(chunk)
        if not words:
            opening = opening or _ends_sentence(chunk)
            continue
        if _is_decisive(words[0], opens_sentence=opening):
            found.add(words[0].casefold())
        if len(words) > 1:  # "-->-->…" is thousands of words: each distinct one is enough
            found.update(
                w.casefold() for w in set(words[1:]) if _is_decisive(w, opens_sentence=False)
            )
        opening = _ends_sentence(chunk)
    return frozenset(found)


@functools.lru_cache(maxsize=1 << 16)
def _is_decisive(word: str, *, opens_sentence: bool) -> bool:
    # Cached: a text's words repeat, in it and across the texts of a tidy (a long text of
    # one repeated symbol made hundreds of thousands of calls for a few distinct words).
    # Each distinct character is tested once: such a word is one symbol 20,000 times.
    if any(ch.isdigit() for ch in set(word)) or word.casefold() in _lexicon():
        return True
    if opens_sentence:
        return any(ch.isupper() for ch in set(word[1:]))  # "TAP", "iOS"; not "Booked"
    return any(ch.isupper() for ch in set(word))


def _ends_sentence(chunk: str) -> bool:
    bare = chunk.rstrip(_CLOSERS)
    if not bare or bare[-1] not in _ENDS:
        return False
    if bare[-1] != ".":
        return True
    word = bare.rstrip(".").lstrip(_CLOSERS + "(\"'“«")
    return len(word) > 4 and "." not in word  # else an abbreviation: "Dr.", "e.g."


def _same_decisive(a: Sequence[str], b: Sequence[str], marks: frozenset[str]) -> bool:
    """Whether the words in ``marks`` occur in the same order in both token lists."""
    if not marks:
        return True
    return [t for t in a if t in marks] == [t for t in b if t in marks]


def groups(texts: Sequence[str]) -> list[list[int]]:
    """Indexes of ``texts`` grouped by saying the same thing, each group in index order."""
    by_text: dict[str, list[int]] = defaultdict(list)
    for i, text in enumerate(texts):
        by_text[normalise(text)].append(i)
    keys = list(by_text)
    tokens = [key.split() for key in keys]
    pairs = list(similar_pairs([frozenset(t) for t in tokens]))
    # decisive words only tell apart two texts of similar words: read only those texts
    marks = {
        k: frozenset().union(*(decisive(texts[i]) for i in by_text[keys[k]]))
        for k in {k for pair in pairs for k in pair}
    }
    same = {(i, j) for i, j in pairs if _same_decisive(tokens[i], tokens[j], marks[i] | marks[j])}
    cliques = _cliques(len(keys), same)
    return [sorted(i for k in clique for i in by_text[keys[k]]) for clique in cliques]


def _cliques(count: int, same: set[tuple[int, int]]) -> list[list[int]]:
    """Groups in which every two members are in ``same`` (pairs ``(low, high)``)."""
    members = {i: [i] for i in range(count)}
    owner = list(range(count))
    for i, j in sorted(same):
        a, b = owner[i], owner[j]
        if a == b or not all(
            (min(x, y), max(x, y)) in same for x in members[a] for y in members[b]
        ):
            continue
        low, high = min(a, b), max(a, b)
        for x in members[high]:
            owner[x] = low
        members[low] += members.pop(high)
    return [sorted(group) for _, group in sorted(members.items())]


def similar_pairs(sets: Sequence[frozenset[str]]) -> Iterator[tuple[int, int]]:
    """Pairs ``(low, high)`` with Jaccard >= 0.8, found by prefix filtering, not all pairs."""
    freq = Counter(token for s in sets for token in s)
    index: dict[str, list[int]] = defaultdict(list)
    for i, tokens in enumerate(sets):
        ranked = sorted(tokens, key=lambda t: (freq[t], t))
        # ceil(JACCARD * n) in integers: a Fraction product per set was a third of this loop
        prefix = len(ranked) + (-JACCARD.numerator * len(ranked) // JACCARD.denominator) + 1
        seen: set[int] = set()
        for token in ranked[:prefix]:
            for j in index[token]:
                if j not in seen and _jaccard_ok(tokens, sets[j]):
                    yield j, i
                seen.add(j)
            index[token].append(i)


def _jaccard_ok(a: frozenset[str], b: frozenset[str]) -> bool:
    small, big = sorted((len(a), len(b)))
    if small * JACCARD.denominator < JACCARD.numerator * big:
        return False  # sizes alone rule it out
    return len(a & b) * JACCARD.denominator >= JACCARD.numerator * len(a | b)
