"""The passage of a hit: the part of its memory that answers the question.

A hit keeps its whole memory (``Hit.content``) and shows the part that matches the query
(``Hit.passage``): for a session summary, its sentences that best match; for a long turn or
a document chunk, its best window. A memory of up to ``PASSAGE_CHARS`` is its own passage
(``size``: a character of a script without spaces counts three).

No model runs here: search stays cheap (``bench/passage.py`` prints the CPU per hit). A
sentence scores by

- the query's words it shares, each weighted by how few of the memory's sentences have it
  (a speaker's name in every sentence picks none); words are case-folded, stripped of
  accents and lightly stemmed (a few suffixes of English, German, Spanish and French), and
  scripts written without spaces (Japanese, Chinese) compare character bigrams;
- what the question asks for: "when" favours dates and times of day, "how many" numbers,
  "who" and "where" capitalised names (``passage.toml`` has the cue words of several
  languages);
- the answer to a question that matches: the sentence right after it gets the question's
  lexical score too;
- ties go to the later sentence: a later statement settles an earlier one.

The best sentences (at most ``MAX_PIECES``, each at least a third of the best's score) are
shown in their order, with " … " for a gap and the speaker's label kept ("Aria: Booked …").
A question that matches no sentence gets the memory's beginning.
"""

from __future__ import annotations

import math
import re
import tomllib
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from storage.retrieval._time_words import MONTHS, WEEKDAYS
from storage.retrieval._types import Hit
from storage.retrieval.explain._sentences import LABEL, NO_SPACES, Piece, pieces, size

__all__ = ["MAX_PIECES", "PASSAGE_CHARS", "Question", "passage", "size", "with_passages"]

PASSAGE_CHARS = 300  # a memory this long or shorter is shown whole (``size``)
MAX_PIECES = 3  # sentences (or windows) in one passage
GAP = " … "

_WORD = re.compile(r"\w+(?:['’]\w+)*")
_CLOCK = re.compile(
    r"\b\d{1,2}[:.h]\d{2}\b|\b\d{1,2} ?(?:am|pm|a\.m\.|p\.m\.|uhr|h)\b|\d{4}-\d{2}-\d{2}"
    r"|\b\d{1,2}(?:st|nd|rd|th)\b|\b\d{1,2}[./]\d{1,2}\b|\d+\s?[月日時]|[月火水木金土日]曜",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d|[€$£¥%]")
_SUFFIXES = (
    "ations", "ation", "ments", "ment", "ness", "ings", "ing", "ies", "ied", "edly", "ed",
    "es", "en", "er", "ly", "s", "e", "n",
)  # fmt: skip
_STEM_MIN = 3


@dataclass(frozen=True)
class _Cues:
    """The phrases that ask for one kind of answer: those of scripts written without spaces,
    found anywhere in the question, and the others as one pattern, at word boundaries."""

    unspaced: tuple[str, ...]
    spaced: re.Pattern[str] | None

    @classmethod
    def of(cls, phrases: list[str]) -> _Cues:
        spaced = [re.escape(p) for p in phrases if not NO_SPACES.match(p)]
        pattern = rf"(?<!\w)(?:{'|'.join(spaced)})(?!\w)" if spaced else None
        unspaced = tuple(p for p in phrases if NO_SPACES.match(p))
        return cls(unspaced, None if pattern is None else re.compile(pattern))

    def asked(self, lower: str) -> bool:
        """Whether the lower-cased question has one of the phrases."""
        if any(phrase in lower for phrase in self.unspaced):
            return True
        return self.spaced is not None and self.spaced.search(lower) is not None


@dataclass(frozen=True)
class _Words:
    stopwords: frozenset[str]
    asks: dict[str, _Cues]
    time_words: frozenset[str]


@lru_cache(maxsize=1)
def _words() -> _Words:
    text = resources.files("storage.retrieval.explain").joinpath("passage.toml").read_text("utf-8")
    data = tomllib.loads(text)
    # One pattern per kind, compiled once: a question is read on every search, and a
    # search per phrase cost 0.15 ms of its CPU.
    asks = {kind: _Cues.of(phrases) for kind, phrases in data["asks"].items()}
    dates = {w for w in [*MONTHS, *WEEKDAYS] if len(w) > 1}
    return _Words(
        frozenset(data["words"]["stopwords"].split()),
        asks,
        frozenset(data["words"]["time_words"].split()) | dates,
    )


def _fold(text: str) -> str:
    """Lower case without accents: "Cuándo" and "cuando" are one word."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _stem(word: str) -> str:
    """A few common suffixes off, twice at most: "booked" and "booking" are "book"."""
    for _ in range(2):
        for suffix in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= _STEM_MIN:
                word = word[: -len(suffix)]
                break
        else:
            break
    return word


@lru_cache(maxsize=1 << 16)
def _key(word: str) -> str:
    """A lower-cased word as it is compared: without accents, stemmed (cached: the words of
    memories and questions repeat)."""
    return _stem(_fold(word))


def _terms(text: str, stopwords: frozenset[str]) -> set[str]:
    """The text's content words, stemmed, and the bigrams of its runs without spaces."""
    lower = text.casefold()
    found = {_key(w) for w in _WORD.findall(lower) if w not in stopwords}
    for run in NO_SPACES.findall(lower):
        found.discard(_key(run))
        found.update(run[i : i + 2] for i in range(len(run) - 1))
        if len(run) == 1:
            found.add(run)
    return found


@dataclass(frozen=True)
class Question:
    """What a query looks for in a memory's sentences: its terms, and the kinds of answer it
    asks for (``"time"``, ``"number"``, ``"name"``). Read once per search."""

    terms: frozenset[str]
    wants: frozenset[str]

    @classmethod
    def of(cls, query: str) -> Question:
        words = _words()
        lower = " ".join(_WORD.findall(query.casefold()))
        wants = {kind for kind, cues in words.asks.items() if cues.asked(lower)}
        return cls(frozenset(_terms(query, words.stopwords)), frozenset(wants))


def _answers(piece: str, wants: frozenset[str], time_words: frozenset[str]) -> float:
    """How well a sentence gives the kind of answer asked for: 1 for a date or a time of day,
    a number, or a name; 0.5 for a word of time alone."""
    score = 0.0
    if "time" in wants:
        if _CLOCK.search(piece):
            score = 1.0
        elif any(_fold(w) in time_words for w in _WORD.findall(piece.casefold())):
            score = 0.5
    if "number" in wants and _NUMBER.search(piece):
        score = max(score, 1.0)
    if "name" in wants and _names(piece):
        score = max(score, 1.0)
    return score


def _names(piece: str) -> bool:
    """Whether the sentence names someone or somewhere: a capitalised word after its first
    (and after its speaker's label)."""
    label = LABEL.match(piece)
    body = piece[label.end() :] if label is not None else piece
    words = _WORD.findall(body)
    return any(w[0].isupper() for w in words[1:])


def _scores(pieces: Sequence[Piece], question: Question) -> list[float]:
    words = _words()
    terms = [_terms(p.text, words.stopwords) & question.terms for p in pieces]
    n = len(pieces)
    df: dict[str, int] = {}
    for found in terms:
        for term in found:
            df[term] = df.get(term, 0) + 1
    # A term in every sentence tells them apart no better than one in none.
    idf = {t: math.log((n + 1) / (c + 0.5)) for t, c in df.items()}
    lexical = [sum(idf[t] for t in found) for found in terms]
    best_lexical = max(lexical, default=0.0)
    cue = 0.6 * max(best_lexical, 1.0)  # an answer of the asked kind weighs about a term
    scores = []
    for piece, lex in zip(pieces, lexical, strict=True):
        answer = _answers(piece.text, question.wants, words.time_words) if question.wants else 0
        scores.append(lex + (cue * answer if lex > 0 or answer else 0.0))
    for i in range(n - 1):  # the answer to a question that matches
        if pieces[i].text.endswith(("?", "？")) and lexical[i] > 0:
            scores[i + 1] += lexical[i]
    return scores


def passage(content: str, question: Question | str, *, max_chars: int = PASSAGE_CHARS) -> str:
    """The part of ``content`` that answers ``question``, at most about ``max_chars`` long."""
    if size(content) <= max_chars:
        return content
    asked = Question.of(question) if isinstance(question, str) else question
    parts = pieces(content)
    scores = _scores(parts, asked)
    best = max(scores, default=0.0)
    if best <= 0:
        chosen = _leading(parts, max_chars)
    else:
        chosen = _best(parts, scores, best, max_chars)
    return _render(parts, chosen)


def _leading(pieces: Sequence[Piece], max_chars: int) -> list[int]:
    chosen: list[int] = []
    used = 0
    for i, piece in enumerate(pieces):
        if chosen and used + size(piece.text) + 1 > max_chars:
            break
        chosen.append(i)
        used += size(piece.text) + 1
    return chosen


def _best(
    pieces: Sequence[Piece], scores: Sequence[float], best: float, max_chars: int
) -> list[int]:
    order = sorted(range(len(pieces)), key=lambda i: (-scores[i], -i))
    chosen: list[int] = []
    used = 0
    for i in order:
        if scores[i] < best / 3 or len(chosen) == MAX_PIECES:
            break
        cost = size(pieces[i].text) + len(GAP)
        if chosen and used + cost > max_chars:
            continue
        chosen.append(i)
        used += cost
    return sorted(chosen)


def _render(pieces: Sequence[Piece], chosen: Sequence[int]) -> str:
    """The chosen pieces in order, " … " at each gap, each under its speaker's label."""
    parts: list[str] = []
    previous = -2
    for i in chosen:
        piece = pieces[i]
        adjacent = i == previous + 1
        text = piece.text
        if piece.speaker and not piece.labelled and not adjacent:
            text = f"{piece.speaker}: {text}"
        if parts:
            parts.append(" " if adjacent else GAP)
        parts.append(text)
        previous = i
    return "".join(parts)


def with_passages(hits: Sequence[Hit], query: str) -> list[Hit]:
    """The hits, each with its passage for ``query`` (the query read once)."""
    question = Question.of(query)
    return [hit.changed(passage=passage(hit.content, question)) for hit in hits]
