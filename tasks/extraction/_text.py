"""Text helpers of the heuristic extractor: tokens, sentences, links, paths and names.

Pure functions over strings; nothing here knows about messages or scores.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container, Iterable, Mapping, Sequence

from tasks.extraction import _lexicon as lexicon

WORD_CAP = 1_000  # longer "words" are blobs (base64, minified code), never a link or path
TOPIC_CAP = 40  # an unbroken run longer than this is noise, not a topic


def _char_class(predicate: Callable[[str], bool]) -> str:
    """Body of a regex character class holding every BMP character meeting predicate."""
    parts: list[str] = []
    start = -1
    for code in range(0x10001):
        hit = code < 0x10000 and predicate(chr(code))
        if hit and start < 0:
            start = code
        elif not hit and start >= 0:
            first, last = re.escape(chr(start)), re.escape(chr(code - 1))
            parts.append(first if start == code - 1 else f"{first}-{last}")
            start = -1
    return "".join(parts)


# `re` has no \p{Lu}; an explicit class keeps capitalised names working beyond ASCII.
_UPPER = _char_class(str.isupper)
TOKEN = re.compile(r"\w+(?:'\w+)*")
# Sentence ends: ASCII marks need a following space ("3.5", "e.g.x" stay whole), CJK do not.
_SENTENCE_END = re.compile(r"[.!?](?=\s)|[。！？\n]")
_NORMALISE = re.compile(r"[\W_]+")
_ABBREVIATION_CAP = 8  # longer than any abbreviation of the lexicon, period excluded
_OPENERS = "([{\"'«“"
# No lookbehind here (it triples the cost); `names` checks the preceding character.
_CAPITALISED = re.compile(rf"[{_UPPER}][\w'-]*(?:[ \t]+[{_UPPER}][\w'-]*)*")
_EXTENSIONS = (
    r"\.(?:py|md|txt|json|ya?ml|toml|cfg|ini|js|ts|tsx|go|rs|java|rb|sh|sql|csv"
    r"|html|css|ipynb|lock|log)\b"
)
_HAS_EXTENSION = re.compile(_EXTENSIONS)
# Applied to one whitespace-separated word at a time, so no alternative scans the whole text.
_REFERENCE = re.compile(
    r"(?P<url>https?://\S+)"
    r"|(?P<mention>(?<![\w@/])@[^\W\d]\w*)"
    r"|(?P<tag>(?<![\w#&/])#[^\W\d]\w*)"
    r"|(?P<issue>(?<![\w#&])#\d+\b)"
    r"|(?P<path>(?<![\w./-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]*\w\.[A-Za-z0-9]{1,8}\b"
    r"|[\w-]+" + _EXTENSIONS + ")"
)
_EDGES = "()[]<>{}\"'`,;:!?“”«»「」"


def phrases(*alternatives: str) -> re.Pattern[str]:
    """Alternatives matched from a word start, each opening with a plain letter.

    A leading word-boundary assertion turns off re's first-character scan and triples the
    cost, so the word start is checked by a lookbehind just after the first letter instead.
    """
    return re.compile("|".join(rf"{a[0]}(?<=\b{a[0]}){a[1:]}" for a in alternatives))


def lowercase(text: str) -> str:
    """Lower-cased text with typographic apostrophes made plain, as the lexicons expect."""
    return text.lower().replace("\u2019", "'")


def clip(text: str, limit: int) -> str:
    """Text on one line, cut to at most limit characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def dedup_key(lower: str) -> str:
    """Dedup key: case, punctuation and spacing do not make a sentence new."""
    return _NORMALISE.sub(" ", lower).strip()


def _abbreviated(text: str, dot: int) -> bool:
    """Whether the period at ``dot`` closes an abbreviation rather than a sentence."""
    before = text[max(0, dot - _ABBREVIATION_CAP) : dot]
    words = before.split()
    if not words or before[-1].isspace():
        return False
    word = words[-1].lstrip(_OPENERS)
    if len(words[-1]) == len(before) == _ABBREVIATION_CAP:
        return False  # the word may go on further back: too long to be an abbreviation
    lower = word.lower()
    if lower in lexicon.ABBREVIATIONS or (len(word) == 1 and word.isupper()):
        return True
    after = text[dot + 1 : dot + 3].lstrip()
    return lower in lexicon.NUMERAL_ABBREVIATIONS and after[:1].isdigit()


def split_sentences(text: str) -> list[tuple[str, str]]:
    """(sentence, lower-cased sentence) pairs of text, in order, blanks dropped.

    A period after an abbreviation ("Dr.", "e.g.", "J.", "No. 5") does not end one.
    """
    pairs: list[tuple[str, str]] = []
    start = 0
    ends = [m.end() for m in _SENTENCE_END.finditer(text) if not _abbreviated(text, m.start())]
    # slicing at the matches is faster than re.split with a lookbehind
    for end in ends + [len(text)]:
        sentence = text[start:end].strip()
        if sentence:
            pairs.append((sentence, lowercase(sentence)))
        start = end
    return pairs


def is_question(sentence: str) -> bool:
    return sentence.endswith(("?", "？"))


def is_content(token: str) -> bool:
    return len(token) >= 3 and token not in lexicon.STOPWORDS and not token.isdigit()


def leans_back(tokens: Sequence[str]) -> bool:
    """Whether a sentence's tokens point back at something said before ("it", "them",
    "that one") with under three content words of their own: a fragment out of context."""
    anaphors = lexicon.ANAPHORS
    if anaphors.isdisjoint(tokens):
        return False
    return sum(1 for t in tokens if t not in anaphors and is_content(t)) < 3


def content_counts(counts: Mapping[str, int], exclude: Container[str]) -> dict[str, int]:
    """Counts of the words that may be topics (inlined test: this runs on every word)."""
    stop = lexicon.STOPWORDS
    return {
        w: n
        for w, n in counts.items()
        if 3 <= len(w) <= TOPIC_CAP and w not in stop and not w.isdigit() and w not in exclude
    }


def rank(counts: Mapping[str, int], limit: int) -> tuple[str, ...]:
    """The limit most frequent keys of counts."""
    # dicts keep first-seen order and sorted() is stable, so ties go to the earliest word
    return tuple(sorted(counts, key=lambda word: -counts[word])[:limit])


def references(text: str) -> list[tuple[str, str]]:
    """(kind, text) for URLs, file paths, @mentions, #tags and #123 refs, in text order."""
    # cheap checks first: most messages hold no reference at all
    if not ("/" in text or "@" in text or "#" in text or _HAS_EXTENSION.search(text)):
        return []
    found: list[tuple[str, str]] = []
    for word in text.split():
        if len(word) > WORD_CAP or not (
            "/" in word or "@" in word or "#" in word or "." in word[:-1]
        ):
            continue
        match = _REFERENCE.search(word.lstrip(_EDGES).rstrip(_EDGES + "."))
        if match is not None and match.lastgroup is not None:
            found.append((match.lastgroup, match.group().rstrip(_EDGES + ".")))
    return found


def at_sentence_start(text: str, start: int) -> bool:
    """Whether the word at ``start`` opens a sentence (an abbreviation's period does not
    end one)."""
    low = max(0, start - 4)
    before = text[low:start].rstrip(" \t\"'(«“")
    if before.endswith("."):
        return not _abbreviated(text, low + len(before) - 1)
    return not before or before[-1] in "!?。！？\n:"


def names(text: str) -> Iterable[str]:
    """Capitalised words and phrases that do not merely open a sentence."""
    for match in _CAPITALISED.finditer(text):
        start, phrase = match.start(), match.group()
        if start and (text[start - 1].isalnum() or text[start - 1] in "_@#/.'-"):
            continue  # inside a word, handle or path, e.g. "iPhone" or "src/Main"
        single = " " not in phrase and "\t" not in phrase
        if single and phrase.lower() in lexicon.NOT_ENTITIES:
            continue
        opens = at_sentence_start(text, start)
        if single and opens:
            continue
        if single and text.startswith(".", match.end()) and _abbreviated(text, match.end()):
            continue  # a title or initial ("Dr.", "J."), not a name of its own
        words = phrase.split()[1:] if opens else phrase.split()
        yield from _names_in(words)


def _names_in(words: list[str]) -> Iterable[str]:
    """The names in a run of capitalised words, split where "I", "I'd" or "I'm" stands."""
    run: list[str] = []
    for word in [*words, "I"]:  # the closing "I" ends the last run
        if word.lower() not in lexicon.FIRST_PERSON:
            run.append(word)
            continue
        while run and run[0].lower() in lexicon.NOT_ENTITIES:
            run = run[1:]
        name = " ".join(run)
        # the phrase holds only word characters, "'" and "-", so "'s" is the only possessive
        name = name[:-2] if name.endswith("'s") else name
        if len(name) >= 2 and name.lower() not in lexicon.STOPWORDS:
            yield name
        run = []
